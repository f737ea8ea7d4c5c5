"""The LLM planner: the schema as a contract, validation beyond the schema, re-asking with the
error, a clear failure when attempts run out; and the whole pipeline on the task world."""

import json

import pytest

from agentlab import world
from agentlab.agents import world_team
from agentlab.llm.base import Completion, ModelError, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import usage_report
from agentlab.monitor import audit
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import LLMPlanner, PlanningFailed, check_plan, plan_schema, planner_prompt
from agentlab.run import orchestrate, run_plan

TEAM = world_team(SimulatedLLM())
GOOD = {
    "steps": [
        {"id": "s1", "role": "researcher", "instruction": "What is the area of Solace?", "depends_on": []},
        {"id": "s2", "role": "writer", "instruction": "Report $s1.", "depends_on": ["s1"]},
    ]
}


class ScriptedLLM:
    """Replies with the given texts in order (parsed as JSON when they parse) and keeps the requests."""

    backend = "scripted"

    def __init__(self, *texts, stop="end_turn"):
        self.texts, self.requests, self.stop = list(texts), [], stop

    def complete(self, *, system, messages, tools=(), schema=None, model=None, max_tokens=1024):
        self.requests.append({"system": system, "messages": list(messages), "schema": schema, "model": model})
        text = self.texts.pop(0)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        return Completion(text, "scripted", "scripted", Usage(100, 50), 2.0, data, (), self.stop)


def solve_all(tasks, llm, tool_steps=True, workers=1):
    """(task, run or the PlanningFailed) for each task, with a fresh planner over `llm`."""
    team = world_team(llm)
    planner = LLMPlanner(llm, team, tool_steps=tool_steps)
    results = []
    for task in tasks:
        try:
            results.append((task, orchestrate(task.question, planner, team, workers=workers)))
        except PlanningFailed as failure:
            results.append((task, failure))
    return results


def right(results):
    return sum(not isinstance(run, PlanningFailed) and task.check(run.deliverable) for task, run in results)


# --- the contract --------------------------------------------------------------------------------


def test_the_prompt_lists_the_team_its_tools_and_the_rules():
    prompt = planner_prompt(TEAM)
    assert "- researcher: looks facts up in the records (tools: lookup, search)" in prompt
    assert "- writer: reports the team's final answer (tools: none)" in prompt
    assert "- lookup(entity, attribute): " in prompt and "$id" in prompt
    assert "lookup(entity" not in planner_prompt(TEAM, tool_steps=False)


def test_the_schema_names_the_roles_and_allows_tool_steps_only_when_asked():
    schema = plan_schema(TEAM)
    step = schema["properties"]["steps"]["items"]
    assert step["properties"]["role"]["enum"] == ["analyst", "researcher", "writer"]
    assert "tool" in step["properties"]
    assert "tool" not in plan_schema(TEAM, tool_steps=False)["properties"]["steps"]["items"]["properties"]


def plan_of(*steps):
    return Plan([Step(**s) for s in steps])


@pytest.mark.parametrize(
    "steps, problem",
    [
        (
            [dict(id="s1", role="writer", instruction="Report $s2.")],
            r"step 's1' refers to \$s2, which is not a step of this plan",
        ),
        (
            [
                dict(id="s1", role="researcher", instruction="What is the area of Varra?"),
                dict(id="s2", role="writer", instruction="Report $s1."),
            ],
            r"step 's2' uses \$s1 but does not list 's1' in depends_on",
        ),
        (
            [dict(id="s1", role="writer", instruction="Add", tool="calculate", args={"expression": "1 + 1"})],
            r"step 's1' calls 'calculate', which the writer may not use \(its tools: none\)",
        ),
        (
            [dict(id="s1", role="researcher", instruction="Find", tool="lookup", args={"entity": "Varra"})],
            r"step 's1': lookup takes \(entity, attribute\); missing \['attribute'\], unexpected \[\]",
        ),
    ],
)
def test_check_plan_catches_what_the_schema_cannot(steps, problem):
    with pytest.raises(PlanError, match=problem):
        check_plan(plan_of(*steps), TEAM)


