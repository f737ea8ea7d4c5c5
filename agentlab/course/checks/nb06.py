"""Checks for the exercises of notebook 06, error propagation.

- `06.crossover`: the longest chain of steps at p that still beats one agent at q;
- `06.best-cut`: how many pieces to cut a task into when every handoff can lose context;
- `06.retries-correlated`: a Monte Carlo estimate of a chain with retries when tasks differ in
  difficulty, which must agree with the exact answer within its interval.

Expected values come from the kit's own functions in `agentlab.experiments`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from agentlab import experiments
from agentlab.course.checks import Case, attempt, exercise
from agentlab.experiments import Estimate

# --- 06.crossover ------------------------------------------------------------------------------


_TIME_LIMIT = 2.0  # seconds for one case: far more than a right answer needs


def _bounded(function: Callable, *args: Any) -> tuple[Any, str]:
    """`attempt(function, *args)` that gives up after _TIME_LIMIT seconds."""
    return attempt(function, *args, limit=_TIME_LIMIT)


_CROSSOVER_CASES = (
    ("(a) p = 0.9 against q = 0.6", 0.9, 0.6),
    ("(b) p = 0.97 against q = 0.6", 0.97, 0.6),
    ("p = 0.99 against q = 0.6", 0.99, 0.6),
    ("p = 0.95 against q = 0.3", 0.95, 0.3),
    ("a tie is not a win: p = 0.5 against q = 0.25 = 0.5²", 0.5, 0.25),
    ("one agent as good as one step: p = q = 0.8", 0.8, 0.8),
    ("one agent better than one step: p = 0.6, q = 0.9", 0.6, 0.9),
    ("steps that never fail: p = 1 against q = 0.6", 1.0, 0.6),
    ("an agent that never succeeds: p = 0.5 against q = 0", 0.5, 0.0),
    ("perfect both ways: p = q = 1", 1.0, 1.0),
)


@exercise(
    "06.crossover",
    "The longest chain that still beats one agent",
    hint="look at the edges before the middle: a tie (is it a win?), one agent at least as good as a single "
    "step, and a chain whose chance never falls to q, for which a loop waiting for it would never stop",
)
def crossover(longest: Callable[[float, float], int | float]) -> Iterator[Case]:
    for what, p, q in _CROSSOVER_CASES:
        want = experiments.longest_winning_chain(p, q)
        got, error = _bounded(longest, p, q)
        yield Case(what, not error and got == want, error or f"got {got!r}")


# --- 06.best-cut -------------------------------------------------------------------------------


_BEST_CUT_CASES = (  # (what, fail, handoff, most, the pieces and chance expected)
    ("notebook 06's curve: handoffs lose 1%", 0.4, 0.01, 15, (3, 0.6380088)),
    ("a harder task, handoffs lose 2%", 0.6, 0.02, 10, (3, 0.4917248000000001)),
    ("free handoffs", 0.4, 0.0, 15, (15, 0.666690015268442)),
    ("handoffs lose 10%", 0.4, 0.1, 15, (1, 0.6)),
    ("an agent that never fails, and free handoffs: every cut ties", 0.0, 0.0, 8, (1, 1.0)),
    ("only one piece allowed", 0.4, 0.01, 1, (1, 0.6)),
)


@exercise(
    "06.best-cut",
    "How finely to cut a task",
    hint="look at the numbers of pieces you try (both ends of the range), at how many handoffs lie "
    "between n pieces, at what you do when two cuts tie, and at what you return",
)
def best_cut(cut: Callable[[float, float, int], tuple[int, float]]) -> Iterator[Case]:
    for what, *case in _BEST_CUT_CASES:
        yield _judge_best_cut(cut, what, *case)


def _judge_best_cut(cut: Callable, what: str, fail: float, handoff: float, most: int, want: tuple) -> Case:
    """One case of 06.best-cut: `cut` on these figures against (pieces, chance) `want`."""
    want_n, want_p = want
    got, error = attempt(cut, fail, handoff, most)
    right = (
        not error
        and isinstance(got, tuple)
        and len(got) == 2
        and got[0] == want_n
        and math.isclose(got[1], want_p, rel_tol=1e-9)
    )
    return Case(what, right, error or f"got {got!r}")


# --- 06.retries-correlated ------------------------------------------------------------------------


_Z_CHECK = 4.0  # a wide interval: a right simulation lands outside it about once in 16,000 tries

# (what, p, n, attempts, correlation, trials, seed, the exact chance the estimate must agree with)
_RETRY_CASES = (
    ("independent failures, 2 tries a step", 0.8, 5, 2, 0.0, 100_000, 1, 0.8153726976000001),
    ("correlated failures (0.3), 2 tries a step", 0.8, 5, 2, 0.3, 100_000, 2, 0.7602801497847946),
    ("correlated failures, one try: the chain of section 5", 0.8, 5, 1, 0.3, 100_000, 3, 0.5189135546558705),
    (
        "a task goes all right or all wrong (correlation 1): retries buy nothing",
        0.8,
        5,
        3,
        1.0,
        50_000,
        4,
        0.8,
    ),
    ("longer chain, 3 tries, correlation 0.5", 0.7, 6, 3, 0.5, 100_000, 5, 0.7067999140415091),
)


@exercise(
    "06.retries-correlated",
    "Retries when tasks differ in difficulty, by simulation",
    hint="look at how many rates you draw and which tries share one (every try of every step of one "
    "task), at what makes a step right and what makes a chain right, at the seed, and at what you return",
)
def retries_correlated(simulate: Callable[..., Estimate]) -> Iterator[Case]:
    for what, *case in _RETRY_CASES:
        yield _judge_retries(simulate, what, *case)
    # Three runs, not two: a generator that ignores the seed repeats a count by chance about once in
    # 200 pairs here (this check once passed such an answer), twice in a row about once in 40,000.
    runs = [attempt(simulate, 0.8, 5, 2, 0.3, 20_000, 7) for _ in range(3)]
    error = next((e for _, e in runs if e), "")
    counts = [got for got, _ in runs]
    same = not error and counts[0] == counts[1] == counts[2]
    yield Case("the same seed gives the same count", same, error or " then ".join(map(str, counts)))


def _judge_retries(
    simulate: Callable,
    what: str,
    p: float,
    n: int,
    attempts: int,
    correlation: float,
    trials: int,
    seed: int,
    exact: float,
) -> Case:
    """One case of 06.retries-correlated: the estimate's wide interval must hold the `exact` chance."""
    got, error = attempt(simulate, p, n, attempts, correlation, trials, seed)
    if error or not isinstance(got, Estimate) or got.trials != trials:
        return Case(what, False, error or f"expected an Estimate of {trials:,} trials, got {got!r}")
    low, high = experiments.wilson_interval(got.successes, got.trials, z=_Z_CHECK)
    side = "high" if got.value > exact else "low"
    return Case(what, low <= exact <= high, f"simulated {got.value:.4f}: too {side} for the exact answer")
