"""Simulated chains and DAGs agree with the exact answers, are seeded, and show correlated pass^k."""

import numpy as np
import pytest

from agentlab.experiments import (
    Estimate,
    chain_band,
    correlated_chain_success,
    pass_hat_k,
    simulate_attempts,
    simulate_chain,
    simulate_plan,
    wilson_interval,
)
from agentlab.plan import Plan, Step


def chain(n: int) -> Plan:
    return Plan(
        [Step(f"s{i}", "worker", "x", depends_on=(f"s{i - 1}",) if i > 1 else ()) for i in range(1, n + 1)]
    )


def test_wilson_interval_by_hand():
    low, high = wilson_interval(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    low, high = wilson_interval(0, 10)  # no successes still leaves room above zero
    assert low == 0 and high == pytest.approx(1.96**2 / (10 + 1.96**2), abs=1e-4)
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)


def test_an_estimate_reports_its_rate_and_interval():
    estimate = Estimate(590, 1000)
    assert estimate.value == 0.59
    assert estimate.covers(0.59049) and not estimate.covers(0.65)
    assert str(estimate) == "0.5900 (95% interval 0.5592 to 0.6201, 1,000 trials)"


@pytest.mark.parametrize(("p", "n"), [(0.9, 5), (0.95, 5), (0.99, 50), (0.5, 3)])
def test_simulated_independent_chains_agree_with_p_to_the_n(p, n):
    assert simulate_chain(p, n, 200_000, seed=1).covers(p**n)


def test_the_same_seed_gives_the_same_count_and_another_seed_another():
    assert simulate_chain(0.9, 5, 50_000, seed=3) == simulate_chain(0.9, 5, 50_000, seed=3)
    assert simulate_chain(0.9, 5, 50_000, seed=3) != simulate_chain(0.9, 5, 50_000, seed=4)
    correlated = {"correlation": 0.2, "seed": 5}
    assert simulate_chain(0.9, 5, 50_000, **correlated) == simulate_chain(0.9, 5, 50_000, **correlated)


def test_certain_steps_always_and_impossible_steps_never_succeed():
    assert simulate_chain(1.0, 40, 1000).successes == 1000
    assert simulate_chain(0.0, 1, 1000).successes == 0


def test_correlated_chains_agree_with_the_beta_formula_and_beat_p_to_the_n():
    for n in (2, 5, 20):
        estimate = simulate_chain(0.9, n, 200_000, correlation=0.2, seed=2)
        assert estimate.covers(correlated_chain_success(0.9, n, 0.2))
        assert estimate.interval[0] > 0.9**n  # strictly above, by more than the noise
    all_or_nothing = simulate_chain(0.9, 30, 100_000, correlation=1.0, seed=2)
    assert all_or_nothing.covers(0.9)


def test_a_chain_plan_is_simulated_exactly_like_a_chain():
    assert simulate_plan(chain(6), 0.9, 30_000, seed=7) == simulate_chain(0.9, 6, 30_000, seed=7)


def test_a_dag_needs_only_the_steps_upstream_of_its_deliverable():
    plan = Plan(
        [
            Step("a", "researcher", "facts"),
            Step("side", "critic", "a note nobody reads", depends_on=("a",)),
            Step("b", "coder", "sketch"),
            Step("c", "writer", "combine", depends_on=("a", "b")),
        ]
    )
    p = {"a": 0.9, "side": 0.1, "b": 0.8, "c": 0.95}
    estimate = simulate_plan(plan, p, 200_000, seed=0)
    assert estimate.covers(0.9 * 0.8 * 0.95)  # the side step's 10% does not matter
    assert not estimate.covers(0.9 * 0.1 * 0.8 * 0.95)


def test_a_diamond_counts_a_shared_step_once():
    plan = Plan(
        [
            Step("top", "r", "x"),
            Step("left", "r", "x", depends_on=("top",)),
            Step("right", "r", "x", depends_on=("top",)),
            Step("join", "r", "x", depends_on=("left", "right")),
        ]
    )
    assert simulate_plan(plan, 0.9, 200_000, seed=1).covers(0.9**4)
    correlated = simulate_plan(plan, 0.9, 200_000, correlation=0.3, seed=1)
    assert correlated.covers(correlated_chain_success(0.9, 4, 0.3))


def test_plan_simulation_names_bad_input():
    with pytest.raises(ValueError, match="no success probability for step 's2'"):
        simulate_plan(chain(3), {"s1": 0.9, "s3": 0.9})
    with pytest.raises(
        ValueError, match=r"success probability of step 's1' must be a probability in \[0, 1\]"
    ):
        simulate_plan(chain(2), {"s1": 1.5, "s2": 0.9})
    with pytest.raises(ValueError, match="correlated failures need one success probability"):
        simulate_plan(chain(2), {"s1": 0.8, "s2": 0.9}, correlation=0.2)


