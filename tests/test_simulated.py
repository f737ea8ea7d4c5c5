"""The simulated LLM: named as a simulator, deterministic per (seed, model, request), honest
about the world (facts only from tool results), and wrong on purpose at the rate you set."""

import json
import math
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import pytest

from agentlab import world
from agentlab.agents import world_team
from agentlab.llm.base import LLM, Tool, assistant_message, tool_results_message
from agentlab.llm.simulated import ERROR_KINDS, PROFILES, SimulatedLLM, count_tokens
from agentlab.plan import Plan
from agentlab.planners import plan_schema, planner_prompt
from agentlab.prompts import failure_report, report_instruction, task_request

TEAM = world_team(SimulatedLLM())
TOOLS = [world.TOOLS[name] for name in ("lookup", "search", "calculate")]
SYSTEM = "You answer questions about the Skerrow Isles with your tools."


def plan_request(task, tool_steps=True, **extra):
    return dict(
        system=planner_prompt(TEAM, tool_steps),
        messages=[{"role": "user", "content": task_request(task)}],
        schema=plan_schema(TEAM, tool_steps),
        **extra,
    )


def turn(llm, goal, history=(), tools=TOOLS, **extra):
    return llm.complete(
        system=SYSTEM, messages=[{"role": "user", "content": goal}, *history], tools=tools, **extra
    )


def answer_tools(completion):
    """The history after `completion`: its turn and the real tools' results."""
    results, errors = {}, []
    for call in completion.tool_calls:
        try:
            results[call.id] = world.FUNCTIONS[call.name](**call.args)
        except world.ToolError as e:
            results[call.id], errors = str(e), [*errors, call.id]
    return [assistant_message(completion), tool_results_message(results, errors)]


def solve(llm, goal, max_turns=8):
    """A minimal tool loop, to watch the simulator work a question through."""
    history, calls = [], []
    for _ in range(max_turns):
        completion = turn(llm, goal, history)
        calls.append(completion)
        if not completion.tool_calls:
            return completion.text, calls
        history += answer_tools(completion)
    raise AssertionError("no answer")


# --- named as a simulator -------------------------------------------------------------------


def test_it_is_named_as_a_simulator_everywhere_it_shows():
    llm = SimulatedLLM(seed=3, error_rate=0.1)
    assert isinstance(llm, LLM)
    assert "simulator" in repr(llm) and "seed=3" in repr(llm) and "error_rate=0.1" in repr(llm)
    completion = turn(llm, "What is the population of Varra?")
    assert completion.backend == "simulated" == llm.backend
    assert completion.model == "sim-large" and all(name.startswith("sim-") for name in PROFILES)


def test_bad_settings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="error_rate must be between 0 and 1, got 1.5"):
        SimulatedLLM(error_rate=1.5)
    with pytest.raises(ValueError, match=r"unknown error kind\(s\) \['typo'\]"):
        SimulatedLLM(error_kinds=["typo"])
    with pytest.raises(
        ValueError, match="the simulator has no model 'claude-opus-5-5'; its profiles are sim-large"
    ):
        turn(SimulatedLLM(), "What is the area of Solace?", model="claude-opus-5-5")


# --- doing the work honestly ---------------------------------------------------------------


def test_a_plan_request_gets_json_that_fits_the_schema_and_validates():
    completion = SimulatedLLM().complete(
        **plan_request("What is the total crew of Moth Queen and Tidewalker?")
    )
    jsonschema.validate(completion.data, plan_schema(TEAM))
    assert json.loads(completion.text) == completion.data
    plan = Plan.from_dict(completion.data, roles=TEAM)
    assert [s.tool for s in plan] == ["lookup", "lookup", "calculate", None]
    assert plan["s3"].args == {"expression": "$s1 + $s2"} and plan["s3"].depends_on == ("s1", "s2")
    assert plan["s1"].depends_on == plan["s2"].depends_on == ()  # the two lookups can run in parallel
    assert plan.final_step.role == "writer"


def test_without_a_tool_field_in_the_schema_every_step_is_an_instruction():
    completion = SimulatedLLM().complete(
        **plan_request("Who is the captain of Silver Heron?", tool_steps=False)
    )
    steps = completion.data["steps"]
    assert all("tool" not in s for s in steps)
    assert steps[0] == {
        "id": "s1",
        "role": "researcher",
        "instruction": "What is the captain of Silver Heron?",
        "depends_on": [],
    }


