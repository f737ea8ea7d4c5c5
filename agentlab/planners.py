"""Planners turn a task into a `Plan`.

The stub planner below has no model: it recognises a multi-part task by its
wording and returns a fixed decomposition, and gives anything else to a single
agent. It is the shape a real planner has (task in, validated plan out) with
the judgement taken out, so the orchestration around it can be studied alone.

`LLMPlanner` puts the judgement back: a model writes the plan as JSON held to
`Plan.json_schema(roles)`. The kit then checks what a schema cannot (a real DAG,
`$id` references that are declared dependencies, tools the role may use) and
re-asks with the error when a check fails, a bounded number of times. The planner
is the one place that judges a plan and re-asks, on every backend: a backend only
returns what the model said, so a planner fails the same way on the simulator, on
Claude and on a local server (`PlanningFailed`, holding every call paid for).

`FallbackPlanner` keeps one planner from being the run's single point of failure: when the
first planner fails (its model down, no valid plan), the next one is asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentlab.agents import Agent
from agentlab.budget import planning_refused
from agentlab.llm.base import LLM, Completion, ModelError, PaidError, paid, redact
from agentlab.plan import Plan, PlanError, Step, plan_json, references
from agentlab.prompts import failure_report, report_instruction, task_request, team_line
from agentlab.valid import number

MULTI_PART = re.compile(r"\b(report|brief|overview|review)\b", re.IGNORECASE)


def stub_planner(task: str) -> Plan:
    """Decompose a report-like task into four roles; give any other task to one writer."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    if not MULTI_PART.search(task):
        return Plan([Step("s1", "writer", task.strip())])
    return Plan(
        [
            Step("s1", "researcher", "Collect three facts the report needs."),
            Step("s2", "coder", "Sketch the core loop in one line of code."),
            Step("s3", "critic", "Name the biggest risk in the facts.", depends_on=("s1",)),
            Step(
                "s4",
                "writer",
                "Combine the facts, the sketch and the risk into the report.",
                depends_on=("s1", "s2", "s3"),
            ),
        ]
    )


# --- a model writes the plan -------------------------------------------------------------


class PlanningFailed(PlanError, PaidError):
    """The model gave no valid plan within the planner's attempts, or a model call failed for
    good (a `ModelError`, then its `__cause__`). `rejected` holds each (reply, problem) pair and
    `calls` every model call paid for, so their cost is not lost."""

    def __init__(self, message: str, rejected: list[tuple[str, str]], calls: list[Completion]):
        PaidError.__init__(self, redact(message), calls)  # a reply may hold what a model saw
        self.rejected = rejected


def plan_schema(team: Mapping[str, Agent], tool_steps: bool = True) -> dict[str, Any]:
    """The plan's JSON Schema for this team; without `tool_steps` a step cannot name a tool,
    so every step goes to an executor agent."""
    schema = Plan.json_schema(team)
    step = schema["properties"]["steps"]["items"]
    if not tool_steps:
        step["properties"] = {k: v for k, v in step["properties"].items() if k not in ("tool", "args")}
        return schema
    # A free-form `args` object cannot be expressed in strict structured output (the API would
    # close it to `{}`), so spell out each tool's own argument object, or none for agent steps.
    specs = {t.name: t.spec for agent in team.values() for t in agent.tools}
    no_args = {"type": "object", "properties": {}, "additionalProperties": False}
    step["properties"]["args"] = {
        "description": "the direct tool call's arguments: one tool's argument object, or {} for none",
        "anyOf": [no_args] + [dict(spec.input_schema) for spec in specs.values()],
    }
    return schema


