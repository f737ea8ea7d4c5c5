"""Executors: agents that each do one kind of step well.

An `Agent` is a role plus a function `act(step, context) -> output`, where
`context` maps the id of each dependency to its output. Here the four roles of
notebook 01 are stubs with canned behaviour and no model behind them: the point
is the control flow, which stays the same when a real model fills each box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agentlab.plan import Step

Context = Mapping[str, str]


@dataclass(frozen=True)
class Agent:
    """A role-specialised executor. `seconds` is its step time on the virtual clock."""

    role: str
    act: Callable[[Step, Context], str]
    seconds: float = 1.0
    description: str = ""

    def __call__(self, step: Step, context: Context) -> str:
        return self.act(step, context)


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
