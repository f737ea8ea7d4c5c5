"""Notebook 06's keys: the best cut, worked out, for the grader's own cases.

The feedback check (`checks/nb06.py`) carries the expected values of its visible cases as data;
the answer that works them out lives here, with the instructor, never in the release. The grader
adds cases on figures drawn from `SEED`: an answer that looks the visible figures up fails them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

from agentlab import experiments
from agentlab.course.checks import Case, nb06
from agentlab.course.checks.nb06 import _judge_best_cut, _judge_retries
from agentlab.course.hidden import grading

SEED = 6  # change it to draw other figures for a class


def cut_success(fail: float, handoff: float, pieces: int) -> float:
    """The toy model of notebook 06, section 8: `pieces` pieces, each failing with fail / pieces,
    and a handoff between each two, each losing context with probability `handoff`."""
    return (1 - fail / pieces) ** pieces * (1 - handoff) ** (pieces - 1)


def best_cut(fail: float, handoff: float, most: int) -> tuple[int, float]:
    """The fewest pieces among those with the highest success, and that success."""
    best = max(range(1, most + 1), key=lambda n: (cut_success(fail, handoff, n), -n))
    return best, cut_success(fail, handoff, best)


@grading("06.best-cut")
def more_cuts(cut: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    for _ in range(8):
        fail, handoff, most = (
            rng.choice([0.2, 0.5, 0.8]),
            rng.choice([0.0, 0.005, 0.03, 0.2]),
            rng.randint(1, 25),
        )
        what = f"fail {fail:g}, handoffs lose {handoff:g}, at most {most} pieces"
        yield _judge_best_cut(cut, what, fail, handoff, most, best_cut(fail, handoff, most))


def retries_exact(p: float, n: int, attempts: int, correlation: float) -> float:
    """The exact chance that every one of `n` steps succeeds within `attempts` tries, when each task
    draws its own rate r (Beta, mean p) and every try of that task succeeds at r.

    It is the mean of (1 - (1 - r)**attempts)**n. Expanded by the binomial theorem it needs only the
    moments of 1 - r, which is Beta too (mean 1 - p, same correlation): the kit's
    `experiments.correlated_chain_success(1 - p, m, correlation)` is the mean of (1 - r)**m.
    """

    def fail_moment(m: int) -> float:
        return 1.0 if m == 0 else experiments.correlated_chain_success(1 - p, m, correlation)

    return sum(math.comb(n, k) * (-1) ** k * fail_moment(attempts * k) for k in range(n + 1))


@grading("06.retries-correlated")
def more_chains(simulate: Any) -> Iterator[Case]:
    for p, n, attempts, correlation, seed in ((0.9, 4, 2, 0.2, SEED), (0.6, 3, 4, 0.7, SEED + 1)):
        what = f"p {p:g}, {n} steps, {attempts} tries a step, correlation {correlation:g}"
        exact = retries_exact(p, n, attempts, correlation)
        yield _judge_retries(simulate, what, p, n, attempts, correlation, 50_000, seed, exact)


def exact_of_case(p: float, n: int, attempts: int, correlation: float, trials: int, seed: int) -> float:
    return retries_exact(p, n, attempts, correlation)


REFERENCES = {"06.best-cut": best_cut, "06.retries-correlated": exact_of_case}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return {"06.best-cut": nb06._BEST_CUT_CASES, "06.retries-correlated": nb06._RETRY_CASES}[exercise]
