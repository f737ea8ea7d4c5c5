"""Notebook 03's keys: a batch's score, worked out, for the grader's own cases.

The feedback check (`checks/nb03.py`) carries the rows its visible batches expect as data; the
answer that works them out lives here, with the instructor, never in the release. The grader adds
batches drawn from `SEED`: an answer that looks the visible ones up fails them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentlab.course.checks import Case, nb03
from agentlab.course.checks.nb03 import _answer, _judge_score, _score_batches
from agentlab.course.hidden import grading
from agentlab.world import make_tasks

SEED = 3  # change it to draw other batches for a class


def scores(tasks: list) -> dict[str, dict[str, float]]:
    """Per family and for "all": the right answers, the tasks, and the mean calls per task."""
    rows: dict[str, list] = {}
    for task in tasks:
        answer, calls, _ = _answer(task)
        for key in (task.family, "all"):
            rows.setdefault(key, []).append((task.check(answer), calls))
    return {
        key: {
            "right": sum(r for r, _ in rows[key]),
            "tasks": len(rows[key]),
            "calls": sum(c for _, c in rows[key]) / len(rows[key]),
        }
        for key in rows
    }


@grading("03.score")
def more_batches(score_batch: Any) -> Iterator[Case]:
    for k, size in enumerate((9, 23)):
        tasks = make_tasks(size, seed=SEED + k)
        yield from _judge_score(score_batch, f"a drawn batch of {size}", tasks, scores(tasks))


REFERENCES = {"03.score": scores}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return tuple((what, tasks, nb03._SCORES[what]) for what, tasks in _score_batches())
