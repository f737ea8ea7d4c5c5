"""Do the kit's "95%" intervals cover the truth 95% of the time? Measured by simulation, seeded:
thousands of batches drawn from a known truth, and the share of intervals that contain it.

Accuracy: Tango's score interval (agentlab.intervals.paired_difference, what paired_accuracy
prints) over a grid of batch sizes (20 to 400 tasks), true accuracies (0% to 100%) and agreement
rates (the share of tasks both get right or both get wrong, 0% to 100%), against the two intervals
the kit printed before: one exact given the number of disagreements, which covered as little as
37% here, then Newcombe's hybrid score interval, which covered 92.8% at 40 tasks where the two
setups never agree. Cost: Student's t on per-task differences (paired_cost) on skewed costs,
against the percentile bootstrap it replaced.

Coverage of any interval for counts moves up and down with the exact parameters (the counts are
whole numbers), so the simulation is checked by exact enumeration too: every table at 20 to 50
tasks, weighted by its chance, on a 0.1 grid of accuracies and agreement rates.

numpy draws 10,000 tables per setting at once, so the whole file runs in a few seconds.
"""

from statistics import NormalDist

import numpy as np
import pytest

from agentlab.evidence import paired_cost
from agentlab.intervals import _z, mean_interval, paired_difference, t_quantile, wilson

TABLES = 10_000  # per setting: the measured coverage is within about 0.5 points of the truth
ACCURACIES = (0.0, 0.2, 0.5, 0.8, 0.95, 1.0)
AGREEMENTS = (0.0, 0.3, 0.6, 0.85, 0.95, 1.0)
SIZES = (20, 40, 100, 200, 400)


def _old_interval(both, only_a, only_b, neither):
    """The interval paired_accuracy printed before: Clopper-Pearson on the share of disagreements
    that went A's way, scaled by the observed number of disagreements (as if it were fixed)."""
    from scipy.special import betaincinv  # the beta distribution's quantile; lighter than scipy.stats

    n = both + only_a + only_b + neither
    keys, back = np.unique(only_a * 1_000 + only_b, return_inverse=True)  # scipy's beta is slow
    wins, losses = keys // 1_000, keys % 1_000
    split = wins + losses
    low = np.where(wins > 0, betaincinv(np.maximum(wins, 1), losses + 1, 0.025), 0.0)
    high = np.where(losses > 0, betaincinv(wins + 1, np.maximum(losses, 1), 0.975), 1.0)
    low, high = np.where(split > 0, low, 0.5), np.where(split > 0, high, 0.5)
    return ((2 * low - 1) * split)[back] / n, ((2 * high - 1) * split)[back] / n


def _newcombe(both, only_a, only_b, neither):
    """The interval paired_accuracy printed next: Newcombe's hybrid score interval (1998, Statistics
    in Medicine 17:2635-2650, method 10), the two Wilson intervals combined with the corrected phi."""
    a, b, c, d = (np.asarray(x, float) for x in (both, only_a, only_b, neither))
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    (l1, u1), (l2, u2) = wilson(a + b, n), wilson(a + c, n)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    excess = a * d - b * c
    excess = np.where(excess > n / 2, excess - n / 2, np.minimum(excess, 0.0))
    phi = np.where(margins > 0, excess / np.sqrt(np.where(margins > 0, margins, 1.0)), 0.0)
    down = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    up = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    return p1 - p2 - np.sqrt(np.maximum(down, 0.0)), p1 - p2 + np.sqrt(np.maximum(up, 0.0))


def _settings():
    """(tasks, A's accuracy, B's accuracy, agreement, the four cells' chances) for every feasible
    point of the grid: both right, only A, only B, neither."""
    for n in SIZES:
        for acc_a in ACCURACIES:
            for acc_b in (x for x in ACCURACIES if x <= acc_a):
                for agree in AGREEMENTS:
                    only_a, only_b = (1 - agree + acc_a - acc_b) / 2, (1 - agree - acc_a + acc_b) / 2
                    cells = np.array([acc_a - only_a, only_a, only_b, 1 - acc_a - only_b])
                    if (cells > -1e-12).all():
                        yield n, acc_a, acc_b, agree, np.clip(cells, 0, 1) / np.clip(cells, 0, 1).sum()


