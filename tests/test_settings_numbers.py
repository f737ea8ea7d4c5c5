"""Every number a learner can pass to the kit is checked where it is read: NaN, infinity, a
bool or text is refused with a message naming the setting, instead of a loop that never ends,
a reply never cut off, or a TypeError from deep inside."""

import math

import pytest

from agentlab import world
from agentlab.agents import model_agent, tool_loop, world_team
from agentlab.llm.simulated import SimulatedLLM
from agentlab.monitor import code_critic, run_python

BAD = [math.nan, math.inf, -1, 0, True, "3", 1.5]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("setting", ["max_turns", "max_tokens"])
def test_a_model_agent_and_its_tool_loop_refuse_a_bad_limit(setting, value):
    llm = SimulatedLLM()
    with pytest.raises(ValueError, match=f"^{setting} must be a whole number >= 1, got "):
        model_agent("researcher", "You look things up.", llm, **{setting: value})
    with pytest.raises(ValueError, match=f"^{setting} must be a whole number >= 1"):
        tool_loop(llm, "You look things up.", "What is the area of Varra?", **{setting: value})


@pytest.mark.parametrize("value", BAD)
def test_a_world_team_refuses_a_bad_max_turns_when_it_is_built(value):
    with pytest.raises(ValueError, match="^max_turns must be a whole number >= 1"):
        world_team(SimulatedLLM(), max_turns=value)


@pytest.mark.parametrize("value", [math.nan, -1, 0, True])
def test_the_simulator_refuses_a_bad_max_tokens(value):
    with pytest.raises(ValueError, match="^max_tokens must be a whole number >= 1"):
        SimulatedLLM().complete(system="s", messages=[{"role": "user", "content": "hi"}], max_tokens=value)


@pytest.mark.parametrize("value", [math.nan, math.inf, 0, -2, "5"])
def test_a_code_check_refuses_a_bad_timeout(value):
    with pytest.raises(ValueError, match="timeout must be a number > 0"):
        run_python("print(1)", timeout=value)
    with pytest.raises(ValueError, match="timeout must be a number > 0"):
        code_critic("assert True", timeout=value)


@pytest.mark.parametrize("value", [math.nan, -1, 2.5, True])
def test_make_tasks_refuses_a_count_that_is_not_a_whole_number(value):
    with pytest.raises(ValueError, match="count must be a whole number >= 0"):
        world.make_tasks(value)
    assert len(world.make_tasks(3)) == 3
