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


# --- 07.react-tokens: growth that is not a whole number of tokens ---------------------------------


def _run(*inputs: int):
    from agentlab.llm.base import Completion, Usage
    from agentlab.react import ReactRun, Turn

    usage = (Usage(input_tokens=n, output_tokens=20) for n in inputs)
    turns = [
        Turn(i + 1, "", (), Completion("", "sim-large", "simulated", u), 1.0) for i, u in enumerate(usage)
    ]
    return ReactRun("a question", "an answer", "done", turns)


@grading("07.react-tokens")
def half_a_token(predict: Any) -> Iterator[Case]:
    from agentlab.course.checks import attempt

    # B = 100, g = (101 - 100) / 2 = 0.5: 100 calls read 100 x 100 + 0.5 x 100 x 99 / 2 = 12,475 tokens
    got, error = attempt(predict, _run(100, 100, 101), 100)
    right = not error and isinstance(got, int | float) and abs(got - 12_475) <= 0.5
    yield Case("a run that grew half a token a call, predicting 100 calls", right, error or f"got {got!r}")


# --- 07.router-share: a pair of models the exercise never shows ------------------------------------
# 1,000 questions: both right 500, only the strong 200, only the weak 100, neither 200. The weak model
# is right on 60%, the strong on 70%, one of them on 80%. A coin reaches t at (t - 0.6) / 0.1 of the
# queries on the strong model; a perfect router at t - 0.6 (each "only strong" query adds 1/1,000).
_COUNTS = (500, 200, 100, 200)
_SHARES = (
    (0.65, "coin", 0.5),
    (0.65, "perfect", 0.05),
    (0.8, "perfect", 0.2),
    (0.7, "coin", 1.0),
    (0.75, "coin", None),
    (0.85, "perfect", None),
    (0.55, "coin", 0.0),
    (0.55, "perfect", 0.0),
)


@grading("07.router-share")
def router_share(strong_share: Any) -> Iterator[Case]:
    from agentlab.course.checks import attempt
    from agentlab.routing import PairCounts

    counts = PairCounts(*_COUNTS)
    for target, router, want in _SHARES:
        got, error = attempt(strong_share, counts, target, router)
        right = not error and (
            got is None if want is None else isinstance(got, int | float) and abs(got - want) < 1e-9
        )
        yield Case(
            f"a pair of models right 60% and 70%, a {router} router, to {target:.0%}",
            right,
            error or f"got {got!r}",
        )
