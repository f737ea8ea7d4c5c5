"""Notebook 10's keys: the formulas the learners write, for the grader's own cases.

The feedback checks (`checks/nb10.py`) carry the expected values of their visible cases as data;
the formulas that work them out live here, with the instructor, never in the release. The grader
adds cases on figures drawn from `SEED`: an answer that looks the visible figures up fails them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

from agentlab.course.checks import Case, nb10
from agentlab.course.checks.nb10 import _judge_break_even, _judge_speedup
from agentlab.course.hidden import grading

SEED = 10  # change it to draw other figures for a class


def speedup(tasks: int, workers: int, seconds: float, overhead: float) -> float:
    """N·t / (⌈N/W⌉·(t + o)): every task pays its overhead, in rounds of W."""
    return tasks * seconds / (math.ceil(tasks / workers) * (seconds + overhead))


def break_even(tasks: int, workers: int, overhead: float) -> float | None:
    """⌈N/W⌉·o / (N − ⌈N/W⌉), or None when the rounds are as many as the tasks (no cluster wins)."""
    rounds = math.ceil(tasks / workers)
    return None if tasks <= rounds else rounds * overhead / (tasks - rounds)


def _figures(rng: random.Random) -> tuple[int, int, float, float]:
    tasks, workers = rng.choice([1, 2, 5, 11, 37, 250]), rng.choice([1, 3, 4, 16])
    return tasks, workers, rng.choice([0.001, 0.4, 3.0]), rng.choice([0.0, 0.01, 0.3])


@grading("10.speedup")
def more_speedups(predict: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    for _ in range(8):
        tasks, workers, seconds, overhead = _figures(rng)
        what = f"{tasks} tasks of {seconds:g} s on {workers} workers, {overhead:g} s overhead each"
        yield _judge_speedup(
            predict, what, tasks, workers, seconds, overhead, speedup(tasks, workers, seconds, overhead)
        )


@grading("10.break-even")
def more_break_evens(find: Any) -> Iterator[Case]:
    rng = random.Random(SEED + 1)
    for _ in range(8):
        tasks, workers, _, overhead = _figures(rng)
        overhead = overhead or 0.02
        what = f"{tasks} tasks on {workers} workers, {overhead:g} s overhead"
        yield _judge_break_even(find, what, tasks, workers, overhead, break_even(tasks, workers, overhead))


REFERENCES = {"10.speedup": speedup, "10.break-even": break_even}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return {"10.speedup": nb10._SPEEDUP_CASES, "10.break-even": nb10._BREAK_EVEN_CASES}[exercise]
