"""Fault injection: a chosen step fails, the same way on every run and at every worker count."""

import pytest

from agentlab import world
from agentlab.agents import Agent
from agentlab.faults import Fault, first_hit, wrong_output
from agentlab.plan import Plan, Step
from agentlab.recovery import Retry
from agentlab.run import run_plan


def echo(step, context):
    return f"{step.id}<{','.join(context.values())}>"


TEAM = {role: Agent(role, echo, seconds=1.0) for role in ("a", "b")}


def wide_plan():
    steps = [Step(f"x{i}", "a" if i % 2 else "b", f"part {i}") for i in range(8)]
    return Plan(steps + [Step("join", "a", "join", [s.id for s in steps])])


def test_a_given_step_fails_every_time_and_only_that_step():
    run = run_plan(wide_plan(), TEAM, faults=[Fault(step="x3")], workers=4)
    assert [(step_id, f.kind) for step_id, _, f in run.failures] == [("x3", "error")]
    assert run.reason == "step 'x3' (a) failed: InjectedFault: injected error fault at step 'x3', attempt 1"


def test_times_limits_a_fault_to_the_first_attempts_and_role_to_one_role():
    fault = Fault(step="s1", times=2)
    assert [fault.hits("s1", "a", n) for n in (1, 2, 3)] == [True, True, False]
    by_role = Fault(role="b")
    assert by_role.hits("s1", "b", 7) and not by_role.hits("s1", "a", 1)


def test_a_probability_is_drawn_from_the_seed_not_from_chance():
    fault = Fault(probability=0.3, seed=11)
    draws = [fault.hits(f"s{i}", "a", attempt) for i in range(400) for attempt in (1, 2, 3)]
    assert draws == [
        Fault(probability=0.3, seed=11).hits(f"s{i}", "a", n) for i in range(400) for n in (1, 2, 3)
    ]
    assert 0.25 < sum(draws) / len(draws) < 0.35
    other = [Fault(probability=0.3, seed=12).hits(f"s{i}", "a", n) for i in range(400) for n in (1, 2, 3)]
    assert other != draws


def test_the_same_faults_hit_at_every_worker_count():
    faults = [Fault(probability=0.4, seed=3)]
    runs = [run_plan(wide_plan(), TEAM, faults=faults, workers=k, recovery=[Retry(3)]) for k in (1, 3, 8)]
    hits = [sorted((step_id, f.message) for step_id, _, f in r.failures) for r in runs]
    assert len(hits[0]) >= 2 and hits[0] == hits[1] == hits[2]
    assert all(r.status == "done" and r.outputs == runs[0].outputs for r in runs)


def test_the_first_matching_fault_applies():
    faults = [Fault(step="s2", kind="sentinel"), Fault(kind="error")]
    assert first_hit(faults, "s2", "a", 1).kind == "sentinel"
    assert first_hit(faults, "s9", "a", 1).kind == "error"
    assert first_hit([], "s2", "a", 1) is None


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("error", "error"), ("sentinel", "sentinel"), ("slow", "timeout")],
)
def test_each_kind_of_fault_shows_up_as_its_kind_of_failure(kind, expected):
    run = run_plan(Plan([Step("s1", "a", "go")]), TEAM, faults=[Fault(kind=kind)], timeout=30.0)
    assert run.failures[0][2].kind == expected


def test_a_slow_fault_only_fails_where_there_is_a_timeout_and_a_wrong_one_only_where_there_is_a_check():
    plan = Plan([Step("s1", "a", "go", duration=2.0)])
    slow = run_plan(plan, TEAM, faults=[Fault(kind="slow", seconds=90.0)])
    assert slow.status == "done" and slow.elapsed == 90.0  # the fault's time beats the declared 2 s
    wrong = run_plan(plan, TEAM, faults=[Fault(kind="wrong")])
    assert wrong.status == "done" and wrong.outputs["s1"] != "s1<>"  # silently wrong


def test_a_wrong_output_is_plausible():
    assert wrong_output("2140") == "2354"
    assert wrong_output("7") == "8"
    swapped = wrong_output("Varra")
    assert swapped != "Varra" and world.ENTITIES[swapped].kind == world.ENTITIES["Varra"].kind
    assert not world.check_answer(wrong_output("Silver Heron"), "Silver Heron")
    assert wrong_output("abc") == "cba"


def test_bad_faults_are_named():
    with pytest.raises(ValueError, match="unknown fault kind 'flaky'"):
        Fault(kind="flaky")
    with pytest.raises(ValueError, match="probability must be between 0 and 1, got 1.5"):
        Fault(probability=1.5)
    with pytest.raises(ValueError, match="times must be a whole number >= 1"):
        Fault(times=0)
    with pytest.raises(TypeError, match="faults must be Fault objects, got str"):
        run_plan(wide_plan(), TEAM, faults=["x3"])