# --- asking, re-asking, giving up -----------------------------------------------------------------


def test_a_valid_reply_becomes_the_plan_and_its_call_is_kept():
    llm = ScriptedLLM(json.dumps(GOOD))
    planner = LLMPlanner(llm, TEAM, model="big")
    plan = planner("What is the area of Solace?")
    assert plan.ids == ["s1", "s2"] and planner.rejected == []
    assert len(planner.calls) == 1 and llm.requests[0]["model"] == "big"
    assert llm.requests[0]["messages"] == [{"role": "user", "content": "Task: What is the area of Solace?"}]
    assert llm.requests[0]["schema"] == plan_schema(TEAM)


def test_a_bad_plan_is_re_asked_with_the_error_and_the_fix_is_accepted():
    llm = ScriptedLLM('{"steps": [', json.dumps(GOOD))
    planner = LLMPlanner(llm, TEAM)
    assert planner("What is the area of Solace?").ids == ["s1", "s2"]
    ((text, problem),) = planner.rejected
    assert text == '{"steps": [' and problem.startswith("the plan is not valid JSON")
    retry = llm.requests[1]["messages"]
    assert retry[1] == {"role": "assistant", "content": '{"steps": ['}
    assert retry[2]["content"].startswith("That plan was rejected: the plan is not valid JSON")
    assert len(planner.calls) == 2


def test_an_unknown_role_and_an_undeclared_reference_are_re_asked_too():
    unknown_role = json.dumps({"steps": [{"id": "s1", "role": "poet", "instruction": "x", "depends_on": []}]})
    undeclared = json.dumps({"steps": [{**GOOD["steps"][0]}, {**GOOD["steps"][1], "depends_on": []}]})
    planner = LLMPlanner(ScriptedLLM(unknown_role, undeclared, json.dumps(GOOD)), TEAM)
    planner("What is the area of Solace?")
    assert [problem for _, problem in planner.rejected] == [
        "step 's1' has unknown role 'poet'; known roles: ['analyst', 'researcher', 'writer']",
        "step 's2' uses $s1 but does not list 's1' in depends_on",
    ]


def test_after_max_attempts_planning_fails_clearly_and_keeps_the_calls():
    planner = LLMPlanner(ScriptedLLM("no", "still no"), TEAM, max_attempts=2)
    with pytest.raises(PlanningFailed) as failure:
        planner("What is the area of Solace?")
    assert str(failure.value).startswith(
        "no valid plan after 2 attempt(s); the last problem: the plan is not valid"
    )
    assert isinstance(failure.value, PlanError)
    assert len(failure.value.calls) == 2 and [t for t, _ in failure.value.rejected] == ["no", "still no"]


def test_a_plan_cut_off_at_max_tokens_is_rejected_as_such():
    planner = LLMPlanner(ScriptedLLM('{"steps"', stop="max_tokens"), TEAM, max_attempts=1, max_tokens=3)
    with pytest.raises(PlanningFailed, match="the plan was cut off at max_tokens=3"):
        planner("What is the area of Solace?")


def test_an_empty_task_is_refused():
    with pytest.raises(ValueError, match="the task must be a non-empty string"):
        LLMPlanner(ScriptedLLM(), TEAM)("  ")


def test_the_simulator_recovers_from_its_own_malformed_plans_by_re_asking():
    llm = SimulatedLLM(seed=0, error_rate=0.5, error_kinds=["malformed_json"])
    planner = LLMPlanner(llm, TEAM)
    recovered = gave_up = 0
    for task in world.make_tasks(20, seed=2):
        try:
            check_plan(planner(task.question), TEAM)
        except PlanningFailed as failure:  # three malformed replies in a row: 1 time in 8 at this rate
            gave_up += 1
            assert len(failure.calls) == 3
            continue
        recovered += bool(planner.rejected)
        assert len(planner.calls) == len(planner.rejected) + 1
    assert recovered > gave_up


