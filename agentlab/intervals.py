"""Intervals that cover the truth as often as they say: for a share, for a difference of paired
shares, and for a mean difference.

An interval is called "95%" only if, over many batches drawn from the same truth, about 95% of
the intervals it prints contain that truth; tests/test_intervals.py measures that by simulation.

- `wilson`: one share (k right of n), the score interval of Wilson (1927);
- `paired_difference`: the difference between two setups' accuracies on the same tasks, the
  score interval of Tango (1998, Statistics in Medicine 17:891-908);
- `mean_interval`: the mean of per-task differences (of cost, tokens, seconds), Student's t.

Every function takes numpy arrays as well as numbers, so a test can judge 20,000 tables at once.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def _z(level: float) -> float:
    return NormalDist().inv_cdf((1 + level) / 2)


def wilson(successes, trials, level: float = 0.95) -> tuple:
    """The Wilson score interval for a share: every share p whose score test at `level` accepts k
    successes of n. It stays inside [0, 1] and has a width even at 0 of n or n of n."""
    k, n, z = np.asarray(successes, float), np.asarray(trials, float), _z(level)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * np.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def paired_difference(both, only_a, only_b, neither, level: float = 0.95) -> tuple:
    """Tango's score interval for A's accuracy minus B's on the same tasks, from the four counts of
    the paired table (Tango 1998, Statistics in Medicine 17:891-908), its variance scaled by
    n / (n - 1), the small-sample correction Miettinen and Nurminen (1985, Statistics in Medicine
    4:213-226) give the score interval for two independent shares.

    The interval holds every difference d that a score test would accept at `level`: the test
    compares the observed "only A" minus "only B" with n * d, and judges the gap by its spread
    under d, from the cell chances most likely given the table among those whose difference is d
    (the restricted estimate has a closed form, the root of a quadratic). The test's statistic
    falls as d rises, so each end is found by halving [-1, 1] 40 times, on whole arrays at once.
    Every count is random, not only the disagreements, so the interval has a width even when the
    two never disagree; one task leaves the whole range [-1, 1].

    Why the n / (n - 1): where the two setups never agree, the tasks are a coin's tosses and any
    score interval's coverage dips at some chances; Tango's own covers 92.8% at 40 tasks when A is
    right on 80% and B on 20% (as did Newcombe's hybrid interval, which the kit printed before).
    With it, exact coverage at a nominal 95% is 93.5% or more at every point of a 0.1 grid of
    accuracies and agreement rates at ten sizes from 20 to 200 tasks (tests/test_intervals.py
    checks 20 to 50 exactly and 20 to 400 by simulation); on a 0.05 grid at seven sizes from 20 to
    60 tasks, 6 of 21,707 points fall below 93%, the lowest 92.5% at 20 tasks where the true
    difference is 95 points."""
    a, b, c, d = (np.asarray(x, float) for x in (both, only_a, only_b, neither))
    n = a + b + c + d
    inflate = n / np.maximum(n - 1, 1)

    def score_above(diff, target):
        """Whether the score statistic at the difference diff lies above target (z or -z)."""
        # 2q, q the chance of "only B" most likely under diff: the root of 2n q^2 + lin q - c diff (1 - diff)
        lin, bernoulli = (2 * n - b + c) * diff - b - c, diff * (1 - diff)
        two_q = (np.sqrt(np.maximum(lin * lin + 8 * n * c * bernoulli, 0.0)) - lin) / (2 * n)
        spread = np.sqrt(np.maximum(inflate * n * (two_q + bernoulli), 0.0))
        above = b - c - n * diff - target * spread  # gap / spread > target, without dividing by 0
        return above > 0 if target > 0 else above >= 0  # 0 / 0 (no disagreement, diff 0) counts as 0

    def where_score_is(target):
        low, high = np.full(n.shape, -1.0), np.full(n.shape, 1.0)
        for _ in range(40):  # 2 / 2^40: far below a printed tenth of a point
            middle = (low + high) / 2
            above = score_above(middle, target)
            low, high = np.where(above, middle, low), np.where(above, high, middle)
        return (low + high) / 2

    z = _z(level)
    one = n < 2  # one task: no spread to judge it by
    return np.where(one, -1.0, where_score_is(z)), np.where(one, 1.0, where_score_is(-z))


def mean_interval(values, level: float = 0.95) -> tuple[float, float]:
    """Student's t interval for the mean of `values` (e.g. per-task cost differences, A minus B):
    mean +- t * sd / sqrt(n). One value gives no spread, so the interval is the whole line."""
    x = np.asarray(values, float)
    if len(x) < 2:
        return -math.inf, math.inf
    half = t_quantile(level, len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return float(x.mean()) - half, float(x.mean()) + half


def t_quantile(level: float, df: int) -> float:
    """The two-sided `level` point of Student's t with `df` degrees of freedom: P(|T| <= t) = level.
    Numpy has no t distribution, so this integrates the density (the trapezoid rule on a grid in
    arctan(t), which folds the long tails into a finite range) and halves its way to the point."""
    theta = np.linspace(0.0, math.pi / 2, 20_001)[:-1]  # t = tan(theta) runs from 0 to infinity
    t = np.tan(theta)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    density = np.exp(log_c - (df + 1) / 2 * np.log1p(t * t / df)) / np.cos(theta) ** 2
    step = theta[1] - theta[0]
    mass = np.concatenate(([0.0], np.cumsum((density[:-1] + density[1:]) / 2) * step))  # P(0 <= T <= t)
    i = int(np.searchsorted(2 * mass, level))
    w = (level / 2 - mass[i - 1]) / (mass[i] - mass[i - 1])  # between two grid points
    return float(np.tan(theta[i - 1] + w * step))
