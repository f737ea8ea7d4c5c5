"""Planning on Claude through the real SDK fails and counts the way it does on the simulator:
the planner alone judges a plan and re-asks, a failure is a `PlanningFailed` holding every call
paid for, and each paid HTTP request is one call in the run's counts and its budget."""

import json

import pytest
from fake_api import FakeAPI, claude, error, text

from agentlab.agents import world_team
from agentlab.budget import Budget
from agentlab.llm import Usage
from agentlab.planners import LLMPlanner, PlanningFailed, plan_schema
from agentlab.run import orchestrate

TASK = "What is the population of Varra?"
ONE_STEP = {"steps": [{"id": "s1", "role": "writer", "instruction": "Say hi.", "depends_on": []}]}
NOT_A_PLAN = "First look it up, then write it down."

pytestmark = pytest.mark.usefixtures("no_network")  # the SDK must never reach a real server


def test_a_plan_that_never_fits_is_a_planning_failure_on_claude_too():
    api = FakeAPI(*[text(NOT_A_PLAN, usage={"input_tokens": 100, "output_tokens": 7}) for _ in range(3)])
    llm = claude(api)
    with pytest.raises(PlanningFailed) as failure:
        LLMPlanner(llm, world_team(llm))(TASK)
    assert str(failure.value).startswith("no valid plan after 3 attempt(s)")
    assert len(api.requests) == 3  # the planner's three attempts, no hidden re-asks below it
    assert [c.usage for c in failure.value.calls] == [Usage(100, 7)] * 3


def test_the_backend_returns_what_the_model_said_and_the_planner_re_asks_with_the_problem():
    bad = {"steps": [{"id": "s1", "role": "poet", "instruction": "Say hi.", "depends_on": []}]}
    api = FakeAPI(text(json.dumps(bad)), text(json.dumps(ONE_STEP)))
    llm = claude(api)
    schema = plan_schema(world_team(llm))
    first = llm.complete(system="You plan.", messages=[{"role": "user", "content": TASK}], schema=schema)
    assert first.data == bad  # parsed, not judged: judging a plan is the planner's job

    api = FakeAPI(text(json.dumps(bad)), text(json.dumps(ONE_STEP)))
    llm = claude(api)
    plan = LLMPlanner(llm, world_team(llm))(TASK)
    assert plan.ids == ["s1"] and len(plan.calls) == 2 == len(api.requests)
    assert "step 's1' has unknown role 'poet'" in api.bodies[1]["messages"][2]["content"]


def test_a_paid_reply_then_an_api_error_keeps_the_paid_reply_in_the_failure_and_the_run():
    api = FakeAPI(text(NOT_A_PLAN, usage={"input_tokens": 90, "output_tokens": 9}), error(500, "boom"))
    llm = claude(api)
    team = world_team(llm)
    with pytest.raises(PlanningFailed) as failure:
        LLMPlanner(llm, team)(TASK)
    assert "attempt 2 of 3: the model call failed: ModelError: planner-model: the API answered 500" in str(
        failure.value
    )
    assert [c.usage for c in failure.value.calls] == [Usage(90, 9)]

    api = FakeAPI(text(NOT_A_PLAN, usage={"input_tokens": 90, "output_tokens": 9}), error(500, "boom"))
    llm = claude(api)
    run = orchestrate(TASK, LLMPlanner(llm, team), team)
    assert run.status == "failed" and run.reason.startswith("planning failed: attempt 2 of 3")
    assert len(run.calls) == 1


def test_every_paid_request_is_one_call_so_a_budget_of_two_stops_after_two():
    def api():
        return FakeAPI(text(NOT_A_PLAN), text(json.dumps(ONE_STEP)), text("hi", model="executor-model"))

    unbounded = api()
    llm = claude(unbounded)
    team = world_team(llm)
    run = orchestrate(TASK, LLMPlanner(llm, team), team)
    assert run.status == "done" and len(run.calls) == len(unbounded.requests) == 3

    capped = api()
    llm = claude(capped)
    team = world_team(llm)
    run = orchestrate(TASK, LLMPlanner(llm, team), team, budget=Budget(calls=2))
    assert run.status == "stopped" and "2 model calls (cap 2)" in run.reason
    assert len(run.calls) == len(capped.requests) == 2