def planner_prompt(team: Mapping[str, Agent], tool_steps: bool = True) -> str:
    """The planner's system prompt: its job, the team (roles, what they do, their tools), the rules."""
    lines = [
        "You are the planner of a team of agents. Break the user's task into steps; each step is done "
        "by one role of the team. Do not answer the task yourself.",
        "",
        "Team:",
    ]
    for role, agent in team.items():
        lines.append(team_line(role, agent.description, [t.name for t in agent.tools]))
    specs = {t.name: t.spec for agent in team.values() for t in agent.tools}
    if tool_steps and specs:
        lines += ["", 'Tools a step may call directly, by setting "tool" and "args" (no agent is asked):']
        for spec in specs.values():
            args = ", ".join(spec.input_schema.get("properties", {}))
            lines.append(f"- {spec.name}({args}): {spec.description}")
    lines += [
        "",
        "Rules:",
        "- Give each step a unique id (s1, s2, ...), a role from the team, one focused instruction, and "
        "in depends_on every step whose output it uses.",
        "- Refer to an earlier step's output as $id (e.g. $s1) in an instruction"
        + (" or a tool argument" if tool_steps else "")
        + "; the executor receives the value.",
        "- Steps that do not need each other's outputs must not depend on each other: they run in parallel.",
        "- Write each instruction as the question the step answers (e.g. 'What is the area of $s1?'), "
        "for a direct tool step too, so its result can be checked against it.",
    ]
    if tool_steps:
        lines.append(
            "- A step that is exactly one tool call should be a direct tool step: it costs no model call."
        )
    lines += [
        f"- End with one step that reports the answer, e.g. '{report_instruction('<the task>', '$s3')}' "
        "Its output is the team's answer.",
        "",
        "Reply with the plan as JSON matching the schema, and nothing else.",
    ]
    return "\n".join(lines)


def check_plan(plan: Plan, team: Mapping[str, Agent]) -> None:
    """What the schema cannot check: every `$id` is a declared dependency, and every direct
    tool step names a tool its role may use, with the arguments that tool takes."""
    ids = set(plan.ids)
    for step in plan:
        for ref in sorted(references(step.instruction) | references(dict(step.args))):
            if ref not in ids:
                raise PlanError(f"step {step.id!r} refers to ${ref}, which is not a step of this plan")
            if ref not in step.depends_on:
                raise PlanError(f"step {step.id!r} uses ${ref} but does not list {ref!r} in depends_on")
        if step.tool is None:
            continue
        tools = {t.name: t for t in team[step.role].tools}
        if step.tool not in tools:
            mine = ", ".join(tools) or "none"
            raise PlanError(
                f"step {step.id!r} calls {step.tool!r}, which the {step.role} may not use (its tools: {mine})"
            )
        schema = tools[step.tool].spec.input_schema
        missing = [k for k in schema.get("required", ()) if k not in step.args]
        unknown = [k for k in step.args if k not in schema.get("properties", {})]
        if missing or unknown:
            raise PlanError(
                f"step {step.id!r}: {step.tool} takes ({', '.join(schema.get('properties', {}))}); "
                f"missing {missing}, unexpected {unknown}"
            )


QUOTED = 8_000  # at most this many characters of a rejected reply go back to the model (a long
# plan is about 2,000; a reply cut off at the planner's max_tokens=2048 about 8,000)


