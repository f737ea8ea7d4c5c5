"""The phrases prompts are written with and read back by: for each one, the reader reads what the
writer writes, and no other module of the kit spells the phrase out itself. The same for the plan
schema's title, which `plan.py` writes and the simulator reads."""

import ast
import random
from pathlib import Path

import pytest

import agentlab
from agentlab import prompts, world
from agentlab.agents import Agent, step_prompt, world_team
from agentlab.compare import CHAT_SYSTEM
from agentlab.hierarchy import LEAD, LEAD_DESCRIPTION
from agentlab.llm import simulated
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import PLAN_SCHEMA_TITLE, Plan, Step
from agentlab.planners import planner_prompt
from agentlab.react import ONE_AT_A_TIME, REACT_SYSTEM, react

TEAM = world_team(SimulatedLLM())
AGE_OF_S1 = {"entity": "$s1", "attribute": "age"}


def test_a_task_request_is_read_back_as_its_task_with_or_without_a_failure_report():
    assert (
        prompts.task_of(prompts.task_request("  What is the area of Varra?  "))
        == "What is the area of Varra?"
    )
    replan = prompts.task_request("What is the area of Varra?", "Failure report\n...")
    assert prompts.task_of(replan) == "What is the area of Varra?"
    assert prompts.is_failure_report(replan) and not prompts.is_failure_report(prompts.task_request("x"))
    assert prompts.task_of("  no task line here ") == "no task line here"


def test_a_failure_report_gives_back_the_old_plan_with_completed_outputs_filled_in():
    plan = Plan(
        [
            Step("s1", "researcher", "Who is the governor of Varra?"),
            Step(
                "s2",
                "researcher",
                "What is the age of $s1?",
                ("s1",),
                "lookup",
                {"entity": "$s1", "attribute": "age"},
            ),
            Step("s3", "writer", prompts.report_instruction("How old?", "$s2"), ("s2",)),
        ]
    )
    report = prompts.failure_report(plan, {"s1": "Wren Tally"}, "s2 - ToolError: boom")
    steps, outputs = prompts.read_failure_report(prompts.task_request("How old?", report))
    assert outputs == {"s1": "Wren Tally"}
    assert [s["id"] for s in steps] == ["s1", "s2", "s3"]
    assert steps[1]["instruction"] == "What is the age of Wren Tally?"
    assert steps[1]["args"] == {"entity": "Wren Tally", "attribute": "age"}
    assert "$s2" in steps[2]["instruction"]  # not completed: the reference stays
    nothing_done = prompts.failure_report(plan, {}, "s1 - timeout")
    assert "(none)" in nothing_done and prompts.read_failure_report(nothing_done)[1] == {}
    assert prompts.read_failure_report("Failure report\nPrevious plan:\nnot JSON") == ([], {})


def test_the_team_lines_of_the_planner_prompt_are_read_back_with_their_tools():
    assert prompts.read_team(planner_prompt(TEAM)) == {
        "researcher": ("lookup", "search"),
        "analyst": ("calculate",),
        "writer": (),  # written "(tools: none)"
    }
    line = prompts.team_line("clerk", "", [])
    assert line == "- clerk: no description (tools: none)" and prompts.read_team(line) == {"clerk": ()}


def test_the_lead_description_is_read_back_with_its_number_of_parts():
    lead = Agent(LEAD, lambda step, context: "", description=LEAD_DESCRIPTION.format(parts=3))
    managed = {LEAD: lead, "analyst": TEAM["analyst"], "writer": TEAM["writer"]}
    assert prompts.read_lead(planner_prompt(managed)) == (LEAD, 3)
    assert prompts.read_lead(planner_prompt(TEAM)) is None


def test_a_step_prompt_is_read_back_as_its_instruction_and_inputs():
    step = Step("s3", "analyst", "What is $s1 + $s2?", ("s1", "s2"))
    request = step_prompt(step, {"s1": "2140", "s2": " 3875 "})
    assert prompts.INPUTS_HEADING in request
    instruction, inputs = prompts.read_step_request(request)
    assert instruction.strip() == "What is 2140 +  3875 ?" and inputs == ["2140", "3875"]
    assert prompts.read_step_request("What is 1 + 2?") == ("What is 1 + 2?", [])
    assert (
        step_prompt(Step("s1", "researcher", "What is the area of Varra?"), {})
        == "What is the area of Varra?"
    )


def test_a_report_instruction_hands_over_its_result():
    instruction = prompts.report_instruction("What is the area of Varra?", "412")
    assert prompts.reported(instruction) == "412" and prompts.is_report(instruction)
    assert prompts.reported(prompts.report_instruction("Write a poem.", "$s1", in_a_few_words=False)) == "$s1"
    assert prompts.reported("What is the area of Varra?") is None
    assert not prompts.is_report("What is the area of Varra?")
    assert world.RESULT_TO_REPORT == prompts.RESULT_TO_REPORT
    assert world.steps_needed(instruction) == 0  # a result handed over: nothing to work out
    assert prompts.report_instruction("<the task>", "$s3") in planner_prompt(TEAM)  # the prompt's example


