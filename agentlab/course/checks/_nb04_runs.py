"""The agents and runs behind notebook 04's hidden cases: agents that follow a script of errors,
FAILED answers and wrong values (and stop a loop that has no bound), the world team counting each
step it runs, the learner's installments paid on a fresh checkpoint beside a run never interrupted,
and runs through one outbox that loses the first reply to each message, one as if in another
process. The cases are in `nb04.py`.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from agentlab.agents import Agent, world_team
from agentlab.course import sandbox
from agentlab.course.checks import attempt
from agentlab.llm import SimulatedLLM
from agentlab.plan import Step
from agentlab.planners import LLMPlanner
from agentlab.run import Run, orchestrate, run_plan

WRONG = "9999"  # what a scripted agent answers for "wrong": the records' placeholder, not a value


class _Runaway(BaseException):
    """Raised by a scripted agent asked far too often: the loop under test has no bound.
    (A BaseException, so that the learner's own `except Exception` cannot swallow it.)"""


def scripted(role: str, script: tuple[str, ...], log: list) -> Agent:
    """An agent whose n-th attempt does script[n] (the last entry repeats): "ok", "raise",
    "FAILED" (the sentinel) or "wrong" (an answer the check `_no_9999` in nb04 rejects)."""

    def act(step: Step, context: Mapping[str, str]) -> str:
        n = sum(1 for entry in log if entry[0] == role)
        log.append((role, step, dict(context)))
        if len(log) > 30:
            raise _Runaway("more than 30 attempts at one step: does the loop have a bound?")
        what = script[min(n, len(script) - 1)]
        if what == "raise":
            raise ConnectionError("the records service did not answer")
        return {"FAILED": "FAILED: cannot find it", "wrong": WRONG}.get(what, f"the {role}'s answer")

    return Agent(role, act)


def attempt_bounded(recover: Callable, *args: Any) -> tuple[Any, str]:
    """`attempt(recover, *args)`, with a runaway loop reported as a failed case."""
    try:
        return attempt(recover, *args)
    except _Runaway as runaway:
        return None, str(runaway)


def _noting_team(llm: SimulatedLLM, asked: Counter, broken: str | None = None) -> dict[str, Agent]:
    """The world team on `llm`; every step an agent runs is counted in `asked`; the `broken` role
    raises on every step."""

    def noting(agent: Agent) -> Agent:
        def act(step: Step, context: Mapping[str, str]) -> Any:
            asked[step.id] += 1
            if agent.role == broken:
                raise ConnectionError(f"the {broken} is down")
            return agent(step, context)

        return replace(agent, act=act)

    return {role: noting(agent) for role, agent in world_team(llm).items()}


def pay_installments(
    pay: Callable, task: str, per: int, max_installments: int = 20, broken: str | None = None
) -> tuple[Any, str, Counter]:
    """The learner's `pay` on a fresh checkpoint, `per` calls an installment; (runs, error, steps run)."""
    llm, asked = SimulatedLLM(seed=0), Counter()
    team = _noting_team(llm, asked, broken)
    planner = LLMPlanner(llm, team, tool_steps=False)
    with tempfile.TemporaryDirectory() as folder:
        sandbox.give(Path(folder))  # the learner's `pay` writes its checkpoint here, in the sandbox
        runs, error = attempt(pay, task, planner, team, Path(folder) / "run.json", per, max_installments)
    return runs, error, asked


def straight_run(task: str) -> Run:
    """The reference: the same task on the same model and team, run in one go, never interrupted."""
    llm = SimulatedLLM(seed=0)
    team = world_team(llm)
    return orchestrate(task, LLMPlanner(llm, team, tool_steps=False), team)


class Sending(NamedTuple):
    """One run of a notice plan through the shared outbox: its task, plan, recipients, recovery,
    and whether it runs as if in another Python process (a run resumed after a crash)."""

    task: str
    plan: Any
    to: tuple[str, ...]
    recovery: Any
    new_process: bool = False


def sends(message_key: Callable, runs: list[Sending]) -> tuple[Any, str]:
    """Run each of `runs` with one shared outbox, every first reply lost; return (the messages
    that went out, "") or (None, what went wrong)."""
    from agentlab.effects import Outbox, notice_team

    outbox = Outbox()

    def go():
        for task, plan, to, recovery, new_process in runs:
            key = in_another_process(message_key) if new_process else message_key
            run = run_plan(plan, notice_team(outbox, task, key, to), task, recovery=[recovery])
            if run.status != "done":
                return f"a run ended {run.status!r}: {run.reason}"
        return None

    problem, error = attempt(go)
    if error or problem:
        return None, error or problem
    return [(m["to"], m["text"]) for m in outbox.sent], ""


def in_another_process(key: Callable) -> Callable:
    """`key`, called as if in another Python process, where `hash()` of the same text gives another
    number: here by `wire.in_another_process`; for a learner's function the grader holds a handle
    to, there, in the sandbox, where it runs (its `hash` is the one that must change)."""
    from agentlab.course.wire import in_another_process as salted

    def keyed(*args: Any) -> Any:
        there = getattr(type(key), "in_another_process", None)
        return there(key, *args) if there else salted(key, *args)

    return keyed