def test_with_every_reply_malformed_the_simulator_planner_fails_after_its_attempts():
    llm = SimulatedLLM(error_rate=1.0, error_kinds=["malformed_json"])
    with pytest.raises(PlanningFailed, match="no valid plan after 3 attempt"):
        LLMPlanner(llm, TEAM)("What is the area of Solace?")


# --- planner calls count -------------------------------------------------------------------------


def test_orchestrate_counts_the_planners_calls_under_the_role_planner():
    llm = SimulatedLLM()
    team = world_team(llm)
    planner = LLMPlanner(llm, team, tool_steps=False)
    run = orchestrate("What is the total crew of Moth Queen and Tidewalker?", planner, team)
    assert run.calls[0] == ("plan", "planner", planner.calls[0])
    report = usage_report(run)
    assert set(report.by_role) == {"planner", "researcher", "analyst", "writer"}
    assert report.by_role["planner"].usage == planner.calls[0].usage


def test_replanning_shows_the_model_the_failure_and_skips_finished_work():
    llm = SimulatedLLM()
    planner = LLMPlanner(llm, TEAM)
    task = "What is the age of the governor of the home island of Jory Pike?"
    plan = planner(task)
    new = planner.replan(task, plan, {"s1": "Solace"}, "s2 (researcher): ToolError: boom")
    request = planner.calls[0]
    assert request.backend == "simulated" and len(new) == len(plan) - 1
    assert new["s1"].args == {"entity": "Solace", "attribute": "governor"}
    assert run_plan(new, TEAM, task).deliverable == world.gold_answer(task)


# --- the pipeline end to end (the done-when figures) --------------------------------------


@pytest.mark.parametrize("tool_steps", [True, False])
def test_at_error_rate_zero_every_one_of_50_tasks_is_answered_right(tool_steps):
    results = solve_all(world.make_tasks(50, seed=0), SimulatedLLM(seed=0), tool_steps)
    assert right(results) == 50
    assert all(run.status == "done" and not audit(run) for _, run in results)


def test_at_a_nonzero_error_rate_accuracy_falls_and_the_trace_shows_why():
    llm = SimulatedLLM(seed=0, error_rate=0.2)
    results = solve_all(world.make_tasks(50, seed=0), llm)
    assert 25 <= right(results) < 50
    for task, run in results:
        if isinstance(run, PlanningFailed) or task.check(run.deliverable):
            continue
        failed = run.trace.of_kind("failed")
        if run.status == "failed":  # a step broke: the trace names it and the tool's complaint
            assert failed and failed[0].step_id in run.reason and "Error" in failed[0].detail
        elif not audit(run):  # otherwise a step's output contradicts its inputs, or ...
            assert run.plan.final_step.role != "writer"  # ... the plan stopped before the answer
    assert len(llm.injected) > 0


def test_more_model_calls_give_errors_more_chances():
    """Direct tool steps make fewer model calls than agents doing every step, so fewer errors land."""
    tasks = world.make_tasks(50, seed=0)
    direct = solve_all(tasks, SimulatedLLM(seed=0, error_rate=0.2), tool_steps=True)
    agents = solve_all(tasks, SimulatedLLM(seed=0, error_rate=0.2), tool_steps=False)
    calls = [
        sum(len(run.calls) for _, run in r if not isinstance(run, PlanningFailed)) for r in (direct, agents)
    ]
    assert calls[0] < calls[1] and right(direct) > right(agents)


# --- workers -------------------------------------------------------------------------------------


def snapshot(results):
    return [
        (task.id, str(run))
        if isinstance(run, PlanningFailed)
        else (task.id, run.status, run.outputs, run.calls)
        for task, run in results
    ]


@pytest.mark.parametrize("tool_steps", [True, False])
def test_one_and_eight_workers_give_identical_outputs_and_calls(tool_steps):
    tasks = world.make_tasks(50, seed=3)
    one = solve_all(tasks, SimulatedLLM(seed=5), tool_steps, workers=1)
    eight = solve_all(tasks, SimulatedLLM(seed=5), tool_steps, workers=8)
    assert snapshot(one) == snapshot(eight)
    assert sum(r.elapsed for _, r in eight) < sum(r.elapsed for _, r in one)  # what parallelism buys


