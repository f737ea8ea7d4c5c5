"""The success probability of a plan whose steps must all succeed."""

import pytest

from agentlab.experiments import plan_success
from agentlab.plan import Plan, Step


def chain(n: int) -> Plan:
    return Plan(
        [
            Step(f"s{i}", "writer", f"step {i}", depends_on=(f"s{i - 1}",) if i > 1 else ())
            for i in range(1, n + 1)
        ]
    )


def test_five_steps_at_ninety_percent_succeed_about_59_percent_of_the_time():
    plan = chain(5)
    assert plan_success(plan, {s.id: 0.9 for s in plan}) == pytest.approx(0.59049)
    assert plan_success(plan, {s.id: 0.95 for s in plan}) == pytest.approx(0.95**5)


def test_each_step_brings_its_own_probability_and_the_shape_does_not_matter():
    fan_in = Plan(
        [
            Step("a", "researcher", "x"),
            Step("b", "coder", "y"),
            Step("c", "writer", "z", depends_on=("a", "b")),
        ]
    )
    p = {"a": 0.5, "b": 0.8, "c": 1.0}
    assert plan_success(fan_in, p) == pytest.approx(0.4)
    assert plan_success(chain(3), {"s1": 0.5, "s2": 0.8, "s3": 1.0}) == pytest.approx(0.4)


def test_one_certain_failure_sinks_the_plan_and_certain_steps_cost_nothing():
    plan = chain(4)
    assert plan_success(plan, {"s1": 1, "s2": 1, "s3": 0, "s4": 1}) == 0
    assert plan_success(plan, {s.id: 1.0 for s in plan}) == 1


def test_a_missing_step_is_named():
    with pytest.raises(ValueError, match="no success probability for step 's2'"):
        plan_success(chain(3), {"s1": 0.9, "s3": 0.9})


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "0.9", True])
def test_a_probability_outside_zero_one_is_named(bad):
    with pytest.raises(ValueError, match=r"step 's1' must be a probability in \[0, 1\]"):
        plan_success(chain(2), {"s1": bad, "s2": 0.9})
