"""Notebook 05's keys: the best shape for a budget, worked out, for the grader's own cases.

The feedback check (`checks/nb05.py`) carries the expected values of its visible cases as data;
the answer that works them out lives here, with the instructor, never in the release. The grader
adds cases of budgets the visible ones do not try: an answer that looks them up fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentlab.course.checks import Case, nb05
from agentlab.course.checks.nb05 import _SHAPES, _judge_shape, _measured
from agentlab.course.hidden import grading

MORE_SHAPE_CASES = ((8, 7), (8, 12), (8, 2), (8, 40), (5, 9), (5, 3))  # (width, budget)


def best_shape(width: int, budget: int) -> tuple[int, int] | None:
    """The (depth, branching) whose largest plan is smallest within `budget` calls; ties go to
    fewer calls, then the shallower, then the narrower shape."""
    within = [(_measured(width, d, b)[1], _measured(width, d, b)[0], d, b) for d, b in _SHAPES]
    within = [shape for shape in within if shape[1] <= budget]
    return min(within)[2:] if within else None


@grading("05.shape")
def more_shapes(choose: Any) -> Iterator[Case]:
    for width, budget in MORE_SHAPE_CASES:
        yield _judge_shape(choose, width, budget, best_shape(width, budget))


REFERENCES = {"05.shape": best_shape}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return {"05.shape": tuple((f"{w} within {b}", w, b, want) for w, b, want in nb05._SHAPE_CASES)}[exercise]
