"""Recovery: what a run does when a step fails, and where it stops trying.

Three policies, listed in the order a run should try them (`run_plan(recovery=[...])`):

- `Retry(times)`: try the same step again, up to `times` more attempts. The retry
  carries a note of what went wrong, as a retry prompt would, so a model gets a
  fresh look; a direct tool call with a wrong argument fails again, which is the
  lesson: retrying fixes flukes, not mistakes.
- `Reroute(to)`: give the step to another role (`to` maps a role to its stand-in),
  once. The stand-in gets the step as an instruction, without the original tool
  call, and works out for itself how to do it.
- `Replan(planner, max_replans)`: ask the planner for a new plan for the work that
  is left. It sees the task, the plan, every finished step's output and the
  failure report; finished steps are kept, never redone.

Retry and reroute act on one step at once. Replanning waits until the plan can go
no further (everything that does not need the failed step has run), so the planner
sees all there is to see, and so the outcome does not depend on the worker count.
Every policy has a bound, and when a failure outlasts them all, the run stops and
says which bounds were reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentlab.monitor import Failure
from agentlab.plan import Plan, Step
from agentlab.world.tasks import REFERENCE


@dataclass(frozen=True)
class Retry:
    """Try a failed step again, at most `times` more times; `note` tells the agent what failed."""

    times: int = 2
    note: bool = True

    def __post_init__(self):
        _whole("Retry", "times", self.times)

    def next_step(self, step: Step, failure: Failure, used: Mapping[str, int]) -> Step | None:
        """The step to try next, or None once the retries are used up."""
        if used.get("retry", 0) >= self.times:
            return None
        if not self.note or step.tool is not None:  # a tool call ignores notes: it is run as it stands
            return step
        said = REFERENCE.sub(r"\1", failure.message)  # no $id in the note: it is not a reference
        n = used.get("retry", 0) + 1
        base = step.instruction.split("\n(Retry ", 1)[0]
        return replace(
            step, instruction=f"{base}\n(Retry {n} of {self.times}: the last attempt failed: {said})"
        )

    def bound(self, used: Mapping[str, int]) -> str:
        return f"Retry(times={self.times}): {used.get('retry', 0)} of {self.times} retries used"

    def describe(self, used: Mapping[str, int], step: Step) -> str:
        return f"retry {used.get('retry', 0)} of {self.times}"


@dataclass(frozen=True)
class Reroute:
    """Give a failed step to another role, once: `to` maps a role to the role that stands in."""

    to: Mapping[str, str] = field(default_factory=dict)

    def next_step(self, step: Step, failure: Failure, used: Mapping[str, int]) -> Step | None:
        if used.get("reroute", 0) >= 1 or step.role not in self.to:
            return None
        return replace(step, role=self.to[step.role], tool=None, args={})

    def bound(self, used: Mapping[str, int]) -> str:
        if used.get("reroute", 0):
            return "Reroute: already rerouted once"
        return "Reroute: no stand-in for this role"

    def describe(self, used: Mapping[str, int], step: Step) -> str:
        return f"rerouted to {step.role}, as an instruction (no direct tool call)"


@dataclass(frozen=True)
class Replan:
    """Ask `planner` (anything with `replan(task, plan, outputs, failure)`, like `LLMPlanner`)
    for a new plan for the remaining work, at most `max_replans` times per run. Given to
    `orchestrate` without a planner, it uses the planner that wrote the first plan."""

    planner: Any = None
    max_replans: int = 2

    def __post_init__(self):
        _whole("Replan", "max_replans", self.max_replans)
        if self.planner is not None and not callable(getattr(self.planner, "replan", None)):
            raise TypeError(
                "Replan needs a planner with a replan(task, plan, outputs, failure) method, "
                f"like LLMPlanner; got {type(self.planner).__name__}"
            )

    def bound(self, replans: int) -> str:
        return f"Replan(max_replans={self.max_replans}): {replans} of {self.max_replans} replans used"


def _whole(policy: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{policy}: {name} must be a whole number >= 0, got {value!r}")


def check_policies(policies: Sequence[Any], roles: Iterable[str]) -> Replan | None:
    """Refuse anything that is not a policy, a reroute to a role nobody plays, and more than
    one Replan; return the Replan, if any."""
    roles = set(roles)
    for p in policies:
        if not isinstance(p, Retry | Reroute | Replan):
            raise TypeError(f"a recovery policy is a Retry, Reroute or Replan, got {type(p).__name__}")
        if isinstance(p, Reroute):
            unknown = sorted(set(p.to.values()) - roles)
            if unknown:
                raise ValueError(f"Reroute to role(s) {unknown}, which have no agent; roles: {sorted(roles)}")
    replans = [p for p in policies if isinstance(p, Replan)]
    if len(replans) > 1:
        raise ValueError("give at most one Replan policy (its max_replans bounds the whole run)")
    return replans[0] if replans else None


def next_attempt(
    policies: Sequence[Any], step: Step, failure: Failure, used: Mapping[str, int]
) -> tuple[Retry | Reroute, Step] | None:
    """The first step-level policy (in the order given) with something left to try, and the
    step to try. None when every one has reached its bound."""
    for policy in policies:
        if isinstance(policy, Retry | Reroute):
            again = policy.next_step(step, failure, used)
            if again is not None:
                return policy, again
    return None


def bounds_reached(policies: Sequence[Any], used: Mapping[str, int], replans: int) -> str:
    """Which bound stopped each policy, for the trace and the run's reason."""
    parts = [p.bound(replans) if isinstance(p, Replan) else p.bound(used) for p in policies]
    return "; ".join(parts)


# --- stitching a new plan onto the old one ----------------------------------------------------


def renamed(plan: Plan, prefix: str) -> list[Step]:
    """The plan's steps with every id (and every reference to one) prefixed, so a replanned
    's1' becomes 'r1_s1' and cannot be mistaken for the first plan's 's1'."""
    new = {step_id: prefix + step_id for step_id in plan.ids}

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            return REFERENCE.sub(lambda m: "$" + new.get(m.group(1), m.group(1)), value)
        if isinstance(value, Mapping):
            return {k: rename(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [rename(v) for v in value]
        return value

    return [
        replace(
            s,
            id=new[s.id],
            instruction=rename(s.instruction),
            depends_on=tuple(new[d] for d in s.depends_on),
            args=rename(dict(s.args)),
        )
        for s in plan
    ]


def remaining(plan: Plan, done: set[str]) -> Plan | None:
    """The steps of `plan` not yet done, as a plan of their own (dependencies on done steps
    dropped: their outputs are already there). None when nothing is left."""
    left = [
        replace(s, depends_on=tuple(d for d in s.depends_on if d not in done))
        for s in plan
        if s.id not in done
    ]
    return Plan(left) if left else None
