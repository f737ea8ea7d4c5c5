"""Notebook 07's key: which topology fits each task (marked as a whole, never "k of n"); and
07.pick's grading cases: paired comparisons and margins drawn from seeds the learner never sees."""

import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.checks.nb07 import _judge_pick, _paired
from agentlab.course.hidden import grading

# C, a long chain known in advance, is planned once: plan-execute, or a planner with workers, which
# runs the same plan one step at a time (the exercise's text says either is right).
SHAPES = {"A": {"react"}, "B": {"planner+workers"}, "C": {"plan-execute", "planner+workers"}, "D": {"react"}}


@grading("07.shapes")
def shapes(choice: Any) -> Iterator[Case]:
    choice = choice if isinstance(choice, Mapping) else {}
    yield Case("the four tasks", all(choice.get(k) in fits for k, fits in SHAPES.items()), "not all right")


PICK_SEEDS = (701, 1409, 2111, 2819, 3517)


@grading("07.pick")
def picks(choose: Callable) -> Iterator[Case]:
    """Two topologies on 40 to 1,000 tasks, the cheap one a few points either side of the costly
    one, and a margin of 3, 5 or 10 points: each seed's answer may be either topology or "run more"."""
    for seed in PICK_SEEDS:
        rng = random.Random(seed)
        tasks = rng.choice((40, 120, 400, 1_000))
        both, only_costly, only_cheap = (
            round(tasks * rng.uniform(*span)) for span in ((0.5, 0.8), (0, 0.1), (0, 0.08))
        )
        margin = rng.choice((0.03, 0.05, 0.10))
        neither = tasks - both - only_costly - only_cheap
        comparison = _paired(both, only_costly, only_cheap, neither)
        yield _judge_pick(choose, f"the grader's comparison #{seed}, margin {margin:.0%}", comparison, margin)
