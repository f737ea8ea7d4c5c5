"""Judging several comparisons together (Holm) and keeping a cheaper setup only when it is shown
not much worse (non-inferiority): agentlab.verdicts, checked by hand and by simulation."""

import numpy as np
import pytest

from agentlab.evidence import paired_accuracy
from agentlab.verdicts import family, holm, non_inferior


def _results(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return a, b


# --- Holm -----------------------------------------------------------------------------------------


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, 2 x 0.03, 1 x 0.04, each at least the one before
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    assert holm([0.041, 0.2, 0.5]) == pytest.approx([0.123, 0.4, 0.5])  # 08's 0.041 among three
    assert holm([0.6, 0.9]) == [1.0, 1.0]  # never above 1
    assert holm([0.03]) == [0.03]  # one test: nothing to adjust
    assert holm([]) == []
    with pytest.raises(ValueError, match="a p-value must be"):
        holm([0.5, 1.5])


def test_holm_keeps_the_familys_false_verdicts_at_5_percent():
    # eight true nulls (uniform p's, independent): some "win" at 0.05 in 1 - 0.95^8 = 34% of
    # families read one by one; after Holm, in 5% or fewer
    p = np.random.default_rng(35).uniform(size=(20_000, 8))
    one_by_one = np.mean((p < 0.05).any(axis=1))
    adjusted = np.mean([min(holm(row)) < 0.05 for row in p[:4_000]])
    assert 0.32 < one_by_one < 0.36
    assert adjusted < 0.055


def test_a_family_says_its_verdicts_are_adjusted():
    clear = paired_accuracy(*_results(both=100, only_a=30, only_b=5, neither=65), ("team", "one"))
    edge = paired_accuracy(*_results(both=100, only_a=20, only_b=8, neither=72), ("routed", "one"))
    none = paired_accuracy(*_results(both=100, only_a=6, only_b=6, neither=88), ("small", "one"))
    assert edge.clear()  # p = 0.036 alone
    judged = family([clear, edge, none])
    assert [r.holm_p for r in judged] == pytest.approx(holm([clear.p_value, edge.p_value, none.p_value]))
    assert judged[0].clear() and not judged[1].clear()  # 0.036 is the second smallest of three: x 2 = 0.071
    assert judged[0].verdict.startswith("team is more accurate than one (Holm-adjusted p < 0.001 over 3")
    assert judged[1].verdict == "no measurable difference at n = 200, Holm-adjusted over 3 tests"
    assert "exact McNemar p = 0.036 (Holm, 3 tests: p = 0.071)" in str(judged[1])
    with pytest.raises(ValueError, match="paired_accuracy results"):
        family([0.03, 0.2])


# --- non-inferiority ------------------------------------------------------------------------------


def test_non_inferior_keeps_drops_or_asks_for_more_tasks():
    # 400 tasks, the candidate loses 1 point: interval about -3.3 to +1.3, inside a 5-point margin
    kept = non_inferior(paired_accuracy(*_results(300, 8, 12, 80), ("cheap", "best")), margin=0.05)
    assert kept.kept and not kept.worse
    assert kept.verdict.startswith("cheap is non-inferior to best: it loses at most 5 points (95% CI")
    # the same split on 40 tasks: no measurable difference, and not shown within 5 points either
    few = non_inferior(paired_accuracy(*_results(30, 1, 2, 7), ("cheap", "best")), margin=0.05)
    assert not few.kept and not few.worse and not few.comparison.clear()
    assert few.verdict.startswith("not enough tasks: run more (cheap is neither measurably worse than best")
    # measurably worse
    worse = non_inferior(paired_accuracy(*_results(300, 2, 30, 68), ("cheap", "best")), margin=0.05)
    assert worse.worse and worse.verdict.startswith("cheap is worse than best (95% CI")


def test_non_inferior_names_bad_input():
    with pytest.raises(ValueError, match="margin must be a share in"):
        non_inferior(paired_accuracy([True], [True]), margin=5)
    with pytest.raises(ValueError, match="takes a paired_accuracy result"):
        non_inferior([True, False], 0.05)


def test_non_inferiority_rarely_keeps_a_setup_worse_than_the_margin():
    # the candidate is truly 5 points worse (the margin itself): kept in 2.5% or fewer of batches,
    # one end of a 95% interval; "no measurable difference" would have kept it far more often
    rng = np.random.default_rng(35)
    cells = np.array([0.70, 0.05, 0.10, 0.15])  # both, only cheap, only best, neither: -5 points
    kept = untested = 0
    for table in rng.multinomial(100, cells, size=2_000):
        a, b = _results(*table)
        result = paired_accuracy(a, b)
        kept += non_inferior(result, 0.05).kept
        untested += not result.clear()
    assert kept / 2_000 < 0.03
    assert untested / 2_000 > 0.5
