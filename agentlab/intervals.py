"""Intervals that cover the truth as often as they say: for a share, for a difference of paired
shares, and for a mean difference.

An interval is called "95%" only if, over many batches drawn from the same truth, about 95% of
the intervals it prints contain that truth; tests/test_intervals.py measures that by simulation.

- `wilson`: one share (k right of n), the score interval of Wilson (1927);
- `paired_difference`: the difference between two setups' accuracies on the same tasks, the
  hybrid score interval of Newcombe (1998, Statistics in Medicine 17:2635-2650, method 10);
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
    """Newcombe's hybrid score interval (method 10) for A's accuracy minus B's on the same tasks,
    from the four counts of the paired table.

    Each accuracy gets its Wilson interval; the two distances from estimate to limit are combined
    as for a difference ("square and add"), less twice their product times the correlation phi of
    the two setups' results, since tasks both get right or both get wrong move both accuracies
    together. phi is the published corrected estimate: (ad - bc - n/2) / sqrt(efgh) when
    ad - bc > n/2, 0 when 0 <= ad - bc <= n/2, (ad - bc) / sqrt(efgh) below 0, and 0 when a
    margin e, f, g or h is empty (a setup right on every task, or on none)."""
    a, b, c, d = (np.asarray(x, float) for x in (both, only_a, only_b, neither))
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, level)
    l2, u2 = wilson(a + c, n, level)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    excess = a * d - b * c
    excess = np.where(excess > n / 2, excess - n / 2, np.minimum(excess, 0.0))
    phi = np.where(margins > 0, excess / np.sqrt(np.where(margins > 0, margins, 1.0)), 0.0)
    down = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    up = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    return p1 - p2 - np.sqrt(np.maximum(down, 0.0)), p1 - p2 + np.sqrt(np.maximum(up, 0.0))


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
