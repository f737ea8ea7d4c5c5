"""The simulator's planner specialist, "sim-planner": a model trained for planning (Plan-and-Act's
claim), so fewer planning slips, however long the plan; no more knowledge, and on agent turns an
ordinary small model. The two general profiles answer exactly as before."""

import random

import pytest

from agentlab import world
from agentlab.agents import world_team
from agentlab.llm.simulated import PROFILES, SimulatedLLM
from agentlab.llm.usage import PRICES
from agentlab.planners import plan_schema, planner_prompt
from agentlab.prompts import task_request

TEAM = world_team(SimulatedLLM())
TOOLS = [world.TOOLS[name] for name in ("lookup", "calculate")]


def plan_request(task):
    return dict(
        system=planner_prompt(TEAM),
        messages=[{"role": "user", "content": task_request(task)}],
        schema=plan_schema(TEAM),
    )


def turn_request(goal):
    return dict(system="Answer with your tools.", messages=[{"role": "user", "content": goal}], tools=TOOLS)


def slips(model, requests, rate=0.1):
    """How many of `requests` the simulator got wrong on purpose, on `model`."""
    llm = SimulatedLLM(seed=5, error_rate=rate, model=model)
    for request in requests:
        llm.complete(**request)
    return len(llm.injected)


def long_plans(count=200):
    rng = random.Random(3)
    return [plan_request(world.chain_task(rng, 6).question) for _ in range(count // 2)] + [
        plan_request(world.fanout_task(rng, 7).question) for _ in range(count // 2)
    ]


def test_it_is_a_named_profile_with_a_price_between_the_small_and_the_large_model():
    planner = PROFILES["sim-planner"]
    assert "planning" in planner.summary
    assert "invented" in PRICES["sim-planner"].note
    small, large = PRICES["sim-small"], PRICES["sim-large"]
    assert small.input < PRICES["sim-planner"].input < large.input
    assert small.output < PRICES["sim-planner"].output < large.output
    completion = SimulatedLLM(model="sim-planner").complete(**plan_request("What is the area of Varra?"))
    assert completion.model == "sim-planner" and completion.backend == "simulated"


def test_it_writes_long_plans_with_fewer_slips_than_either_general_model():
    requests = long_plans()
    counts = {model: slips(model, requests) for model in ("sim-planner", "sim-large", "sim-small")}
    assert counts["sim-planner"] < counts["sim-large"] / 2  # a quarter of the rate, with room for chance
    assert counts["sim-large"] < counts["sim-small"]


def test_its_planning_slips_do_not_grow_with_the_length_of_the_plan():
    planner = PROFILES["sim-planner"]
    assert planner.errs_times(1, planning=True) == planner.errs_times(12, planning=True)
    small = PROFILES["sim-small"]
    assert small.errs_times(12, planning=True) > small.errs_times(3, planning=True)


def test_on_agent_turns_it_is_an_ordinary_small_model():
    planner, small = PROFILES["sim-planner"], PROFILES["sim-small"]
    for steps in (1, 3, 9):
        assert planner.errs_times(steps) == small.errs_times(steps)
    turns = [turn_request(world.fanout_task(random.Random(i), 4).question) for i in range(150)]
    assert slips("sim-planner", turns) > slips("sim-large", turns)


def test_it_knows_no_more_than_the_others_same_plans_and_same_tool_calls_when_it_does_not_slip():
    for task in world.make_tasks(15, seed=2):
        models = {m: SimulatedLLM(model=m) for m in PROFILES}
        plans = {m: llm.complete(**plan_request(task.question)).text for m, llm in models.items()}
        assert plans["sim-planner"] == plans["sim-large"] == plans["sim-small"]
        calls = {m: llm.complete(**turn_request(task.question)).tool_calls for m, llm in models.items()}
        assert [c.args for c in calls["sim-planner"]] == [c.args for c in calls["sim-large"]] != []


def test_it_is_faster_than_the_large_model_and_latency_follows_its_profile():
    request = plan_request(world.fanout_task(random.Random(1), 5).question)
    planner = SimulatedLLM(model="sim-planner").complete(**request)
    large = SimulatedLLM(model="sim-large").complete(**request)
    profile = PROFILES["sim-planner"]
    expected = profile.overhead + planner.usage.output_tokens / profile.tokens_per_second
    assert planner.latency == pytest.approx(expected, abs=1e-3)
    assert planner.latency < large.latency


def test_the_general_profiles_err_the_same_on_a_plan_as_on_any_request_of_its_size():
    for name in ("sim-large", "sim-small"):
        profile = PROFILES[name]
        for steps in (0, 1, 3, 9):
            assert profile.errs_times(steps, planning=True) == profile.errs_times(steps)