def test_with_errors_the_answers_match_across_worker_counts_and_repeat_exactly():
    tasks = world.make_tasks(50, seed=3)
    one = solve_all(tasks, SimulatedLLM(seed=5, error_rate=0.2), workers=1)
    eight = solve_all(tasks, SimulatedLLM(seed=5, error_rate=0.2), workers=8)
    again = solve_all(tasks, SimulatedLLM(seed=5, error_rate=0.2), workers=8)
    assert snapshot(eight) == snapshot(again)

    def answers(results):
        return [str(r) if isinstance(r, PlanningFailed) else (r.status, r.deliverable) for _, r in results]

    # a failure stops new steps, but parallel siblings already running still finish: only those differ
    assert answers(one) == answers(eight)


def test_tool_arguments_survive_the_strict_schema_claude_is_sent():
    """The API closes a free-form object to `{}`; each tool's own argument object must get through."""
    import jsonschema

    from agentlab.llm.anthropic import api_schema

    strict = api_schema(plan_schema(TEAM))
    step = {
        "id": "s1",
        "role": "researcher",
        "instruction": "What is the population of Varra?",
        "depends_on": [],
        "tool": "lookup",
        "args": {"entity": "Varra", "attribute": "population"},
    }
    jsonschema.validate({"steps": [step]}, strict)
    agent_step = {k: v for k, v in step.items() if k != "tool"} | {"args": {}}
    jsonschema.validate({"steps": [agent_step]}, strict)  # an agent step passes no arguments
    with pytest.raises(jsonschema.ValidationError):  # arguments no tool takes are refused
        jsonschema.validate({"steps": [dict(step, args={"city": "Varra"})]}, strict)


# --- every backend fails the same way, and every paid call is counted ------------------------


class FailingLLM(ScriptedLLM):
    """A scripted model whose call number `fail_at` (from 1) fails for good with a ModelError
    that carries one reply paid for before it gave up."""

    def __init__(self, *texts, fail_at):
        super().__init__(*texts)
        self.fail_at = fail_at

    def complete(self, **request):
        if len(self.requests) + 1 == self.fail_at:
            self.requests.append(request)
            paid = Completion("half an answer", "scripted", "scripted", Usage(7, 1))
            raise ModelError("the API answered 500: Internal server error", calls=[paid])
        return super().complete(**request)


def test_max_attempts_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ValueError, match="LLMPlanner's max_attempts must be a whole number >= 1"):
            LLMPlanner(ScriptedLLM(), TEAM, max_attempts=bad)


def test_a_model_error_while_planning_is_a_planning_failure_that_keeps_every_paid_call():
    planner = LLMPlanner(FailingLLM("not a plan", fail_at=2), TEAM)
    with pytest.raises(PlanningFailed) as failure:
        planner("What is the area of Solace?")
    assert str(failure.value) == (
        "attempt 2 of 3: the model call failed: ModelError: the API answered 500: Internal server error"
    )
    assert [c.text for c in failure.value.calls] == ["not a plan", "half an answer"]
    assert [text for text, _ in failure.value.rejected] == ["not a plan"]
    assert isinstance(failure.value.__cause__, ModelError)


def test_a_huge_bad_reply_is_quoted_back_cut_short_and_the_model_is_told():
    huge = '{"steps": "' + "x" * 100_000
    llm = ScriptedLLM(huge, json.dumps(GOOD))
    planner = LLMPlanner(llm, TEAM)
    planner("What is the area of Solace?")
    quoted = llm.requests[1]["messages"][1]["content"]
    assert quoted.startswith(huge[:8_000]) and len(quoted) < 8_200
    assert "[cut: your reply was 100,011 characters; only the first 8,000 are quoted]" in quoted
    assert planner.rejected[0][0] == huge  # what the model said is kept whole for the learner
