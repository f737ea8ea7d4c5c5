"""Model-backed executors: `$id` references, direct tool steps, the bounded tool-use loop,
and the team for the task world."""

import pytest

from agentlab import world
from agentlab.agents import (
    Agent,
    StepFailed,
    ToolFunction,
    Work,
    model_agent,
    resolve,
    run_tool_step,
    step_prompt,
    tool_loop,
    world_team,
)
from agentlab.llm.base import Completion, ToolCall, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import usage_report
from agentlab.plan import Plan, Step, references
from agentlab.prompts import INPUTS_HEADING
from agentlab.run import run_plan

LOOKUP = ToolFunction(world.TOOLS["lookup"], world.lookup, seconds=0.25)
CALCULATE = ToolFunction(world.TOOLS["calculate"], world.calculate)


class ScriptedLLM:
    """Replies from a script, one per call, and keeps every request it was sent."""

    backend = "scripted"

    def __init__(self, *replies: Completion):
        self.replies, self.requests = list(replies), []

    def complete(self, *, system, messages, tools=(), schema=None, model=None, max_tokens=1024):
        self.requests.append(
            {"system": system, "messages": [dict(m) for m in messages], "tools": tools, "model": model}
        )
        if not self.replies:
            raise AssertionError("the script ran out: the agent made one call too many")
        return self.replies.pop(0)


def reply(text="", *calls, latency=1.0, stop=None):
    tool_calls = tuple(ToolCall(f"call{i}", name, args) for i, (name, args) in enumerate(calls))
    stop = stop or ("tool_use" if tool_calls else "end_turn")
    return Completion(text, "scripted-model", "scripted", Usage(10, 5), latency, None, tool_calls, stop)


# --- references ----------------------------------------------------------------------------------


def test_references_are_found_in_text_and_nested_arguments():
    assert references("Add $s1 and $s2, not $5.") == {"s1", "s2"}
    assert references({"entity": "$s3", "more": ["x $s4", {"deep": "$s5"}], "n": 3}) == {"s3", "s4", "s5"}


def test_resolve_puts_each_output_in_place_of_its_reference():
    context = {"s1": "215", "s2": "640"}
    assert resolve({"expression": "$s1 + $s2"}, context) == {"expression": "215 + 640"}
    assert resolve("the mentor of $s1", {"s1": "Wren Tally"}) == "the mentor of Wren Tally"


def test_a_reference_to_a_step_that_is_not_an_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"step 's3' refers to \$s2, which is not one of its inputs \(s1\)"):
        resolve("$s1 + $s2", {"s1": "1"}, "s3")


def test_the_step_prompt_has_the_instruction_filled_in_then_the_inputs():
    step = Step("s2", "researcher", "What is the age of $s1?", depends_on=("s1",))
    assert step_prompt(step, {"s1": "Petra Quist"}) == (
        f"What is the age of Petra Quist?\n\n{INPUTS_HEADING}\n- s1: Petra Quist"
    )
    assert (
        step_prompt(Step("s1", "researcher", "What is the area of Solace?"), {})
        == "What is the area of Solace?"
    )


# --- tools and direct tool steps ------------------------------------------------------------------


def test_a_tool_checks_its_arguments_against_its_spec():
    assert LOOKUP({"entity": "Varra", "attribute": "area"}) == "58"
    with pytest.raises(ValueError, match=r"lookup\(entity, attribute\): missing \['attribute'\]"):
        LOOKUP({"entity": "Varra"})
    with pytest.raises(ValueError, match=r"unexpected \['colour'\]"):
        LOOKUP({"entity": "Varra", "attribute": "area", "colour": "red"})


def test_a_direct_tool_step_calls_the_tool_with_references_resolved_and_no_model():
    step = Step(
        "s2", "researcher", "Look up", ("s1",), tool="lookup", args={"entity": "$s1", "attribute": "age"}
    )
    work = run_tool_step(step, {"s1": "Wren Tally"}, [LOOKUP])
    assert work == Work("33", 0.25, ())


def test_a_direct_tool_step_may_only_use_its_roles_tools_and_tool_errors_fail_the_step():
    step = Step("s1", "writer", "Add", tool="calculate", args={"expression": "1 + 1"})
    with pytest.raises(StepFailed, match=r"the writer may not call 'calculate' \(its tools: lookup\)"):
        run_tool_step(step, {}, [LOOKUP], "writer")
    bad = Step("s1", "researcher", "Look", tool="lookup", args={"entity": "Varr", "attribute": "area"})
    with pytest.raises(world.ToolError, match="did you mean 'Varra'"):
        run_tool_step(bad, {}, [LOOKUP])


# --- the tool-use loop -----------------------------------------------------------------------------