@dataclass
class LLMPlanner:
    """Turns a task into a validated `Plan` with a model, re-asking on a bad plan.

    Call it with a task, like any planner. The plan it returns carries the model calls that
    wrote it (`plan.calls`; `orchestrate` counts them under the role "planner"). A failure, on
    any backend, is a `PlanningFailed` that carries them too: no valid plan within
    `max_attempts`, or a model call that failed for good. After each call `calls` and
    `rejected` (the replies it turned down, with the reason) are there to look at.
    """

    llm: LLM
    team: Mapping[str, Agent]
    model: str | None = None
    tool_steps: bool = True
    max_attempts: int = 3
    max_tokens: int = 2048
    calls: list[Completion] = field(default_factory=list, init=False)
    rejected: list[tuple[str, str]] = field(default_factory=list, init=False)

    def __post_init__(self):
        number(self.max_attempts, "LLMPlanner's max_attempts", minimum=1, whole=True)
        number(self.max_tokens, "LLMPlanner's max_tokens", minimum=1, whole=True)

    def __call__(self, task: str) -> Plan:
        if not isinstance(task, str) or not task.strip():
            raise ValueError("the task must be a non-empty string")
        return self._ask(task_request(task))

    def replan(self, task: str, plan: Plan, outputs: Mapping[str, str], failure: str) -> Plan:
        """A new plan after `plan` failed: the model sees what finished and what went wrong."""
        return self._ask(task_request(task, failure_report(plan, outputs, failure)))

    def _ask(self, request: str) -> Plan:
        self.calls, self.rejected = [], []
        system, schema = planner_prompt(self.team, self.tool_steps), plan_schema(self.team, self.tool_steps)
        messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
        ask = {"system": system, "schema": schema, "model": self.model, "max_tokens": self.max_tokens}
        for attempt in range(1, self.max_attempts + 1):
            if refused := planning_refused(self.calls):  # the run's budget covers re-asks too
                raise PlanningFailed(f"{refused}; no more planning calls were made (attempt {attempt} of "
                                     f"{self.max_attempts})", list(self.rejected), list(self.calls))
            try:
                reply = self.llm.complete(messages=messages, **ask)
            except ModelError as error:  # the calls already paid for go up with the failure
                self.calls += error.calls
                raise PlanningFailed(
                    f"attempt {attempt} of {self.max_attempts}: the model call failed: ModelError: {error}",
                    list(self.rejected),
                    list(self.calls),
                ) from error
            self.calls.append(reply)
            try:
                return self._read(reply)
            except PlanError as problem:
                self.rejected.append((reply.text, str(problem)))
                rejection = f"That plan was rejected: {problem}\nReply with a corrected plan."
                messages += [
                    {"role": "assistant", "content": quoted(reply.text)},
                    {"role": "user", "content": rejection},
                ]
        last = self.rejected[-1][1]
        raise PlanningFailed(
            f"no valid plan after {self.max_attempts} attempt(s); the last problem: {last}",
            list(self.rejected),
            list(self.calls),
        )

    def _read(self, reply: Completion) -> Plan:
        """The plan in a reply, checked: a PlanError says what is wrong with it."""
        if reply.stop_reason == "max_tokens":
            raise PlanError(f"the plan was cut off at max_tokens={self.max_tokens}")
        plan = Plan.from_dict(plan_json(reply.text), self.team, calls=self.calls)  # it carries what it cost
        check_plan(plan, self.team)
        return plan


@dataclass
class FallbackPlanner:
    """Plans with the first of `planners` that gives a plan, in order: a second planner (another
    model, another backend, the stub) keeps the run going when the first one's model is down.
    The plan carries every call paid for on the way, the failed planners' too; when all of them
    fail, the `PlanningFailed` names each one's failure. It helps only if they do not fail together."""

    planners: Sequence[Callable[[str], Plan]]

    def __post_init__(self):
        self.planners = tuple(self.planners)
        if not self.planners or not all(callable(p) for p in self.planners):
            raise ValueError("FallbackPlanner takes a list of planners: at least one, each a planner(task)")

    def __call__(self, task: str) -> Plan:
        return self._first(self.planners, lambda planner: planner(task))

    def replan(self, task: str, plan: Plan, outputs: Mapping[str, str], failure: str) -> Plan:
        """A new plan from the first planner that can replan and does."""
        able = [p for p in self.planners if callable(getattr(p, "replan", None))]
        return self._first(able, lambda planner: planner.replan(task, plan, outputs, failure))

    def _first(self, planners: Sequence[Any], ask: Callable[[Any], Plan]) -> Plan:
        spent: list[Completion] = []
        failures = [] if planners else ["none of the planners has a replan method"]
        for i, planner in enumerate(planners, 1):
            try:
                plan = ask(planner)
            except Exception as error:  # noqa: BLE001 - any planner's failure hands over to the next
                spent += paid(error)
                failures.append(f"planner {i} of {len(planners)}: {planning_failure(error)}")
                continue
            if spent and isinstance(plan, Plan):  # what the failed planners cost travels with the plan
                plan = Plan(plan.steps, plan.roles, calls=[*spent, *plan.calls])
            return plan
        raise PlanningFailed("every planner failed: " + "; ".join(failures), [], spent)


def quoted(reply: str) -> str:
    """A rejected reply as it is sent back to the model: whole up to `QUOTED` characters, else
    its start and a note saying it was cut (a runaway reply must not be paid for twice)."""
    if not reply:
        return "(no text)"
    if len(reply) <= QUOTED:
        return reply
    note = f"[cut: your reply was {len(reply):,} characters; only the first {QUOTED:,} are quoted]"
    return f"{reply[:QUOTED]}\n{note}"


def planning_failure(error: Exception) -> str:
    """How a planner's failure reads in a run's reason: a PlanError (PlanningFailed is one)
    speaks for itself; any other error is named."""
    return str(error) if isinstance(error, PlanError) else f"{type(error).__name__}: {error}"
