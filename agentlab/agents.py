"""Executors: agents that each do one kind of step well.

An `Agent` is a role plus a function `act(step, context) -> output`, where
`context` maps the id of each dependency to its output. The output is plain
text, or a `Work` when the agent also wants to report how long the step took
on the virtual clock and what it cost (model-backed agents do). Here the four roles of
notebook 01 are stubs with canned behaviour and no model behind them: the point
is the control flow, which stays the same when a real model fills each box.

From notebook 03 a model fills them: `model_agent` builds an executor from a role's
system prompt, its tools and an LLM. It runs a bounded tool-use loop for a step
given as an instruction, and calls the tool itself, with no model, for a step given
as a direct tool call (`step.tool`, `step.args`), resolving `$id` references to
earlier outputs LLMCompiler-style. `world_team` is such a team for the task world.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentlab.llm.base import (
    LLM,
    Completion,
    ModelError,
    PaidError,
    Tool,
    assistant_message,
    tool_results_message,
)
from agentlab.plan import Context, Step, resolve
from agentlab.prompts import step_request
from agentlab.valid import number
from agentlab.world import FUNCTIONS, TOOLS


@dataclass(frozen=True)
class Work:
    """An agent's output with its cost: virtual `seconds` taken (None: use the
    agent's default) and the model `calls` it made (`llm.Completion`s), which the
    run rolls up into usage per role and per model."""

    output: str
    seconds: float | None = None
    calls: tuple[Any, ...] = ()

    def __post_init__(self):  # a NaN would stop the virtual clock, a negative one turn it back
        if self.seconds is not None:
            number(self.seconds, "a Work's seconds", minimum=0, must_be="a number >= 0 (or None)")


@dataclass(frozen=True)
class ToolFunction:
    """A tool an agent may use: the spec a model sees, the Python function that does the
    work, and how long one call takes on the virtual clock."""

    spec: Tool
    fn: Callable[..., str]
    seconds: float = 0.1

    def __post_init__(self):
        number(self.seconds, f"the {getattr(self.spec, 'name', '?')} tool's seconds", minimum=0)

    @property
    def name(self) -> str:
        return self.spec.name

    def __call__(self, args: Mapping[str, Any]) -> str:
        """Call the function with `args`, after checking them against the spec's schema."""
        if not isinstance(args, Mapping):
            raise ValueError(f"{self.name} takes an object of arguments, got {type(args).__name__}")
        schema = self.spec.input_schema
        missing = [k for k in schema.get("required", ()) if k not in args]
        unknown = [k for k in args if k not in schema.get("properties", {})]
        if missing or unknown:
            expected = ", ".join(schema.get("properties", {}))
            problems = [f"missing {missing}" if missing else "", f"unexpected {unknown}" if unknown else ""]
            raise ValueError(f"{self.name}({expected}): {'; '.join(p for p in problems if p)}")
        return str(self.fn(**args))


@dataclass(frozen=True)
class Agent:
    """A role-specialised executor. `seconds` is its step time on the virtual clock when it
    does not report one; `tools` are what it may call (the planner reads them)."""

    role: str
    act: Callable[[Step, Context], str | Work]
    seconds: float = 1.0
    description: str = ""
    tools: tuple[ToolFunction, ...] = ()

    def __post_init__(self):
        number(self.seconds, f"the {self.role} agent's seconds", minimum=0)

    def __call__(self, step: Step, context: Context) -> Work:
        """Do the step; always returns a Work (plain text is wrapped)."""
        result = self.act(step, context)
        if isinstance(result, str):
            result = Work(result)
        if not isinstance(result, Work) or not isinstance(result.output, str):
            raise TypeError(f"the {self.role} agent returned {type(result).__name__}, not text or Work")
        seconds = self.seconds if result.seconds is None else result.seconds
        return Work(result.output, seconds, tuple(result.calls))


# --- the four stub specialists --------------------------------------------------


def stub_researcher(step: Step, context: Context) -> str:
    """Returns fixed notes; a real researcher would search and read sources."""
    return (
        "notes: a planner turns one goal into small steps; "
        "each executor sees only its own step; "
        "a chain of steps is only as reliable as every link in it"
    )


def stub_coder(step: Step, context: Context) -> str:
    """Returns a fixed sketch; a real coder would write and run code."""
    return "sketch: for step in plan.topological_order(): outputs[step.id] = team[step.role](step)"


def stub_critic(step: Step, context: Context) -> str:
    """Looks for a weakness in what it was given; here it just counts and flags one."""
    read = f"read {len(context)} input(s)" if context else "read nothing"
    return f"concern ({read}): if the plan is wrong, every executor faithfully does the wrong thing"


def stub_writer(step: Step, context: Context) -> str:
    """Assembles its inputs into the deliverable, or answers alone when it has none."""
    if not context:
        return f"answer (one agent, no decomposition): {step.instruction}"
    parts = [f"  [{dep}] {output}" for dep, output in context.items()]
    return "REPORT\n" + "\n".join(parts)


STUB_TEAM: dict[str, Agent] = {
    "researcher": Agent("researcher", stub_researcher, seconds=3.0, description="gathers facts"),
    "coder": Agent("coder", stub_coder, seconds=2.0, description="writes code"),
    "critic": Agent("critic", stub_critic, seconds=1.0, description="finds flaws"),
    "writer": Agent("writer", stub_writer, seconds=2.0, description="assembles the answer"),
}


# --- model-backed executors --------------------------------------------------------------


class StepFailed(PaidError, RuntimeError):
    """An agent could not finish its step. It carries the model `calls` made before it gave
    up and the virtual `seconds` they took, so a failed step still counts in the totals."""


def step_prompt(step: Step, context: Context) -> str:
    """What an executor model is asked: the instruction with `$id`s filled in, then its inputs."""
    return step_request(resolve(step.instruction, context, step.id), context)


