"""The recording stand-ins notebook 01's hidden cases hand the learner's code: executors that note
each step they are asked (role, step id, inputs) and answer with a traceable text or a scripted
FAILED; a runner that notices when the learner's loop changed the team or stand-in map it was
lent; and a manager, sub-planner, team and synthesizer that count every call by kind. The cases in
`nb01.py` judge what the learner's code did from these records, not from what it printed.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from agentlab.course.checks import attempt
from agentlab.plan import Plan, Step


def quietly(function: Callable, *args: Any) -> tuple[Any, str]:
    """`attempt(function, *args)` with its prints swallowed: the cases report what happened."""
    with contextlib.redirect_stdout(io.StringIO()):
        return attempt(function, *args)


class Runs:
    """Runs the learner's loop on recording teams, and notes every run after which the team or the
    stand-in map it was handed had changed (dicts the caller owns, and may use again)."""

    def __init__(self, run: Callable):
        self.run, self.changed = run, []

    def __call__(self, plan: Plan, stand_in: Mapping[str, str], **answers) -> tuple:
        log: list = []
        team, stand_in = recording_team(log, **answers), dict(stand_in)
        before = (dict(team), dict(stand_in))
        outputs, error = quietly(self.run, plan, team, stand_in)
        if (team, stand_in) != before:
            now = {
                role: getattr(act, "role", "?")
                for role, act in team.items()
                if before[0].get(role) is not act
            }
            what = f"team changed: {now}" if team != before[0] else f"stand-in map changed: {stand_in}"
            self.changed.append(f"after a run where the {'/'.join(sorted(answers))} failed, the {what}")
        return outputs, error, log


def asked(log: list, step_id: str) -> list[str]:
    return [role for role, sid, _ in log if sid == step_id]


def recording_team(log: list, **answers: Mapping[str, str]) -> dict[str, Callable]:
    """Five recording executors, one per role; `answers[role]` scripts that role's fixed answers."""
    roles = ("researcher", "coder", "critic", "writer", "generalist")
    return {role: _executor(role, log, answers.get(role)) for role in roles}


def _executor(role: str, log: list, answers: Mapping[str, str] | None = None) -> Callable:
    """A stub executor that records (role, step id, context) and answers with a traceable text;
    `answers` maps an instruction to a fixed answer (a FAILED sentinel, say)."""
    answers = dict(answers or {})

    def act(step: Step, context: Mapping[str, str]) -> str:
        log.append((role, step.id, dict(context)))
        if step.instruction in answers:
            return answers[step.instruction]
        if context:
            return f"{role}({step.id}) from " + "; ".join(f"{k}={v}" for k, v in context.items())
        return f"{role}({step.id})"

    act.role = role  # type: ignore[attr-defined]  # so a changed team can be shown
    return act


class Recorder:
    """A manager, a sub-planner, executors and a synthesizer for a given shape of chunks, each
    counting its calls. Every sub-plan uses the ids s1, s2, ... so chunks share step ids; with
    `summary_first`, each sub-plan is written with its summing-up step first."""

    def __init__(self, sizes: list[int], summary_first: bool = False):
        self.sizes, self.summary_first, self.calls = sizes, summary_first, Counter()
        self.given: list[tuple[str, str, dict]] = []  # (chunk, step id, context) per executor call
        self.synthesized: list[list[str]] = []

    def manager(self, task: str) -> list[str]:
        self.calls["manager"] += 1
        return [f"chunk {i + 1}" for i in range(len(self.sizes))]

    def sub_planner(self, chunk: str) -> Plan:
        self.calls["sub-planner"] += 1
        n = self.sizes[int(chunk.split()[-1]) - 1]
        steps = [
            Step(f"s{i}", "worker", f"{chunk}: part {i}.", depends_on=[f"s{i - 1}"] if i > 1 else [])
            for i in range(1, n)
        ]
        summary = Step(f"s{n}", "lead", f"{chunk}: sum up.", depends_on=[f"s{i}" for i in range(1, n)])
        return Plan([summary, *steps] if self.summary_first else [*steps, summary])

    def team(self) -> dict[str, Callable]:
        def act(step: Step, context: Mapping[str, str]) -> str:
            self.calls["executor"] += 1
            chunk = step.instruction.split(":")[0]
            self.given.append((chunk, step.id, dict(context)))
            return f"{chunk}/{step.id}"

        return {"worker": act, "lead": act}

    def synthesize(self, task: str, results: list[str]) -> str:
        self.calls["synthesizer"] += 1
        self.synthesized.append(list(results))
        return "TOP REPORT: " + " + ".join(results)

    def expected(self) -> dict[str, int]:
        k = len(self.sizes)
        return {"manager": 1, "sub-planner": k, "executor": sum(self.sizes), "synthesizer": 1}