def test_a_chain_becomes_dependent_steps_that_pass_references():
    completion = SimulatedLLM().complete(**plan_request("What is the age of the mentor of Wren Tally?"))
    s1, s2, _ = completion.data["steps"]
    assert s1["args"] == {"entity": "Wren Tally", "attribute": "mentor"}
    assert s2["args"] == {"entity": "$s1", "attribute": "age"} and s2["depends_on"] == ["s1"]


def test_it_reads_the_team_from_the_prompt_and_the_roles_from_the_schema():
    system = "\n".join(
        [
            "Plan for this team:",
            "- scout: finds things (tools: lookup)",
            "- clerk: adds (tools: calculate)",
            "- herald: tells",
        ]
    )
    schema = Plan.json_schema(["scout", "clerk", "herald"])
    messages = [
        {"role": "user", "content": task_request("What is the total crew of Moth Queen and Tidewalker?")}
    ]
    steps = SimulatedLLM().complete(system=system, messages=messages, schema=schema).data["steps"]
    assert [s["role"] for s in steps] == ["scout", "scout", "clerk", "herald"]


def test_a_replan_reads_facts_from_instruction_steps_too():
    llm = SimulatedLLM()
    task = "What is the age of the mentor of Wren Tally?"
    old = Plan.from_dict(llm.complete(**plan_request(task, tool_steps=False)).data, roles=TEAM)
    report = task_request(
        task, failure_report(old, {"s1": "Petra Quist"}, "s2 - StepFailed: stopped by max_turns=6")
    )
    request = plan_request(task, tool_steps=False)
    request["messages"] = [{"role": "user", "content": report}]
    new = llm.complete(**request).data["steps"]
    assert new[0]["instruction"] == "What is the age of Petra Quist?"


def test_an_agent_turn_calls_a_tool_for_each_fact_it_lacks_then_answers():
    llm = SimulatedLLM()
    first = turn(llm, "What is the age of the mentor of Wren Tally?")
    assert first.stop_reason == "tool_use"
    assert [(c.name, dict(c.args)) for c in first.tool_calls] == [
        ("lookup", {"entity": "Wren Tally", "attribute": "mentor"})
    ]
    answer, calls = solve(llm, "What is the age of the mentor of Wren Tally?")
    assert answer == world.gold_answer("What is the age of the mentor of Wren Tally?") and len(calls) == 3
    assert calls[-1].stop_reason == "end_turn" and not calls[-1].tool_calls


def test_independent_lookups_go_out_together_and_arithmetic_goes_to_the_calculator():
    llm = SimulatedLLM()
    first = turn(llm, "What is the total population of Varra, Tamsk and Solace?")
    assert [c.args["entity"] for c in first.tool_calls] == ["Varra", "Tamsk", "Solace"]
    second = turn(llm, "What is the total population of Varra, Tamsk and Solace?", answer_tools(first))
    assert [(c.name, dict(c.args)) for c in second.tool_calls] == [
        ("calculate", {"expression": "2140 + 430 + 760"})
    ]


def test_it_knows_only_what_the_tools_told_it():
    """Feed it a false tool result and it believes it: the facts come from the conversation."""
    llm = SimulatedLLM()
    first = turn(llm, "What is the population of Varra?")
    lie = [assistant_message(first), tool_results_message({first.tool_calls[0].id: "12"})]
    assert turn(llm, "What is the population of Varra?", lie).text == "12"


def test_a_tool_error_with_a_suggestion_is_followed():
    llm = SimulatedLLM()
    first = turn(llm, "What is the area of Tamks?")
    history = answer_tools(first)
    assert "did you mean 'Tamsk'" in history[-1]["content"][0]["content"]
    second = turn(llm, "What is the area of Tamks?", history)
    assert dict(second.tool_calls[0].args) == {"entity": "Tamsk", "attribute": "area"}


def test_a_writer_reports_the_result_it_is_handed_and_values_given_inline_need_no_tools():
    llm = SimulatedLLM()
    writer = turn(llm, report_instruction("What is the area of Solace?", "19"), tools=[])
    assert writer.text == "19" and not writer.tool_calls
    compare = turn(
        llm, "Which has the highest price: Bluetin (58), Emberpeat (15) or Saltwool (41)?", tools=[]
    )
    assert compare.text == "Bluetin"