def _coverages(interval) -> list[tuple[float, tuple]]:
    rng, out = np.random.default_rng(35), []
    for n, acc_a, acc_b, agree, cells in _settings():
        tables = rng.multinomial(n, cells, size=TABLES)
        _, first, back = np.unique(tables @ (n + 1) ** np.arange(4), return_index=True, return_inverse=True)
        low, high = (x[back] for x in interval(*tables[first].T))  # each distinct table once
        truth = acc_a - acc_b
        out.append((float(np.mean((low <= truth + 1e-9) & (truth - 1e-9 <= high))), (n, acc_a, acc_b, agree)))
    return out


def test_the_paired_interval_covers_95_percent_from_20_to_400_tasks():
    coverages = _coverages(paired_difference)
    assert len(coverages) == 5 * 27  # every feasible point: 100% and 0% accuracies and agreements
    agreeing = [(c, s) for c, s in coverages if s[3] > 0]
    never_agreeing = [(c, s) for c, s in coverages if s[3] == 0]
    assert min(agreeing) >= (0.93, ()), min(agreeing)
    assert min(never_agreeing) >= (0.93, ()), min(never_agreeing)
    assert 0.95 < np.mean([c for c, _ in coverages]) < 0.98  # 100% where nothing can vary


def test_the_old_interval_fails_the_same_grid():
    coverages = _coverages(_old_interval)
    worst = min(coverages)
    assert worst[0] < 0.6, worst  # 37% at 400 tasks, 95% vs 80% with 85% agreement
    assert sum(c < 0.93 for c, _ in coverages) >= 20  # 25 of the 135 settings


def _tables(n: int) -> np.ndarray:
    """Every paired table of n tasks: rows (both, only A, only B, neither)."""
    a, b, c = np.meshgrid(*[np.arange(n + 1)] * 3, indexing="ij")
    keep = a + b + c <= n
    return np.array([a[keep], b[keep], c[keep], n - a[keep] - b[keep] - c[keep]])


def _exact_coverages(n: int, interval) -> list[tuple[float, tuple]]:
    """Exact coverage on a 0.1 grid: the chance of every table at that setting, summed over the
    tables whose interval holds the truth."""
    from scipy.special import gammaln

    tables = _tables(n)
    low, high = interval(*tables)
    log_ways = gammaln(n + 1) - gammaln(tables + 1).sum(axis=0)
    grid, out = np.round(np.linspace(0, 1, 11), 10), []
    for acc_a in grid:
        for acc_b in grid:
            for agree in grid:
                only_a, only_b = (1 - agree + acc_a - acc_b) / 2, (1 - agree - acc_a + acc_b) / 2
                cells = np.array([acc_a - only_a, only_a, only_b, 1 - acc_a - only_b])
                if (cells < -1e-12).any():
                    continue
                cells = np.clip(cells, 0, 1)[:, None]
                with np.errstate(divide="ignore", invalid="ignore"):
                    log_p = np.where(tables > 0, tables * np.log(cells), 0.0).sum(axis=0)
                chance = np.exp(log_ways + log_p)
                truth = acc_a - acc_b
                covered = (low <= truth + 1e-9) & (truth - 1e-9 <= high)
                out.append((float(chance[covered].sum()), (n, float(acc_a), float(acc_b), float(agree))))
    return out


