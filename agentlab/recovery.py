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
from typing import Any, ClassVar

from agentlab.llm.base import ModelError, paid, redact
from agentlab.monitor import Failure
from agentlab.plan import REFERENCE, Plan, PlanError, Step, renamed
from agentlab.planners import planning_failure
from agentlab.trace import Run
from agentlab.valid import number


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

    event: ClassVar[str] = "retried"  # what the trace calls it

    def use(self, used: dict[str, int], step: Step) -> str:
        """Count one retry of the step; what the trace says about it."""
        used["retry"] = used.get("retry", 0) + 1
        return self.describe(used, step)

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

    event: ClassVar[str] = "rerouted"

    def use(self, used: dict[str, int], step: Step) -> str:
        """Count the reroute; what the trace says about it."""
        used["reroute"] = used.get("reroute", 0) + 1
        return self.describe(used, step)

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
    number(value, f"{policy}: {name}", minimum=0, whole=True)


def check_policies(policies: Sequence[Any], roles: Iterable[str], task: str = "x") -> Replan | None:
    """Refuse anything that is not a policy, a reroute to a role nobody plays, more than one
    Replan, and a Replan with no planner or no task to replan; return the Replan, if any."""
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
    if replans and replans[0].planner is None:
        raise ValueError("Replan needs a planner here (orchestrate fills in its own)")
    if replans and not task.strip():
        raise ValueError("replanning needs the task: pass task= to run_plan")
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


# --- the replan step ---------------------------------------------------------------------------


def replan(run: Run, policy: Replan, failures: Sequence[tuple[Step, Failure]], team: Mapping, clock) -> bool:
    """Ask `policy.planner` for a plan for the rest of the work, after `failures`.

    Every finished step is kept, never redone; the new plan's steps are renamed ("r1_s1") so
    they cannot be mistaken for the old ones, and the steps they replace are marked skipped.
    The planner's calls are counted under "replan1", "replan2", ...; its seconds pass on the
    run's `clock`. Returns whether the run can go on: a planner that fails ends the run."""
    run.replans += 1
    key, first = f"replan{run.replans}", failures[0][0]
    report = "; ".join(f"{step.id} ({step.role}) - {failure.message}" for step, failure in failures)
    try:
        new = policy.planner.replan(run.task, run.plan, dict(run.outputs), report)
        if not isinstance(new, Plan):
            raise PlanError(f"the planner's replan returned {type(new).__name__}, not a Plan")
        steps = renamed(new, _prefix(run))
        plan = Plan([s for s in run.plan if s.id in run.outputs] + steps, roles=team)
    except (PlanError, ModelError) as error:  # PlanningFailed is a PlanError
        run.calls += [(key, "planner", c) for c in paid(error)]
        said = redact(planning_failure(error))
        run.record(clock.now, "stopped", first, f"replanning failed: {said}", role="planner")
        run.status, run.reason = "failed", f"replanning failed: {said} (after: {report})"
        return False
    run.calls += [(key, "planner", c) for c in new.calls]
    now = clock.spend(sum(c.latency for c in new.calls))  # the planner's time is the run's time
    kept = len(plan) - len(steps)
    detail = f"kept {kept} finished step(s), {len(steps)} new: {', '.join(s.id for s in steps)}"
    detail = f"replan {run.replans} of {policy.max_replans}: {detail}"
    run.record(now, "replanned", first, detail, role="planner")
    failed = {step.id for step, _ in failures}
    for s in run.plan:
        if s.id not in run.outputs and s.id not in failed:
            run.record(now, "skipped", s, f"not run: replaced by replan {run.replans}")
    for s in steps:
        run.record(now, "planned", s, s.instruction)
    run.plan = plan
    run.plans.append(plan)
    return True


def _prefix(run: Run) -> str:
    """ "r1_" for the first replan's steps, unless some step already uses that prefix."""
    prefix = f"r{run.replans}_"
    taken = set(run.attempts) | set(run.plan.ids)
    while any(step_id.startswith(prefix) for step_id in taken):
        prefix = "r" + prefix
    return prefix