def test_without_the_tool_it_needs_it_says_so_instead_of_guessing():
    text = turn(SimulatedLLM(), "What is the population of Varra?", tools=[]).text
    assert text == "I have no way to look up the population of Varra."


def test_a_request_outside_the_grammar_is_searched_for():
    first = turn(SimulatedLLM(), "Tell me about the Salt Guild.")
    assert first.tool_calls[0].name == "search" and first.tool_calls[0].args == {"query": "Salt Guild"}


def test_a_replan_reuses_what_completed_steps_found():
    llm = SimulatedLLM()
    task = "What is the age of the governor of the home island of Jory Pike?"
    old = Plan.from_dict(llm.complete(**plan_request(task)).data, roles=TEAM)
    report = task_request(task, failure_report(old, {"s1": "Solace"}, "s2 - ToolError: boom"))
    request = plan_request(task)
    request["messages"] = [{"role": "user", "content": report}]
    new = Plan.from_dict(llm.complete(**request).data, roles=TEAM)
    assert new["s1"].args == {"entity": "Solace", "attribute": "governor"}  # not the home island again
    assert len(new) == len(old) - 1


# --- determinism ---------------------------------------------------------------------------------


def test_the_same_seed_and_request_give_the_same_completion_whatever_the_order_or_thread():
    goals = [t.question for t in world.make_tasks(12, seed=5)]
    llm = SimulatedLLM(seed=11, error_rate=0.5)
    forward = [turn(llm, g) for g in goals]
    backward = [turn(llm, g) for g in reversed(goals)][::-1]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda g: turn(llm, g), goals))
    fresh = [turn(SimulatedLLM(seed=11, error_rate=0.5), g) for g in goals]
    assert forward == backward == threaded == fresh


def test_the_seed_and_the_model_change_which_calls_go_wrong():
    goals = [t.question for t in world.make_tasks(30, seed=5)]

    def texts(**options):
        return [turn(SimulatedLLM(error_rate=0.3, **options), g).text for g in goals]

    assert texts(seed=1) != texts(seed=2)
    assert texts(seed=1, model="sim-large") != texts(seed=1, model="sim-small")


# --- tokens and latency ---------------------------------------------------------------------------


def test_the_tokenizer_is_four_characters_a_token_rounded_up():
    assert [count_tokens(t) for t in ("", "a", "abcd", "abcde", "x" * 400)] == [0, 1, 1, 2, 100]


def test_usage_counts_every_part_of_the_request_and_the_reply():
    llm = SimulatedLLM()
    messages = [{"role": "user", "content": "What is 2 + 3?"}]
    tool = Tool(
        "calculate", "Add things.", {"type": "object", "properties": {"expression": {"type": "string"}}}
    )
    completion = llm.complete(system="Be brief.", messages=messages, tools=[tool])
    spec = json.dumps([tool.name, tool.description, tool.input_schema], sort_keys=True, separators=(",", ":"))
    assert completion.usage.input_tokens == count_tokens("Be brief.") + count_tokens(
        "What is 2 + 3?"
    ) + count_tokens(spec)
    call = completion.tool_calls[0]
    call_json = json.dumps({"i": dict(call.args), "n": call.name}, sort_keys=True, separators=(",", ":"))
    assert completion.usage.output_tokens == count_tokens(completion.text) + count_tokens(call_json)


def test_latency_is_overhead_plus_output_tokens_over_speed_and_the_small_model_is_faster():
    goal = "What is the total population of Varra, Tamsk and Solace?"
    for name, profile in PROFILES.items():
        completion = turn(SimulatedLLM(), goal, model=name)
        expected = profile.overhead + completion.usage.output_tokens / profile.tokens_per_second
        assert completion.latency == pytest.approx(expected, abs=1e-3)
    assert turn(SimulatedLLM(), goal, model="sim-small").latency < turn(SimulatedLLM(), goal).latency


def test_a_reply_longer_than_max_tokens_is_cut_off():
    completion = SimulatedLLM().complete(
        **plan_request("What is the age of the mentor of Wren Tally?", max_tokens=20)
    )
    assert completion.stop_reason == "max_tokens" and completion.usage.output_tokens == 20
    assert completion.data is None and len(completion.text) == 80


# --- errors on purpose -------------------------------------------------------------------------------


