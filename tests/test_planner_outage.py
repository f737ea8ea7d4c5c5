"""The planner as a bottleneck and a single point of failure (notebook 10): a slow planner delays
every step by its extra seconds, a dead one fails the run before any executor is asked, and a
FallbackPlanner keeps the run going on its next planner, with every call it paid for counted."""

import pytest

from agentlab.agents import world_team
from agentlab.faults import FaultyLLM
from agentlab.llm import ModelError, SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import FallbackPlanner, LLMPlanner, PlanningFailed, stub_planner
from agentlab.recovery import Replan
from agentlab.run import orchestrate
from agentlab.world.tasks import make_tasks

TASK = make_tasks(3, seed=4)[1]


def team_and_model():
    llm = SimulatedLLM(seed=7)
    return world_team(llm), llm


def planner(llm, team, **options):
    return LLMPlanner(llm, team, tool_steps=False, **options)


def planning_seconds(run):
    return run.latency - run.elapsed


def test_a_slower_planner_delays_the_run_by_its_extra_seconds_and_changes_nothing_else():
    team, llm = team_and_model()
    healthy = orchestrate(TASK.question, planner(llm, team), team, workers=2)
    slow = orchestrate(TASK.question, planner(FaultyLLM(llm, slower=5), team), team, workers=2)
    assert slow.status == healthy.status == "done"
    assert slow.outputs == healthy.outputs and slow.elapsed == healthy.elapsed  # the same work
    assert planning_seconds(healthy) > 0
    assert planning_seconds(slow) == pytest.approx(5 * planning_seconds(healthy), rel=1e-6)
    assert slow.latency - healthy.latency == pytest.approx(4 * planning_seconds(healthy), rel=1e-6)


def test_a_dead_planner_fails_the_run_before_any_executor_is_asked():
    team, llm = team_and_model()
    run = orchestrate(TASK.question, planner(FaultyLLM(llm, down=True), team), team, workers=2)
    assert run.status == "failed" and run.plan is None and run.outputs == {}
    assert run.calls == [] and run.latency == 0
    assert run.reason.startswith("planning failed:") and "model is down" in run.reason


def test_faulty_llm_refuses_every_call_when_down_and_says_which_backend():
    with pytest.raises(ModelError, match="simulated model is down"):
        FaultyLLM(SimulatedLLM(), down=True).complete(system="s", messages=[{"role": "user", "content": "?"}])
    assert FaultyLLM(SimulatedLLM()).backend == "simulated"


@pytest.mark.parametrize("slower", [0, -1, float("nan"), "5", True])
def test_faulty_llm_rejects_a_slowdown_that_is_not_a_positive_factor(slower):
    with pytest.raises(ValueError, match="FaultyLLM's slower"):
        FaultyLLM(SimulatedLLM(), slower=slower)


def test_a_fallback_planner_plans_when_the_first_is_down_and_the_run_is_done():
    team, llm = team_and_model()
    dead = planner(FaultyLLM(llm, down=True), team)
    spare = planner(llm, team, model="sim-small")
    run = orchestrate(TASK.question, FallbackPlanner([dead, spare]), team, workers=2)
    assert run.status == "done" and TASK.check(run.deliverable)
    planning = [c for step, role, c in run.calls if role == "planner"]
    assert planning and {c.model for c in planning} == {"sim-small"}


def test_the_calls_a_failed_planner_paid_for_travel_with_the_fallbacks_plan():
    team, llm = team_and_model()
    broken = SimulatedLLM(seed=7, error_rate=1.0, error_kinds=["malformed_json"])
    flaky = LLMPlanner(broken, team, max_attempts=2)
    plan = FallbackPlanner([flaky, stub_planner])(TASK.question)
    assert plan == stub_planner(TASK.question)
    assert len(plan.calls) == 2  # the two rejected plans, paid for, now counted with the plan


def test_when_every_planner_fails_the_error_names_each_failure():
    team, llm = team_and_model()
    dead = LLMPlanner(FaultyLLM(llm, down=True), team)

    def refuses(task):
        raise RuntimeError("no planner here")

    with pytest.raises(PlanningFailed) as caught:
        FallbackPlanner([dead, refuses])(TASK.question)
    message = str(caught.value)
    assert message.startswith("every planner failed: planner 1 of 2:") and "model is down" in message
    assert "planner 2 of 2: RuntimeError: no planner here" in message


def test_a_fallback_planner_replans_with_the_first_planner_that_can():
    team, llm = team_and_model()
    dead = planner(FaultyLLM(llm, down=True), team)
    fallback = FallbackPlanner([stub_planner, dead, planner(llm, team)])
    Replan(fallback)  # it has the replan method Replan asks for
    plan = Plan([Step("s1", "researcher", TASK.question)])
    new = fallback.replan(TASK.question, plan, {}, "step 's1' failed")
    assert isinstance(new, Plan) and len(new) >= 1


@pytest.mark.parametrize("planners", [[], [None], ["stub"]])
def test_a_fallback_planner_needs_planners_it_can_call(planners):
    with pytest.raises(ValueError, match="FallbackPlanner takes a list of planners"):
        FallbackPlanner(planners)