def test_chain_simulation_names_bad_input():
    with pytest.raises(ValueError, match="trials must be a whole number >= 1, got 0"):
        simulate_chain(0.9, 5, 0)
    with pytest.raises(ValueError, match=r"correlation must be a probability in \[0, 1\], got -0.1"):
        simulate_chain(0.9, 5, correlation=-0.1)
    with pytest.raises(ValueError, match="successes .11. cannot exceed trials .10."):
        wilson_interval(11, 10)


def test_pass_hat_k_by_hand():
    outcomes = np.array([[True, True, False], [True, True, True]])
    assert pass_hat_k(outcomes, 1) == pytest.approx((2 / 3 + 1) / 2)
    assert pass_hat_k(outcomes, 2) == pytest.approx((1 / 3 + 1) / 2)  # C(2,2)/C(3,2) and C(3,2)/C(3,2)
    assert pass_hat_k(outcomes, 3) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="pass\\^4 needs at least 4 tries per task, got 3"):
        pass_hat_k(outcomes, 4)
    with pytest.raises(ValueError, match="tasks x tries array of booleans"):
        pass_hat_k(np.array([1, 0, 1]), 1)


def test_correlated_pass_k_decays_slower_than_p_to_the_k():
    independent = simulate_attempts(0.8, 4000, 8, seed=0)
    correlated = simulate_attempts(0.8, 4000, 8, correlation=0.3, seed=0)
    assert correlated.shape == (4000, 8) and correlated.dtype == bool
    assert pass_hat_k(independent, 1) == pytest.approx(0.8, abs=0.01)
    assert pass_hat_k(correlated, 1) == pytest.approx(0.8, abs=0.02)  # the same p per try
    for k in (2, 4, 8):
        assert pass_hat_k(independent, k) == pytest.approx(0.8**k, abs=0.02)
        assert pass_hat_k(correlated, k) > 0.8**k + 0.05
        assert pass_hat_k(correlated, k) == pytest.approx(correlated_chain_success(0.8, k, 0.3), abs=0.03)


def test_the_band_of_a_repeated_experiment_surrounds_p_to_the_n_and_narrows_with_more_runs():
    low, high = chain_band(0.9, 4, 100, seed=0)
    assert low < 0.9**4 < high
    assert (low, high) == chain_band(0.9, 4, 100, seed=0)
    wide, narrow = chain_band(0.9, 4, 50), chain_band(0.9, 4, 1000)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    # a binomial's 95% range at 100 runs is about +- 2 standard deviations
    sd = (0.9**4 * (1 - 0.9**4) / 100) ** 0.5
    assert high - low == pytest.approx(4 * sd, abs=0.03)
    assert chain_band(1.0, 10, 30) == (1.0, 1.0)


def test_the_band_names_bad_input():
    with pytest.raises(ValueError, match="runs must be a whole number >= 1, got 0"):
        chain_band(0.9, 4, 0)
    with pytest.raises(ValueError, match="experiments must be a whole number >= 1"):
        chain_band(0.9, 4, 10, experiments=0)


class Counting:
    """A numpy Generator that counts the random values it hands out."""

    make = staticmethod(np.random.default_rng)

    def __init__(self, seed):
        self.rng, self.drawn = self.make(seed), 0

    def __getattr__(self, name):
        method = getattr(self.rng, name)

        def counted(*args, **kwargs):
            values = method(*args, **kwargs)
            self.drawn += np.size(values)
            return values

        return counted


@pytest.mark.parametrize("correlation", [0.0, 0.2])
def test_a_chain_costs_one_random_draw_the_step_it_first_fails_at_not_one_per_step(monkeypatch, correlation):
    import agentlab.experiments as experiments

    made = []
    monkeypatch.setattr(experiments.np.random, "default_rng",
                        lambda seed: made.append(Counting(seed)) or made[-1])
    simulate_chain(0.9, 50, 10_000, correlation=correlation, seed=0)
    per_chain = 1 if correlation == 0 else 2  # with correlation, the task's own rate is drawn first
    assert made[0].drawn == per_chain * 10_000
    monkeypatch.undo()
    a, b = (simulate_chain(0.9, 50, 10_000, correlation=correlation, seed=s) for s in (3, 3))
    assert a == b  # still one count per seed


def test_the_first_failed_step_is_geometric_so_a_long_chain_still_agrees_with_p_to_the_n():
    for p, n in ((0.9, 50), (0.999, 1000), (0.3, 2)):
        assert simulate_chain(p, n, 400_000, seed=11).covers(p**n)
    assert chain_band(0.9, 5, 100, seed=0)[0] < 0.9**5 < chain_band(0.9, 5, 100, seed=0)[1]