def erring(kind, model="sim-large"):
    return SimulatedLLM(seed=2, error_rate=1.0, error_kinds=[kind], model=model)


def test_error_rate_zero_never_errs_and_the_rate_is_the_chance_per_call():
    tasks = world.make_tasks(300, seed=9)
    clean = SimulatedLLM(error_rate=0.0)
    for task in tasks[:50]:
        clean.complete(**plan_request(task.question))
    assert clean.injected == []
    llm = SimulatedLLM(seed=4, error_rate=0.2, error_kinds=["malformed_json"])
    broken = sum(llm.complete(**plan_request(t.question)).data is None for t in tasks)
    assert broken == len(llm.injected)
    assert abs(broken / len(tasks) - 0.2) < 3 * math.sqrt(0.2 * 0.8 / len(tasks))


def test_the_small_model_errs_three_times_as_often():
    tasks = world.make_tasks(300, seed=9)
    counts = {}
    for model in PROFILES:
        llm = SimulatedLLM(seed=4, error_rate=0.1, error_kinds=["malformed_json"], model=model)
        counts[model] = sum(llm.complete(**plan_request(t.question)).data is None for t in tasks)
    assert PROFILES["sim-small"].error_factor == 3 * PROFILES["sim-large"].error_factor
    assert 2 * counts["sim-large"] < counts["sim-small"] < 4.5 * counts["sim-large"]


def test_malformed_json_is_text_no_json_parser_accepts():
    llm = erring("malformed_json")
    for task in world.make_tasks(10, seed=1):
        completion = llm.complete(**plan_request(task.question))
        assert completion.data is None
        with pytest.raises(json.JSONDecodeError):
            json.loads(completion.text)
    assert {e.kind for e in llm.injected} == {"malformed_json"}


def test_a_dropped_dependency_leaves_a_reference_without_its_dependency():
    completion = erring("dropped_dependency").complete(
        **plan_request("What is the age of the mentor of Wren Tally?")
    )
    plan = Plan.from_dict(completion.data, roles=TEAM)  # still a valid DAG: only the reference betrays it
    assert any(
        ref not in s.depends_on for s in plan for ref in ("s1", "s2") if f"${ref}" in json.dumps(s.to_dict())
    )


def test_a_plan_that_finishes_too_early_stops_before_the_answer():
    clean = (
        SimulatedLLM().complete(**plan_request("What is the total crew of Moth Queen and Tidewalker?")).data
    )
    early = erring("finished_too_early").complete(
        **plan_request("What is the total crew of Moth Queen and Tidewalker?")
    )
    assert early.data["steps"] == clean["steps"][: len(early.data["steps"])]
    assert len(early.data["steps"]) < len(clean["steps"])


def test_a_wrong_tool_argument_in_a_turn_is_refused_by_the_tool():
    llm = erring("wrong_tool_argument")
    completion = turn(llm, "What is the population of Varra?")
    (call,) = completion.tool_calls
    assert dict(call.args) != {"entity": "Varra", "attribute": "population"}
    with pytest.raises(world.ToolError, match="did you mean"):
        world.lookup(**call.args)
    assert llm.injected[0].kind == "wrong_tool_argument" and llm.injected[0].request == "turn"


def test_a_hallucinated_answer_is_plausible_but_wrong():
    llm = SimulatedLLM()
    goal = "What is the population of Varra?"
    history = answer_tools(turn(llm, goal))
    made_up = turn(erring("hallucinated_answer"), goal, history).text
    assert made_up != "2140" and 2140 * 0.5 < float(made_up) < 2140 * 1.5
    name = turn(
        erring("hallucinated_answer"), "Which has the highest price: Bluetin (58), Emberpeat (15)?", tools=[]
    )
    assert name.text in world.ENTITIES and name.text != "Bluetin"


def test_finishing_a_turn_too_early_answers_with_an_intermediate_fact():
    goal = "What is the age of the mentor of Wren Tally?"
    history = answer_tools(turn(SimulatedLLM(), goal))
    completion = turn(erring("finished_too_early"), goal, history)
    assert completion.text == "Petra Quist" and not completion.tool_calls  # the mentor, not her age


def test_every_error_kind_is_selectable():
    assert set(ERROR_KINDS) == {
        "malformed_json",
        "wrong_tool_argument",
        "hallucinated_answer",
        "dropped_dependency",
        "finished_too_early",
    }