def test_a_lookup_error_is_read_back_as_the_lookup_it_suggests_instead():
    def error(entity, attribute):
        with pytest.raises(world.ToolError) as caught:
            world.lookup(entity, attribute)
        return str(caught.value)

    assert error("Varr", "area").startswith(prompts.NO_ENTITY)
    assert prompts.did_you_mean("Varra") in error("Varr", "area")
    assert prompts.suggested_lookup(error("Varr", "area"), "Varr", "area") == ("Varra", "area")
    misspelt = error("Varra", "populaton")
    assert prompts.suggested_lookup(misspelt, "Varra", "populaton") == ("Varra", "population")
    assert prompts.suggested_lookup(error("Atlantis", "area"), "Atlantis", "area") is None


def test_the_simulator_knows_a_plan_request_by_the_title_plan_json_schema_writes():
    assert Plan.json_schema()["title"] == PLAN_SCHEMA_TITLE
    request = [{"role": "user", "content": prompts.task_request("What is the area of Varra?")}]
    titled = SimulatedLLM().complete(
        system=planner_prompt(TEAM), messages=request, schema={"title": PLAN_SCHEMA_TITLE}
    )
    assert [step["role"] for step in titled.data["steps"]] == ["researcher", "writer"]
    untitled = SimulatedLLM().complete(
        system=planner_prompt(TEAM), messages=request, schema={"title": "Other"}
    )
    assert untitled.data is None  # an agent's turn, not a plan
    for path in [Path(simulated.__file__), *Path(world.__file__).parent.glob("*.py")]:
        constants = [n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)]
        assert PLAN_SCHEMA_TITLE not in constants, f"{path.name} spells out the plan schema's title"


def test_one_tool_at_a_time_is_recognised_in_the_react_prompt_and_only_there():
    assert prompts.asks_one_at_a_time(f"{REACT_SYSTEM} {ONE_AT_A_TIME}")
    assert not prompts.asks_one_at_a_time(f"{REACT_SYSTEM} {prompts.TOGETHER}")
    assert prompts.asks_one_at_a_time("Make ONE TOOL CALL AT A TIME.")


def test_the_chat_call_is_told_who_it_is_in_the_react_agents_words():
    first = prompts.react_system(world.ARCHIPELAGO).split(" Work in a loop")[0]
    assert REACT_SYSTEM.startswith(first) and CHAT_SYSTEM == first + " Answer the question."
    assert world.ARCHIPELAGO in first


def test_a_transfer_tool_names_its_agent_and_no_other_tool_is_a_transfer():
    assert prompts.transfer_target(prompts.transfer_tool("analyst")) == "analyst"
    assert [prompts.transfer_target(name) for name in ("lookup", "transfer_to_", "transfer_analyst")] == [
        None
    ] * 3
    assert all(prompts.transfer_target(t.name) is None for t in world.TOOLS.values())


def test_a_handoff_request_forwards_the_request_word_for_word_and_the_simulator_answers_it():
    task = world.chain_task(random.Random(7), 4)
    note = "Start here: What is the origin of Emberpeat?"
    forwarded, note_only = (prompts.handoff_request(note, "triage", i) for i in (task.question, None))
    assert forwarded.startswith(f"The user's request: {task.question}\n\n") and forwarded.endswith(note)
    assert note_only == f"Note from the triage agent: {note}"
    assert react(forwarded, SimulatedLLM()).answer == task.answer
    assert react(note_only, SimulatedLLM()).answer == world.lookup(
        "Emberpeat", "origin"
    )  # the note's question


def test_a_fact_is_read_back_from_its_page_and_a_result_without_one_is_all_fact():
    page = "Varra (island): population 2140\nOstmere (island): population 3875"
    assert prompts.fact_of(prompts.with_page("2140", page)) == "2140"
    assert prompts.fact_of("Jory Pike") == "Jory Pike" and prompts.fact_of("") == ""


def test_no_other_module_spells_a_phrase_out():
    phrases = [
        prompts.FAILURE_REPORT,
        "Previous plan:",
        "Completed steps:",
        prompts.INPUTS_HEADING,
        prompts.RESULT_TO_REPORT,
        "leads a sub-team",
        "one tool at a time",
        "(tools: ",
        "did you mean",
        prompts.NO_ENTITY,
        "transfer_to_",
        "The user's request:",
        "Source page:",
    ]
    package = Path(agentlab.__file__).parent
    for path in package.rglob("*.py"):
        if path.name == "prompts.py" or path.parent.name in ("course", "checks"):  # checks hold fixtures
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and ast.get_docstring(node)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                spelt = [p for p in phrases if p in node.value]
                assert not spelt, f"{path.relative_to(package)} spells out {spelt}: use agentlab.prompts"
