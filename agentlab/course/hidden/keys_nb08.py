"""Notebook 08's keys: the best threshold and the lost requests, worked out, for the grader's cases.

The feedback checks (`checks/nb08.py`) carry the expected values of their visible cases as data;
the answers that work them out live here, with the instructor, never in the release. The grader
adds cases the visible ones do not try (tables and logs drawn from `SEED`): an answer that looks
the visible ones up fails them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from agentlab import world
from agentlab.compare import Comparison, row
from agentlab.course.checks import Case, nb08
from agentlab.course.checks._nb08_cases import _log, _sized, audit_cases, threshold_cases
from agentlab.course.checks.nb08 import _judge_audit, _judge_threshold
from agentlab.course.hidden import grading
from agentlab.handoffs import HandoffRun, Transfer
from agentlab.routing import split

SEED = 8  # change it to draw other tables and logs for a class


def best_threshold(comparison: Comparison) -> int:
    """The most accurate threshold for "the team from t steps, one agent below"; then the cheapest;
    then the smallest. Every t from 1 (the team for everything) to one past the largest task."""
    largest = max(world.steps_needed(t.question) for t in comparison.tasks)
    rows = {t: row("", split(comparison, t)) for t in range(1, largest + 2)}
    return min(rows, key=lambda t: (-rows[t].accuracy, rows[t].mean_cost, t))


def lost(run: HandoffRun) -> list[Transfer]:
    """The transfers after which the receiving agent cannot see the user's request word for word in
    any message it starts from (a string content, or a text block's text)."""

    def texts(message) -> list[str]:
        content = message.get("content", "")
        if isinstance(content, str):
            return [content]
        return [b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]

    return [t for t in run.transfers if not any(run.task in text for m in t.sent for text in texts(m))]


@grading("08.threshold")
def more_tables(choose: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    for k in range(4):
        sizes = sorted(rng.sample(range(1, 9), rng.randint(2, 5)))
        tasks = [(n, rng.randint(0, 1), rng.randint(0, 1), 100, rng.choice([80, 300])) for n in sizes]
        comparison = _sized(*tasks)
        what = f"a drawn table {k + 1}: sizes {sizes}"
        yield _judge_threshold(choose, what, comparison, best_threshold(comparison))


@grading("08.handoff-audit")
def more_logs(lost_requests: Any) -> Iterator[Case]:
    rng = random.Random(SEED + 1)
    request = "How many people live on Varra and Skerrow together?"
    kinds = (
        {"role": "user", "content": request},
        {"role": "user", "content": f"Forwarded: {request}"},
        {"role": "user", "content": [{"type": "text", "text": request}]},
        {"role": "user", "content": [{"type": "tool_result", "content": request}]},
        {"role": "user", "content": request[:30]},
        {"role": "assistant", "content": "Looking it up."},
    )
    for k in range(4):
        transfers = [
            ("triage", f"agent{i}", "Take it from here.", rng.sample(kinds, rng.randint(1, 3)))
            for i in range(rng.randint(1, 4))
        ]
        run = _log(request, *transfers)
        yield _judge_audit(lost_requests, f"a drawn log {k + 1}", run, lost(run))


REFERENCES = {"08.threshold": best_threshold, "08.handoff-audit": lost}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    if exercise == "08.threshold":
        return tuple((what, c, nb08._BEST[what]) for what, c in threshold_cases())
    return tuple((what, r, [r.transfers[i] for i in nb08._LOST[what]]) for what, r in audit_cases())