def run_tool_step(step: Step, context: Context, tools: Sequence[ToolFunction], role: str = "") -> Work:
    """A direct tool step: call `step.tool` with `step.args` (references resolved); no model."""
    by_name = {t.name: t for t in tools}
    if step.tool not in by_name:
        mine = ", ".join(by_name) or "none"
        raise StepFailed(f"the {role or 'agent'} may not call {step.tool!r} (its tools: {mine})", (), 0.0)
    tool = by_name[step.tool]
    return Work(tool(resolve(dict(step.args), context, step.id)), tool.seconds)


def tool_loop(
    llm: LLM,
    system: str,
    prompt: str,
    tools: Sequence[ToolFunction] = (),
    *,
    model: str | None = None,
    max_turns: int = 6,
    max_tokens: int = 1024,
) -> Work:
    """Ask the model, run the tools it calls, hand back the results, and repeat until it
    answers without a tool call; at most `max_turns` model calls. Tool errors go back to the
    model (marked as errors) so it can correct itself; the loop never retries on its own.
    A model call that fails for good (`ModelError`) ends the step as a `StepFailed` that keeps
    the calls made before it."""
    _check_limits(max_turns, max_tokens)
    by_name = {t.name: t for t in tools}
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    calls: list[Completion] = []
    seconds = 0.0
    for turn in range(1, max_turns + 1):
        try:
            reply = llm.complete(
                system=system,
                messages=messages,
                tools=[t.spec for t in tools],
                model=model,
                max_tokens=max_tokens,
            )
        except ModelError as e:  # keep the calls already made, and those the error paid for
            spent = calls + list(e.calls)
            seconds += sum(c.latency for c in e.calls)
            raise StepFailed(f"turn {turn}'s model call failed: ModelError: {e}", spent, seconds) from e
        calls.append(reply)
        seconds += reply.latency
        if reply.stop_reason == "max_tokens":
            raise StepFailed(
                f"stopped by max_tokens={max_tokens}: turn {turn}'s reply was cut off", calls, seconds
            )
        if not reply.tool_calls:
            return Work(reply.text.strip(), round(seconds, 6), tuple(calls))
        messages.append(assistant_message(reply))
        results, errors = {}, []
        for call in reply.tool_calls:
            try:
                if call.name not in by_name:
                    raise ValueError(f"there is no tool {call.name!r}; tools: {', '.join(by_name) or 'none'}")
                results[call.id] = by_name[call.name](call.args)
                seconds += by_name[call.name].seconds
            except Exception as e:  # the model reads the error and decides what to do
                results[call.id] = f"{type(e).__name__}: {e}"
                errors.append(call.id)
        messages.append(tool_results_message(results, errors))
    raise StepFailed(
        f"stopped by max_turns={max_turns}: no final answer after {max_turns} model turns", calls, seconds
    )


def _check_limits(max_turns: Any, max_tokens: Any) -> None:
    number(max_turns, "max_turns", minimum=1, whole=True)
    number(max_tokens, "max_tokens", minimum=1, whole=True)


def model_agent(
    role: str,
    system: str,
    llm: LLM,
    tools: Sequence[ToolFunction] = (),
    *,
    model: str | None = None,
    max_turns: int = 6,
    max_tokens: int = 1024,
    description: str = "",
) -> Agent:
    """An executor backed by a model: direct tool steps run the tool, every other step runs
    `tool_loop` with the role's system prompt and tools."""
    _check_limits(max_turns, max_tokens)
    tools = tuple(tools)

    def act(step: Step, context: Context) -> Work:
        if step.tool is not None:
            return run_tool_step(step, context, tools, role)
        options = {"model": model, "max_turns": max_turns, "max_tokens": max_tokens}
        return tool_loop(llm, system, step_prompt(step, context), tools, **options)

    return Agent(role, act, description=description, tools=tools)


# --- a team for the task world ---------------------------------------------------------------

_ANSWER_ALONE = "Reply with the answer alone: a name or a number, not a sentence."

WORLD_ROLES = {
    "researcher": (
        "looks facts up in the records",
        ("lookup", "search"),
        "You are the researcher of a team answering questions about the Skerrow Isles, an archipelago "
        "known only through its records. Find facts with your tools; never answer from memory. "
        + _ANSWER_ALONE,
    ),
    "analyst": (
        "does arithmetic and compares numbers",
        ("calculate",),
        "You are the analyst of a team answering questions about the Skerrow Isles. You work with "
        "numbers you are given: use the calculate tool for arithmetic, and compare values carefully. "
        + _ANSWER_ALONE,
    ),
    "writer": (
        "reports the team's final answer",
        (),
        "You are the writer of a team answering questions about the Skerrow Isles. You report the "
        "team's final answer from the result you are given. " + _ANSWER_ALONE,
    ),
}


def world_team(
    llm: LLM,
    *,
    model: str | None = None,
    models: Mapping[str, str] | None = None,
    max_turns: int = 6,
    tool_seconds: float = 0.1,
) -> dict[str, Agent]:
    """Researcher, analyst and writer for the Skerrow Isles, each a `model_agent` on `llm`.
    `model` is every role's model; `models` overrides it per role (e.g. {"writer": "sim-small"});
    `tool_seconds` is what one tool call takes on the virtual clock (an API call takes longer)."""
    models = dict(models or {})
    team = {}
    for role, (description, tool_names, system) in WORLD_ROLES.items():
        tools = [ToolFunction(TOOLS[name], FUNCTIONS[name], tool_seconds) for name in tool_names]
        team[role] = model_agent(
            role,
            system,
            llm,
            tools,
            model=models.get(role, model),
            max_turns=max_turns,
            description=description,
        )
    return team
