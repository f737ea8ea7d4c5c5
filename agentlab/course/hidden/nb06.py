"""Notebook 06's grading cases: chances and chains the exercise's own cases do not show, with
their answers worked out beforehand (crossover and cut), or from the kit's exact formula (retries)."""

import math
from collections.abc import Callable, Iterator

from agentlab import experiments
from agentlab.course.checks import Case, attempt
from agentlab.course.hidden import grading
from agentlab.experiments import Estimate

# (p, q, the largest n with p**n > q): 0.92**8 = 0.513 > 0.5 >= 0.92**9; 0.999**105 = 0.9003; ...
_CROSSOVERS = ((0.92, 0.5, 8), (0.999, 0.9, 105), (0.7, 0.69, 1), (0.6, 0.1, 4), (0.9, 0.9, 0), (0.4, 0.7, 0))
_CROSSOVERS += ((1.0, 0.3, math.inf), (0.3, 0.0, math.inf))


@grading("06.crossover")
def crossover(longest: Callable) -> Iterator[Case]:
    for p, q, want in _CROSSOVERS:
        got, error = attempt(longest, p, q, limit=2.0)
        yield Case(f"p = {p} against q = {q}", not error and got == want, error or f"got {got!r}")


# (fail, handoff, most, pieces, chance): (1 - 0.5/2)**2 * 0.97 = 0.545625; 1 piece: 0.7; ...
_CUTS = (
    (0.5, 0.03, 12, 2, 0.545625),
    (0.3, 0.05, 6, 1, 0.7),
    (0.8, 0.0, 4, 4, 0.4096),
    (0.9, 0.01, 30, 7, 0.35928057123744284),
)


@grading("06.best-cut")
def best_cut(cut: Callable) -> Iterator[Case]:
    for fail, handoff, most, pieces, chance in _CUTS:
        got, error = attempt(cut, fail, handoff, most, limit=2.0)
        right = not error and isinstance(got, tuple | list) and len(got) == 2 and got[0] == pieces
        right = right and isinstance(got[1], int | float) and abs(got[1] - chance) < 1e-9
        yield Case(
            f"fail {fail}, handoffs lose {handoff:.0%}, up to {most} pieces", right, error or f"got {got!r}"
        )


def _exact(p: float, n: int, attempts: int, correlation: float) -> float:
    """The mean of (1 - (1 - r)**attempts)**n over tasks' rates r, expanded with the kit's moments."""

    def fail_moment(m: int) -> float:
        return 1.0 if m == 0 else experiments.correlated_chain_success(1 - p, m, correlation)

    return sum(math.comb(n, k) * (-1) ** k * fail_moment(attempts * k) for k in range(n + 1))


@grading("06.retries-correlated")
def retries(simulate: Callable) -> Iterator[Case]:
    for p, n, attempts, correlation, trials, seed in (
        (0.9, 4, 2, 0.6, 60_000, 11),
        (0.6, 3, 4, 0.2, 60_000, 12),
    ):
        got, error = attempt(simulate, p, n, attempts, correlation, trials, seed)
        if error or not isinstance(got, Estimate) or got.trials != trials:
            yield Case(
                f"p {p}, {n} steps, {attempts} tries, correlation {correlation}",
                False,
                error or f"got {got!r}",
            )
            continue
        low, high = experiments.wilson_interval(got.successes, got.trials, z=4.0)
        exact = _exact(p, n, attempts, correlation)
        yield Case(
            f"p {p}, {n} steps, {attempts} tries, correlation {correlation}",
            low <= exact <= high,
            f"simulated {got.value:.4f}: too {'high' if got.value > exact else 'low'}",
        )
