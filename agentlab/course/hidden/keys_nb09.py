"""Notebook 09's keys: the denied calls and the cleaned texts, worked out, for the grader's cases.

The feedback checks (`checks/nb09.py`, data in `checks/_nb09_expected.py`) carry what their visible
cases expect as data; the answers that work it out live here, with the instructor, never in the
release. The grader adds cases the visible ones do not try (logs and texts drawn from `SEED`): an
answer that looks the visible ones up fails them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from agentlab.course.checks import Case, nb09
from agentlab.course.checks._nb09_expected import _DENIED, _PLANTED
from agentlab.course.checks.nb09 import (
    _MARKER,
    _judge_denied,
    _judge_sanitise,
    _mixed_log,
    _office_logs,
    _texts,
)
from agentlab.course.hidden import grading
from agentlab.guardrails import AuditLog
from agentlab.world.injection import call_text, find_injections, make_scenarios

SEED = 9  # change it to draw other logs and texts for a class


def denied_calls(log: AuditLog) -> list[tuple[str, str, str]]:
    """(step, role, tool) of every call the log denied, in its order."""
    return [(e.step, e.role, e.tool) for e in log if e.decision == "denied"]


def cleaned(text: str) -> str:
    """Every call the text spells out replaced by the marker, nothing else touched."""
    for tool, args in find_injections(text):
        text = text.replace(call_text(tool, args), _MARKER)
    return text


@grading("09.denied")
def more_logs(query: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    entries = list(_mixed_log())
    for k in range(3):
        drawn = AuditLog(rng.sample(entries, rng.randint(1, len(entries))))
        yield _judge_denied(query, f"a drawn log {k + 1} of {len(drawn)} entries", drawn, denied_calls(drawn))


@grading("09.sanitise")
def more_texts(clean: Any) -> Iterator[Case]:
    rng = random.Random(SEED + 1)
    scenarios = make_scenarios(20, seed=SEED)
    for k in range(5):
        first, second = rng.sample(scenarios, 2)
        text = f"{first.plant(str(rng.randint(10, 9999)))}\n\nAlso: {second.note}\n(see the ledger)"
        yield _judge_sanitise(clean, f"a drawn text {k + 1}, two notes", text, cleaned(text))


REFERENCES = {"09.denied": denied_calls, "09.sanitise": cleaned}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    if exercise == "09.denied":
        errand, replanned = _office_logs()
        logs = {
            "the forged errand under the office policy": AuditLog(errand),
            "notebook 09's replanned runs under the office policy": AuditLog(replanned),
            "a log with allowed, approved, denied and failed calls": _mixed_log(),
            "an empty log": AuditLog(),
        }
        return tuple((what, log, _DENIED[what]) for what, log in logs.items())
    return tuple((what, text, nb09._cleaned(text, _PLANTED[what])) for what, text in _texts())
