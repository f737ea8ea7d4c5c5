"""Real chains from the task world, run on the simulated LLM and checked step by step."""

import random

import pytest

from agentlab.experiments import chain_band, hop_plan, measure_chains, pooled_step
from agentlab.world import chain_task, fanout_task, gold_answer


def test_a_chain_task_becomes_one_step_per_hop_each_reading_the_last():
    task = chain_task(random.Random(5), 4)
    plan, right = hop_plan(task)
    assert [s.id for s in plan] == ["s1", "s2", "s3", "s4"]
    assert plan["s1"].depends_on == () and "$" not in plan["s1"].instruction
    for i in (2, 3, 4):
        assert plan[f"s{i}"].depends_on == (f"s{i - 1}",)
        assert plan[f"s{i}"].instruction.endswith(f" of $s{i - 1}?")
        # each step's right output is the records' answer about the previous right output
        asked = plan[f"s{i}"].instruction.replace(f"$s{i - 1}", right[i - 2])
        assert right[i - 1] == gold_answer(asked)
    assert right[-1] == task.answer


def test_only_chains_have_hops():
    with pytest.raises(ValueError, match="hop_plan needs a chain .or single. task, got a 'fanout' task"):
        hop_plan(fanout_task(random.Random(0), 3))


def test_without_injected_errors_every_chain_and_every_step_is_right():
    for m in measure_chains((1, 3), runs=10, error_rate=0.0):
        assert m.answered.successes == m.flawless.successes == 10
        assert m.step.successes == m.step.trials == 10 * m.n
        assert m.calls >= 2 * 10 * m.n  # at least a lookup turn and an answer turn per step


def test_measurements_are_the_same_for_the_same_seed():
    assert measure_chains((2,), runs=15, seed=4) == measure_chains((2,), runs=15, seed=4)
    assert measure_chains((2,), runs=15, seed=4) != measure_chains((2,), runs=15, seed=5)


def test_injected_errors_make_long_chains_fail_as_p_to_the_n_predicts():
    measured = measure_chains((1, 3, 6), runs=60, error_rate=0.1, seed=1)
    p = pooled_step(measured).value
    assert 0.75 < p < 0.99  # errors happen, and some are caught by the step itself
    assert measured[0].answered.value > measured[-1].answered.value
    for m in measured:
        low, high = chain_band(p, m.n, 60)
        assert low <= m.flawless.value <= high
        assert m.answered.successes >= m.flawless.successes  # a wrong turn can lead back, never the reverse


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match=r"error_rate must be a probability in \[0, 1\], got 1.5"):
        measure_chains((1,), runs=1, error_rate=1.5)
    with pytest.raises(ValueError, match="chain length must be a whole number >= 1, got 0"):
        measure_chains((0,), runs=1)
    with pytest.raises(ValueError, match="needs at least one chain length"):
        measure_chains((), runs=1)