def test_the_loop_runs_the_tools_the_model_calls_and_hands_back_the_results():
    llm = ScriptedLLM(
        reply(
            "Looking up.", ("lookup", {"entity": "Varra", "attribute": "area"}), ("lookup", {"entity": "X"})
        ),
        reply("58"),
    )
    work = tool_loop(llm, "system", "What is the area of Varra?", [LOOKUP, CALCULATE], model="m")
    assert work.output == "58" and len(work.calls) == 2
    assert work.seconds == pytest.approx(1.0 + 0.25 + 1.0)  # two model turns and one tool call that ran
    second = llm.requests[1]
    assert second["model"] == "m" and [t.name for t in second["tools"]] == ["lookup", "calculate"]
    assert second["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "call0",
        "name": "lookup",
        "input": {"entity": "Varra", "attribute": "area"},
    }
    ok, failed = second["messages"][2]["content"]
    assert ok == {"type": "tool_result", "tool_use_id": "call0", "content": "58", "is_error": False}
    assert failed["is_error"] and "missing ['attribute']" in failed["content"]


def test_a_call_to_a_tool_the_agent_lacks_goes_back_to_the_model_as_an_error():
    llm = ScriptedLLM(reply("", ("shell", {"cmd": "ls"})), reply("sorry"))
    assert tool_loop(llm, "s", "p", [LOOKUP]).output == "sorry"
    result = llm.requests[1]["messages"][2]["content"][0]
    assert result["is_error"] and "there is no tool 'shell'; tools: lookup" in result["content"]


def test_the_loop_stops_at_max_turns_says_so_and_keeps_the_calls_it_made():
    llm = ScriptedLLM(*[reply("", ("lookup", {"entity": "Varra", "attribute": "area"}))] * 3)
    with pytest.raises(
        StepFailed, match="stopped by max_turns=3: no final answer after 3 model turns"
    ) as error:
        tool_loop(llm, "s", "p", [LOOKUP], max_turns=3)
    assert len(error.value.calls) == 3 and error.value.seconds == pytest.approx(3 * 1.25)


def test_a_reply_cut_off_at_max_tokens_fails_the_step_and_says_which_bound():
    llm = ScriptedLLM(reply("The answer is", stop="max_tokens"))
    with pytest.raises(StepFailed, match="stopped by max_tokens=5: turn 1's reply was cut off"):
        tool_loop(llm, "s", "p", max_tokens=5)


def test_a_model_agent_runs_tool_steps_itself_and_gives_instructions_to_the_model():
    llm = ScriptedLLM(reply("19"))
    agent = model_agent("researcher", "You research.", llm, [LOOKUP], description="finds facts")
    assert isinstance(agent, Agent) and agent.tools == (LOOKUP,) and agent.description == "finds facts"
    direct = Step("s1", "researcher", "Look", tool="lookup", args={"entity": "Solace", "attribute": "area"})
    assert agent(direct, {}).output == "19" and llm.requests == []
    work = agent(Step("s2", "researcher", "What is the area of Solace?"), {})
    assert work.output == "19" and llm.requests[0]["system"] == "You research."


# --- the world's team ---------------------------------------------------------------------------------


def test_the_world_team_has_three_roles_with_their_own_tools():
    team = world_team(SimulatedLLM())
    assert {role: [t.name for t in agent.tools] for role, agent in team.items()} == {
        "researcher": ["lookup", "search"],
        "analyst": ["calculate"],
        "writer": [],
    }
    assert all(agent.description for agent in team.values())


def test_each_role_can_have_its_own_model_and_usage_rolls_up_per_role_and_model():
    llm = SimulatedLLM()
    team = world_team(llm, models={"writer": "sim-small"})
    plan = Plan(
        [
            Step("s1", "researcher", "What is the population of Varra?"),
            Step("s2", "researcher", "What is the population of Tamsk?"),
            Step("s3", "analyst", "What is $s1 + $s2?", ("s1", "s2")),
            Step("s4", "writer", "Report it. The result to report is $s3.", ("s3",)),
        ]
    )
    run = run_plan(plan, team)
    assert run.deliverable == "2570"
    assert {role: {c.model for s, r, c in run.calls if r == role} for role in team} == {
        "researcher": {"sim-large"},
        "analyst": {"sim-large"},
        "writer": {"sim-small"},
    }
    report = usage_report(run)
    assert report.by_role["researcher"].calls == 4 and report.by_role["analyst"].calls == 2
    assert report.total.usage == sum((c.usage for _, _, c in run.calls), Usage())
    # a step's virtual time is its model calls' latency plus its tool calls' time
    s1 = next(slot for slot in run.slots if slot.step_id == "s1")
    latency = sum(c.latency for s, _, c in run.calls if s == "s1")
    assert s1.end - s1.start == pytest.approx(latency + team["researcher"].tools[0].seconds)
