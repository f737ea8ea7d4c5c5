"""Budgets: a cap on calls, tokens, dollars or time stops a run cleanly, with what it has so far."""

import time

import pytest

from agentlab import world
from agentlab.agents import Agent, StepFailed, Work, world_team
from agentlab.budget import Budget, Spent, spent
from agentlab.faults import Fault
from agentlab.llm.base import Completion, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import usage_report
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.recovery import Replan, Retry
from agentlab.run import orchestrate, run_plan


def call(input_tokens=100, model="sim-large"):
    return Completion("ok", model, "test", Usage(input_tokens, 20), 1.0)


def thrifty(step, context):
    return Work(f"{step.id} done", seconds=2.0, calls=(call(), call()))


TEAM = {"a": Agent("a", thrifty)}
PLAN = Plan([Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, 6)])


def test_a_call_cap_stops_the_run_with_partial_results_usage_and_the_reason():
    run = run_plan(PLAN, TEAM, budget=Budget(calls=5))
    assert run.status == "stopped"
    assert run.reason == "budget reached: 6 model calls (cap 5)"  # the step in flight finished
    assert list(run.outputs) == ["s1", "s2", "s3"] and len(run.calls) == 6
    assert [e.step_id for e in run.trace.of_kind("skipped")] == ["s4", "s5"]
    assert run.trace.of_kind("skipped")[0].detail == "not run: budget reached: 6 model calls (cap 5)"
    assert run.trace.of_kind("stopped")[0].step_id == "run"
    assert "stopped: 3/5 steps" in run.summary()


@pytest.mark.parametrize(
    ("budget", "reason", "steps"),
    [
        (Budget(tokens=500), "budget reached: 720 tokens (cap 500)", 3),
        (Budget(cost=0.002), "budget reached: $0.0024 (cap $0.0020)", 2),
        (Budget(seconds=5.0), "budget reached: 6.0 s (cap 5 s)", 3),
    ],
)
def test_token_cost_and_time_caps(budget, reason, steps):
    run = run_plan(PLAN, TEAM, budget=budget)
    assert (run.status, run.reason, len(run.outputs)) == ("stopped", reason, steps)


def test_a_wall_clock_cap():
    def slow(step, context):
        time.sleep(0.05)
        return "ok"

    run = run_plan(PLAN, {"a": Agent("a", slow)}, clock="real", budget=Budget(seconds=0.12))
    assert run.status == "stopped" and 1 <= len(run.outputs) < len(PLAN)


def test_a_run_within_budget_is_untouched():
    assert run_plan(PLAN, TEAM, budget=Budget(calls=10, tokens=1200, seconds=10.0)).status == "done"


def test_the_budget_stops_retries_and_replans_from_running_away():
    def costly_failure(step, context):
        if step.id == "s2":
            raise StepFailed("no final answer", [call(), call()], 2.0)
        return thrifty(step, context)

    run = run_plan(PLAN, {"a": Agent("a", costly_failure)}, budget=Budget(calls=5), recovery=[Retry(5)])
    assert run.status == "stopped" and run.reason == "budget reached: 6 model calls (cap 5)"
    assert len(run.trace.of_kind("retried")) == 1  # one retry, then the cap: not five
    llm = SimulatedLLM()
    team = world_team(llm)
    task = world.sample_tasks()[1].question
    endless = [Retry(1), Replan(max_replans=5)]
    faults = [Fault(probability=1.0)]  # every step fails, every time
    run = orchestrate(
        task, LLMPlanner(llm, team), team, recovery=endless, faults=faults, budget=Budget(calls=3)
    )
    assert run.status == "stopped" and run.reason == "budget reached: 3 model calls (cap 3)"
    assert len(run.plans) == 3  # the first plan and two replans, then the budget said no


def test_planning_calls_count_against_the_budget():
    llm = SimulatedLLM()
    team = world_team(llm)
    run = orchestrate(world.sample_tasks()[1].question, LLMPlanner(llm, team), team, budget=Budget(calls=1))
    assert run.status == "stopped" and run.outputs == {}
    assert [role for _, role, _ in run.calls] == ["planner"]
    assert len(run.trace.of_kind("skipped")) == len(run.plan)


def test_spent_rolls_up_like_the_usage_report():
    calls = [("s1", "a", call()), ("s2", "a", call(50, "sim-small"))]
    report = usage_report(calls)
    used = spent(calls, 3.0)
    assert used == Spent(2, report.total.usage.total_tokens, report.total.cost, 3.0)
    assert str(used) == "2 calls, 190 tokens, $0.0006, 3.0 s"
    assert spent([("s1", "a", call(model="local-llama"))]).cost == 0.0  # unpriced: $0, no error


def test_bad_budgets_are_named():
    with pytest.raises(ValueError, match="a budget's calls must be a number >= 0"):
        Budget(calls=-1)
    with pytest.raises(ValueError, match="a budget's tokens must be a number >= 0.*got '10'"):
        Budget(tokens="10")
    with pytest.raises(TypeError, match="budget must be a Budget, got dict"):
        run_plan(PLAN, TEAM, budget={"calls": 3})


class Scripted:
    """A model that replies with the given texts in order, each call paid (100 + 50 tokens)."""

    backend = "scripted"

    def __init__(self, *texts):
        self.texts, self.asked = list(texts), 0

    def complete(self, **request):
        self.asked += 1
        return Completion(self.texts.pop(0), "scripted", "scripted", Usage(100, 50), 1.0)


GOOD = '{"steps": [{"id": "s1", "role": "a", "instruction": "go", "depends_on": []}]}'
PLAIN = {"a": Agent("a", lambda step, context: f"{step.id} done")}


def test_a_call_cap_covers_the_planners_re_asks_flat_and_in_a_hierarchy():
    """Budget(calls=2) let a planner re-asking after malformed plans pay a third call; the
    tree's budget counted it too. Now the planner asks only while the budget has room."""
    llm = Scripted("no", "still no", GOOD)
    run = orchestrate("go", LLMPlanner(llm, PLAIN), PLAIN, budget=Budget(calls=2))
    assert llm.asked == 2 and len(run.calls) == 2 and run.status == "failed"
    assert run.reason.startswith("planning failed: budget reached: 2 model calls (cap 2); no more planning")
    from agentlab.hierarchy import Hierarchy

    sim = SimulatedLLM(error_rate=1.0, error_kinds=["malformed_json"])
    node = Hierarchy(sim, depth=1, budget=Budget(calls=2)).solve(world.sample_tasks()[0].question)
    assert len(node.run.calls) == 2 and node.run.status == "failed"
    assert node.run.reason.startswith("planning failed: budget reached: 2 model calls (cap 2), all teams")
    within = orchestrate("go", LLMPlanner(Scripted("no", GOOD), PLAIN), PLAIN, budget=Budget(calls=3))
    assert within.status == "done" and len(within.calls) == 2  # a re-ask the budget has room for


def test_a_call_cap_covers_a_replans_re_asks():
    llm = Scripted(GOOD, "no", "still no", GOOD)
    options = dict(recovery=[Replan()], faults=[Fault(step="s1")], budget=Budget(calls=3))
    run = orchestrate("go", LLMPlanner(llm, PLAIN), PLAIN, **options)
    assert llm.asked == 3 and len(run.calls) == 3 and run.status == "failed"
    assert run.reason.startswith("replanning failed: budget reached: 3 model calls (cap 3); no more planning")
