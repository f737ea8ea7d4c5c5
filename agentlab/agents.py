"""Executors: agents that each do one kind of step well.

An `Agent` is a role plus a function `act(step, context) -> output`, where
`context` maps the id of each dependency to its output. The output is plain
text, or a `Work` when the agent also wants to report how long the step took
on the virtual clock and what it cost (model-backed agents do). Here the four roles of
notebook 01 are stubs with canned behaviour and no model behind them: the point
is the control flow, which stays the same when a real model fills each box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentlab.plan import Step

Context = Mapping[str, str]


@dataclass(frozen=True)
class Work:
    """An agent's output with its cost: virtual `seconds` taken (None: use the
    agent's default) and the model `calls` it made (`llm.Completion`s), which the
    run rolls up into usage per role and per model."""

    output: str
    seconds: float | None = None
    calls: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Agent:
    """A role-specialised executor. `seconds` is its step time on the virtual clock."""

    role: str
    act: Callable[[Step, Context], str | Work]
    seconds: float = 1.0
    description: str = ""

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