def test_exact_coverage_stays_above_93_percent_at_20_to_50_tasks():
    coverages = [c for n in (20, 30, 40, 50) for c in _exact_coverages(n, paired_difference)]
    assert len(coverages) == 4 * 451 and min(coverages)[0] >= 0.935, min(coverages)
    # Tango's own interval, without the n / (n - 1): it is the same interval at a z larger by
    # sqrt(n / (n - 1)), i.e. paired_difference at the level whose z is smaller by that factor
    level = 2 * NormalDist().cdf(_z(0.95) * np.sqrt(39 / 40)) - 1
    uncorrected = _exact_coverages(40, lambda *t: paired_difference(*t, level))
    assert min(uncorrected)[0] < 0.93, min(uncorrected)  # 92.83%: 40 tasks, never agreeing included


def test_newcombes_interval_it_replaced_dips_below_93_percent_where_the_two_never_agree():
    never_agreeing = [c for c in _exact_coverages(40, _newcombe) if c[1][3] == 0]
    assert min(never_agreeing)[0] < 0.93, min(never_agreeing)  # 92.83%: A right on 80%, B on 20%


def test_wilson_by_hand():
    # 0 of 10: upper end z^2 / (10 + z^2) = 3.8415 / 13.8415 = 0.2775; k of n mirrors n - k of n
    assert tuple(float(x) for x in wilson(0, 10)) == pytest.approx((0.0, 0.27753), abs=1e-5)
    low, high = wilson(14, 19)
    assert (float(1 - high), float(1 - low)) == pytest.approx(tuple(float(x) for x in wilson(5, 19)))
    # (k + z^2/2 -+ z sqrt(k(n-k)/n + z^2/4)) / (n + z^2) with k = 14, n = 19
    assert 0.5120 < low < 0.5122 and 0.8818 < high < 0.8820


def test_t_quantile_agrees_with_scipy():
    from scipy.special import stdtrit  # Student's t quantile; scipy.stats takes seconds to import

    for df in (1, 2, 5, 19, 99, 399, 10_000):
        for level in (0.9, 0.95, 0.99):
            assert t_quantile(level, df) == pytest.approx(stdtrit(df, (1 + level) / 2), abs=1e-5)


# --- cost -----------------------------------------------------------------------------------------


def _skewed_costs(rng, tasks: int, batches: int, spread: float):
    """Per-task costs of two setups on the same tasks: a task's size (lognormal, so a few tasks
    cost several times the median) drives both, and B costs 30% more with noise of its own.
    Returns the per-task differences A - B, one batch per row, and their true mean."""
    size = rng.lognormal(0, spread, (batches, tasks))
    a = size * rng.lognormal(0, 0.5, (batches, tasks))
    b = 1.3 * size * rng.lognormal(0, 0.5, (batches, tasks))
    return a - b, np.exp(spread**2 / 2 + 0.125) * (1 - 1.3)


def test_the_cost_interval_covers_95_percent_on_skewed_costs():
    rng = np.random.default_rng(35)
    for spread in (0.5, 0.75):
        for tasks in SIZES:
            gaps, truth = _skewed_costs(rng, tasks, 4_000, spread)
            half = t_quantile(0.95, tasks - 1) * gaps.std(axis=1, ddof=1) / np.sqrt(tasks)
            covered = np.mean((gaps.mean(axis=1) - half <= truth) & (truth <= gaps.mean(axis=1) + half))
            assert covered >= 0.93, (spread, tasks, covered)
    # and it is what paired_cost prints
    gaps, _ = _skewed_costs(rng, 20, 1, 0.5)
    assert paired_cost(list(gaps[0]), [0.0] * 20).interval == pytest.approx(mean_interval(gaps[0]))


def test_the_percentile_bootstrap_it_replaced_covers_less_at_20_tasks():
    rng = np.random.default_rng(35)
    gaps, truth = _skewed_costs(rng, 20, 2_000, 0.5)
    means = gaps[:, rng.integers(0, 20, (1_000, 20))].mean(axis=2)  # 1,000 resamples per batch
    low, high = np.quantile(means, [0.025, 0.975], axis=1)
    assert np.mean((low <= truth) & (truth <= high)) < 0.92  # about 90.5%
