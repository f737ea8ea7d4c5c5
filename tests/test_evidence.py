"""The paired comparison, the tasks a difference needs and the seed sweep (agentlab.evidence), checked
against values worked out by hand and against scipy's exact binomial test.

scipy.stats is imported by the tests that use it: it takes a second to import, and under xdist every
worker imports every test module while collecting, whether or not it runs this file."""

import math
from itertools import product
from statistics import NormalDist

import pytest

from agentlab import world
from agentlab.compare import Setup, compare
from agentlab.evidence import (
    paired_accuracy,
    paired_cost,
    power,
    seed_sweep,
    sign_test,
    tasks_needed,
    versus,
)
from agentlab.llm import SimulatedLLM


def _results(both: int, only_a: int, only_b: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return a, b


# --- the exact test -------------------------------------------------------------------------------


def test_sign_test_by_hand():
    # 14 to 5 of 19: 2 * (C(19,0) + ... + C(19,5)) / 2**19 = 2 * 16,664 / 524,288
    assert sign_test(14, 5) == pytest.approx(2 * 16_664 / 2**19, rel=1e-12)
    assert sign_test(5, 14) == sign_test(14, 5)
    assert sign_test(5, 0) == pytest.approx(2 / 32)  # the smallest p five disagreements can give
    assert sign_test(3, 3) == 1.0
    assert sign_test(0, 0) == 1.0  # no disagreement: no evidence either way


def test_sign_test_agrees_with_scipy():
    from scipy.stats import binomtest

    for wins, losses in [*product(range(0, 31, 3), range(1, 31, 4)), (600, 540)]:
        want = binomtest(wins, wins + losses, 0.5).pvalue
        assert sign_test(wins, losses) == pytest.approx(want, rel=1e-9, abs=1e-15), (wins, losses)


def test_a_bad_count_is_named():
    with pytest.raises(ValueError, match="wins must be"):
        sign_test(-1, 3)
    with pytest.raises(ValueError, match="one result per task from each: 2 and 1"):
        paired_accuracy([True, False], [True])
    with pytest.raises(ValueError, match="True or False"):
        paired_accuracy([1, 0], [True, False])


# --- accuracy -------------------------------------------------------------------------------------


def test_paired_accuracy_counts_and_prints_one_line():
    a, b = _results(both=49, only_a=14, only_b=5, neither=12)
    result = paired_accuracy(a, b, ("one agent", "team"))
    assert (result.tasks, result.a_right, result.b_right) == (80, 63, 54)
    assert result.difference == pytest.approx(9 / 80)
    assert result.p_value == pytest.approx(sign_test(14, 5))
    text = str(result)
    assert text.startswith("one agent 63 vs team 54 of 80 right; paired: 14 only one agent, 5 only team")
    assert "exact McNemar p = 0.064; difference +11.2 pts [95% CI +0.5 to +22.4]" in text
    assert "\n" not in text
    assert result.verdict == "no measurable difference at n = 80"


def test_the_verdict_names_the_better_setup_when_the_test_says_so():
    a, b = _results(both=40, only_a=2, only_b=15, neither=3)
    assert paired_accuracy(a, b, ("A", "B")).verdict == "B is more accurate than A (p = 0.002, n = 60)"


def test_the_difference_interval_by_hand():
    # Tango's score test at each end of the interval for 49 both, 14 only A, 5 only B, 12 neither
    # (n = 80). Under a difference d the likeliest chance q of "only B" solves
    # 2n q^2 + ((2n - b + c) d - b - c) q - c d (1 - d) = 0, and the statistic
    # (b - c - n d) / sqrt(n / (n - 1) * n * (2q + d (1 - d))) is +z at the lower end, -z at the upper
    n, b, c, z = 80, 14, 5, 1.959964
    result = paired_accuracy(*_results(both=49, only_a=b, only_b=c, neither=12))
    for d, target in zip(result.interval, (z, -z), strict=True):
        linear = (2 * n - b + c) * d - b - c
        q = (math.sqrt(linear**2 + 8 * n * c * d * (1 - d)) - linear) / (4 * n)
        statistic = (b - c - n * d) / math.sqrt(n / (n - 1) * n * (2 * q + d * (1 - d)))
        assert statistic == pytest.approx(target, abs=1e-5)
    assert str(result).endswith("[95% CI +0.5 to +22.4]")


def test_the_difference_interval_matches_tangos_published_figures():
    # Bentur et al.'s table (1 both, 1 only A, 7 only B, 12 neither), Tango's interval -0.517 to
    # -0.026 (Fagerland, Lydersen and Laake 2014, Statistics in Medicine 33:2850-2875). The kit's
    # n / (n - 1) divides the statistic by sqrt(21 / 20), so at the level whose z is smaller by
    # that factor it gives Tango's own 95% interval
    level = 2 * NormalDist().cdf(1.959964 * math.sqrt(20 / 21)) - 1
    low, high = paired_accuracy(*_results(both=1, only_a=1, only_b=7, neither=12), level=level).interval
    assert (low, high) == pytest.approx((-0.517, -0.026), abs=5e-4)


def test_the_difference_interval_has_a_width_when_nothing_is_discordant():
    # 40 of 40 right for both: the difference is 0, but 40 tasks cannot pin it to 0 exactly. With no
    # disagreement the statistic at d > 0 is -n d / sqrt(n / (n - 1) * n d (1 - d)), so the upper
    # end is z^2 f / (n + z^2 f) with f = 40 / 39: 8.97 points
    z2, f = 1.959964**2, 40 / 39
    low, high = paired_accuracy(*_results(both=40, only_a=0, only_b=0, neither=0)).interval
    assert (low, high) == pytest.approx((-z2 * f / (40 + z2 * f), z2 * f / (40 + z2 * f)), abs=1e-6)
    # all 7 tasks disagree, each A's way: up to +100; the lower end solves 6 (1 - d) / (1 + d) = z^2
    low, high = paired_accuracy(*_results(both=0, only_a=7, only_b=0, neither=0)).interval
    assert (low, high) == pytest.approx(((6 - z2) / (6 + z2), 1.0), abs=1e-6)


def test_the_interval_and_the_test_agree_away_from_the_edge():
    # The interval is not the test inverted: near p = 0.05 they may disagree, but a clear p and an
    # interval well clear of 0 go together
    for only_a, only_b in product(range(0, 25, 2), range(0, 25, 3)):
        result = paired_accuracy(*_results(both=30, only_a=only_a, only_b=only_b, neither=10))
        low, high = result.interval
        assert low <= result.difference <= high
        if result.p_value < 0.01:
            assert low > 0 or high < 0, str(result)
        if result.p_value > 0.2:
            assert low < 0 < high, str(result)


def test_interval_overlap_is_not_the_paired_test():
    # 200 tasks: A right on 130, B on 110, but every task B gets right A gets right too. Their 95%
    # Wilson intervals overlap (0.58-0.71 and 0.48-0.62), yet the 20 disagreements all go A's way.
    a, b = _results(both=110, only_a=20, only_b=0, neither=70)
    result = paired_accuracy(a, b)
    assert result.p_value == pytest.approx(2 / 2**20)
    assert result.clear()


# --- cost -----------------------------------------------------------------------------------------


def test_paired_cost_by_hand():
    result = paired_cost([1.0, 2.0, 3.0], [2.0, 2.0, 1.0], ("A", "B"))
    assert (result.mean_a, result.mean_b, result.a_cheaper, result.b_cheaper) == (2.0, 5 / 3, 1, 1)
    assert result.p_value == 1.0
    assert result.difference == pytest.approx(1 / 3)
    # Student's t on the gaps -1, 0, 2: mean 1/3, sd sqrt(21 / 9), t(0.975, 2 df) = 4.302653
    half = 4.302653 * math.sqrt(21 / 9) / math.sqrt(3)
    assert result.interval == pytest.approx((1 / 3 - half, 1 / 3 + half), abs=1e-5)
    assert str(result).startswith("per task $2.00000 vs $1.66667 (1.20×); paired: A cheaper on 1, B on 1")


def test_paired_seconds_say_faster_and_tokens_lower_never_cheaper():
    seconds = paired_cost([1.0, 2.0, 3.0], [2.0, 2.0, 1.0], ("A", "B"), unit="s")
    assert "paired: A faster on 1, B on 1" in str(seconds)
    tokens = paired_cost([1.0, 2.0, 3.0], [2.0, 2.0, 1.0], ("A", "B"), unit="tokens")
    assert "paired: A lower on 1, B on 1" in str(tokens)


def test_paired_cost_interval_is_nearly_the_normal_one_at_large_n():
    gaps = [(-1.0) ** i * (i % 7) + 0.5 for i in range(400)]
    a, b = [10.0 + g for g in gaps], [10.0] * 400
    mean = sum(gaps) / 400
    se = math.sqrt(sum((g - mean) ** 2 for g in gaps) / 399 / 400)
    low, high = paired_cost(a, b, unit="tokens").interval
    assert low == pytest.approx(mean - 1.966 * se, abs=0.001)  # t with 399 df: 1.966, z: 1.960
    assert high == pytest.approx(mean + 1.966 * se, abs=0.001)
    assert "tokens" in str(paired_cost(a, b, unit="tokens"))


def test_versus_reads_a_comparison_task_by_task():
    tasks = world.make_tasks(12, seed=0)
    comparison = compare(tasks, Setup(SimulatedLLM(seed=0, error_rate=0.2)), ["react", "plan-execute"])
    result = versus(comparison, "react", "plan-execute")
    assert result.accuracy.a_right == comparison["react"].right
    assert result.accuracy.b_right == comparison["plan-execute"].right
    assert result.cost.mean_a == pytest.approx(comparison["react"].mean_cost)
    with pytest.raises(ValueError, match="no topology 'chat'"):
        versus(comparison, "chat", "react")


# --- how many tasks -------------------------------------------------------------------------------


def test_power_by_hand():
    # Six tasks, all discordant, each going A's way with chance 3/4: the exact test at 5% rejects
    # only at 6-0 or 0-6 (2/64 = 0.031; 5-1 gives 0.22), so power = 0.75**6 + 0.25**6.
    assert power(6, 0.5, 1.0) == pytest.approx(0.75**6 + 0.25**6)
    assert power(6, 1.0, 1.0) == pytest.approx(1.0)
    assert power(5, 1.0, 1.0) == 0.0  # five disagreements cannot reach p < 0.05 (2/32 = 0.0625)


def test_power_agrees_with_scipy_summed_case_by_case():
    from scipy.stats import binom, binomtest

    tasks, difference, discordance = 40, 0.15, 0.35
    toward_a = (discordance + difference) / (2 * discordance)
    want = 0.0
    for m in range(tasks + 1):
        for k in range(m + 1):
            if m and binomtest(k, m, 0.5).pvalue <= 0.05:
                want += binom.pmf(m, tasks, discordance) * binom.pmf(k, m, toward_a)
    assert power(tasks, difference, discordance) == pytest.approx(want, rel=1e-9)


def test_tasks_needed_by_hand_and_its_power():
    # Connor's formula for 5 points with 20% of tasks discordant, 80% power at 5%:
    # (1.95996 * sqrt(0.2) + 0.84162 * sqrt(0.1975))^2 / 0.0025 = 625.4 -> 626
    assert tasks_needed(0.05, 0.2) == 626
    assert 0.77 < power(626, 0.05, 0.2) < 0.8  # the exact test is a little conservative
    assert tasks_needed(0.05, 0.1) < tasks_needed(0.05, 0.2)  # fewer disagreements, less noise
    with pytest.raises(ValueError, match="at least that share"):
        tasks_needed(0.3, 0.2)


# --- seeds ----------------------------------------------------------------------------------------


def test_seed_sweep_spreads():
    swept = seed_sweep(lambda seed: {"a": seed, "b": 2.0}, range(4))
    assert swept["a"].values == (0.0, 1.0, 2.0, 3.0)
    assert (swept["a"].mean, swept["a"].low, swept["a"].high) == (1.5, 0.0, 3.0)
    assert swept["a"].sd == pytest.approx(math.sqrt(5 / 3))
    assert swept["b"].sd == 0.0
    assert str(swept["a"]) == "a: mean 1.5, sd 1.3, from 0 to 3 over 4 seeds"
    assert seed_sweep(lambda seed: seed / 10, [1, 2])["value"].mean == pytest.approx(0.15)
    with pytest.raises(ValueError, match="seed 1 returned"):
        seed_sweep(lambda seed: {"a": 1.0} if seed == 0 else {"b": 1.0}, [0, 1])
    with pytest.raises(ValueError, match="at least one seed"):
        seed_sweep(lambda seed: 1.0, [])


def test_seed_sweep_on_the_simulator_is_reproducible():
    def accuracy(seed: int) -> dict[str, float]:
        setup = Setup(SimulatedLLM(seed=seed, error_rate=0.1))
        table = compare(world.make_tasks(6, seed=0), setup, ["react"])
        return {"react": table["react"].accuracy}

    assert seed_sweep(accuracy, range(3))["react"] == seed_sweep(accuracy, range(3))["react"]
