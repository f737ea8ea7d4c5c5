"""What `run_plan` accepts: every setting checked before anything runs, each named in its message.

A setting that is wrong should stop a run at once, in one line a learner can act on, not as a
traceback from deep inside the loop halfway through. Numbers are bounded above as well as below:
a `timeout` of 1e12 s is no limit a run can keep (the clock and the thread waits cannot hold
it), so the longest is `MAX_TIMEOUT`, a day.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentlab.agents import Agent
from agentlab.budget import Budget
from agentlab.faults import Fault
from agentlab.valid import MAX_TIMEOUT, number, shown

CLOCKS = ("virtual", "real")


def check_task(task: Any) -> None:
    """A task is a non-empty string: refused before a planner is asked (its failures are the run's)."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError(f"the task must be a non-empty string, got {shown(task)}")


def check_team(team: Any) -> None:
    """A team is a mapping from role to `Agent`; a TypeError that says so for anything else."""
    if not isinstance(team, Mapping):
        raise TypeError(
            f"team must be a mapping from role to Agent, e.g. {{'writer': Agent('writer', write)}}, "
            f"got {shown(team)}"
        )
    for role, agent in team.items():
        if not isinstance(agent, Agent):
            kind = "a function" if callable(agent) else type(agent).__name__
            raise TypeError(
                f"team[{role!r}] must be an Agent, got {kind}: wrap a function as Agent({role!r}, fn)"
            )


def check_settings(team: Any, clock: str, timeout: Any, budget: Any, faults: Sequence[Any],
                   checkpoint: Any, resume: bool) -> None:
    """Refuse bad settings for `run_plan` (recovery policies are `recovery.check_policies`')."""
    check_team(team)
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    if timeout is not None:
        number(timeout, "timeout", above=0, maximum=MAX_TIMEOUT,
               must_be=f"a number of seconds in (0, {MAX_TIMEOUT:g}] (or None for no limit)")
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
    for fault in faults:
        if not isinstance(fault, Fault):
            raise TypeError(f"faults must be Fault objects, got {type(fault).__name__}")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint file to resume from: pass checkpoint=")
