"""Nothing spent goes uncounted: failed steps keep their calls and time, a failed planner ends the
run cleanly with its calls, and a planner reused across tasks is billed per task."""

import pytest

from agentlab import world
from agentlab.agents import Agent, StepFailed, Work, tool_loop, world_team
from agentlab.budget import Budget
from agentlab.faults import Fault
from agentlab.llm.base import Completion, ModelError, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import usage_report
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner, PlanningFailed
from agentlab.recovery import Replan
from agentlab.run import orchestrate, run_plan

TASK = world.sample_tasks()[1].question


def call(text="ok"):
    return Completion(text, "sim-large", "test", Usage(100, 10), 2.0)


def test_a_failed_step_keeps_its_calls_in_usage_and_its_seconds_on_the_clock():
    def gives_up(step, context):
        raise StepFailed("stopped by max_turns=3", [call(), call(), call()], seconds=6.0)

    plan = Plan([Step("s1", "a", "go"), Step("s2", "b", "give up"), Step("s3", "a", "join", ["s1", "s2"])])
    team = {"a": Agent("a", lambda step, context: "fine", seconds=1.0), "b": Agent("b", gives_up)}
    run = run_plan(plan, team, workers=2)
    assert [(s, r) for s, r, _ in run.calls] == [("s2", "b")] * 3
    assert run.elapsed == 6.0 and run.slots[-1].end == 6.0


class FailingLLM:
    """Answers `good` requests, then raises a ModelError, as a real API does after its retries."""

    backend = "failing"

    def __init__(self, good=0):
        self.good = good

    def complete(self, **request):
        if self.good == 0:
            raise ModelError("planner-model: the API answered 529 (overloaded_error): Overloaded")
        self.good -= 1
        return SimulatedLLM().complete(**request)


def test_a_model_error_while_planning_is_a_failed_run_with_the_reason_not_a_traceback():
    llm = FailingLLM()
    run = orchestrate(TASK, LLMPlanner(llm, world_team(llm)), world_team(llm))
    assert run.status == "failed" and run.plan is None and run.deliverable is None
    assert run.reason == (  # on every backend a planner's failure is a PlanningFailed (planners.py)
        "planning failed: attempt 1 of 3: the model call failed: "
        "ModelError: planner-model: the API answered 529 (overloaded_error): Overloaded"
    )
    assert run.trace.of_kind("failed")[0].step_id == "plan"
    assert "failed: no plan" in run.summary() and "(no plan)" in str(run)
    assert run.step_status == {"plan": "failed"}


def test_a_planner_that_runs_out_of_attempts_is_a_failed_run_that_keeps_its_calls():
    llm = SimulatedLLM(error_rate=1.0, error_kinds=["malformed_json"])
    planner = LLMPlanner(llm, world_team(llm))
    run = orchestrate(TASK, planner, world_team(llm))
    assert run.status == "failed" and run.reason.startswith(
        "planning failed: no valid plan after 3 attempt(s)"
    )
    assert [(s, r) for s, r, _ in run.calls] == [("plan", "planner")] * 3


def test_a_model_error_inside_an_executor_fails_the_step_and_keeps_the_calls_before_it():
    llm = FailingLLM(good=1)  # one turn answers (a tool call), the next one fails
    with pytest.raises(StepFailed, match="turn 2's model call failed: ModelError: planner-model") as failed:
        tool_loop(
            llm,
            "You look things up.",
            "What is the population of Varra?",
            world_team(llm)["researcher"].tools,
        )
    assert len(failed.value.calls) == 1 and failed.value.seconds > 0


class Accumulating:
    """A planner of its own that keeps every call it ever made, and hands each plan the call
    that wrote it, as any planner does to have its cost counted."""

    def __init__(self):
        self.calls = []

    def __call__(self, task):
        self.calls.append(call(f"plan for {task}"))
        return Plan([Step("s1", "writer", task)], calls=self.calls[-1:])


@pytest.mark.parametrize(
    "make", [Accumulating, lambda: LLMPlanner(SimulatedLLM(), world_team(SimulatedLLM()))]
)
def test_a_planner_reused_across_tasks_is_billed_only_for_this_task(make):
    planner = make()
    team = world_team(SimulatedLLM()) if isinstance(planner, LLMPlanner) else None
    options = {} if team is None else {"team": team}
    orchestrate(world.sample_tasks()[0].question, planner, **options)
    second = orchestrate(TASK, planner, **options)
    planning = [c for s, _, c in second.calls if s == "plan"]
    assert len(planning) == 1
    if isinstance(planner, Accumulating):
        assert planning[0].text == f"plan for {TASK}"


def test_a_plan_carries_the_calls_that_wrote_it_and_equality_ignores_them():
    a, b = call("a"), call("b")
    plan = Plan([Step("s1", "writer", "go")], calls=[a, b])
    assert plan.calls == (a, b) and Plan([Step("s1", "writer", "go")]).calls == ()
    assert plan == Plan([Step("s1", "writer", "go")])
    run = run_plan(plan, {"writer": Agent("writer", lambda step, context: "done")}, planning_calls=plan.calls)
    assert [(s, r) for s, r, _ in run.calls] == [("plan", "planner")] * 2


def test_an_llm_planner_hands_over_every_call_it_paid_for_with_the_plan_or_the_error():
    llm = SimulatedLLM(seed=3, error_rate=0.5, error_kinds=["malformed_json"])
    planner = LLMPlanner(llm, world_team(llm))
    plan = planner(TASK)
    assert plan.calls == tuple(planner.calls) and len(plan.calls) >= 1
    failing = FailingLLM(good=1)  # one bad plan paid for, then the API gives up
    bad = SimulatedLLM(error_rate=1.0, error_kinds=["malformed_json"])
    failing.complete = lambda _first=bad.complete, **r: (
        _first(**r) if failing.good and not setattr(failing, "good", 0) else FailingLLM().complete(**r)
    )
    with pytest.raises(PlanningFailed) as error:
        LLMPlanner(failing, world_team(llm))(TASK)
    assert len(error.value.calls) == 1  # the rejected plan before the API error is not lost


# --- step ids that look like the planner's keys, and resumed runs: every paid call once --------------


class Paying:
    """An agent whose every attempt pays one call (named after the step), written down in `paid`
    as it is paid; `interrupt` names a step whose first attempt dies after paying, as a process
    killed mid-step does (a KeyboardInterrupt: the run stops there, its paid attempt lost)."""

    def __init__(self, paid, interrupt=None):
        self.paid, self.interrupt = paid, interrupt

    def __call__(self, step, context):
        self.paid.append(f"{step.id} by {step.role}")
        if step.id == self.interrupt:
            self.interrupt = None
            raise KeyboardInterrupt
        return Work(f"{step.id} done", calls=(call(f"{step.id} by {step.role}"),))


class Replanner:
    """Replans a failed "s3" with one new step, paying one call for it."""

    def __init__(self, paid):
        self.paid = paid

    def replan(self, task, plan, outputs, failure):
        self.paid.append("replanning")
        return Plan([Step("s3", "a", "again")], calls=[call("replanning")])


def tricky(paid, budget=None, interrupt=None, resume=False, checkpoint=None):
    """A plan whose steps are called "plan" and "replan1", run with a replan of its last step."""
    steps = [Step("plan", "a", "1"), Step("replan1", "a", "2", ["plan"]), Step("s3", "a", "3", ["replan1"])]
    plan = Plan(steps, calls=[call("planning")])
    if not resume:
        paid.append("planning")
    options = dict(recovery=[Replan(Replanner(paid))], faults=[Fault(step="s3")], checkpoint=checkpoint)
    team = {"a": Agent("a", Paying(paid, interrupt))}
    return run_plan(plan, team, "t", planning_calls=plan.calls, budget=budget, resume=resume, **options)


def counted(run):
    return [(step, role, c.text) for step, role, c in run.calls]


EXPECTED = [
    ("plan", "planner", "planning"),
    ("plan", "a", "plan by a"),
    ("replan1", "a", "replan1 by a"),
    ("replan1", "planner", "replanning"),
    ("r1_s3", "a", "r1_s3 by a"),
]


def test_steps_called_plan_and_replan1_are_counted_apart_from_the_planners_calls():
    paid = []
    run = tricky(paid)
    assert run.status == "done" and counted(run) == EXPECTED
    assert len(run.calls) == len(paid) == 5
    report = usage_report(run)
    assert report.total.calls == 5 and report.by_role["planner"].calls == 2 and report.by_role["a"].calls == 3


def test_a_resumed_run_counts_every_call_once_however_often_it_is_resumed(tmp_path):
    path, paid = tmp_path / "run.json", []
    stopped = tricky(paid, Budget(calls=3), checkpoint=path)
    assert stopped.status == "stopped" and counted(stopped) == EXPECTED[:3]
    resumed = tricky(paid, resume=True, checkpoint=path)  # the replan happens after the resume
    assert resumed.status == "done" and counted(resumed) == EXPECTED
    again = tricky(paid, resume=True, checkpoint=path)  # a finished run, resumed: nothing to do or pay
    assert counted(again) == EXPECTED and len(paid) == 5
    assert usage_report(again).total.calls == 5


def test_a_step_redone_after_the_process_died_is_counted_and_the_lost_attempt_is_not(tmp_path):
    path, paid = tmp_path / "run.json", []
    interrupted = tricky(paid, interrupt="replan1", checkpoint=path)  # stopped at once, and kept
    assert interrupted.status == "stopped" and interrupted.reason.startswith("interrupted")
    assert paid == ["planning", "plan by a", "replan1 by a"]  # the last one was paid, then lost
    resumed = tricky(paid, resume=True, checkpoint=path)
    assert resumed.status == "done" and counted(resumed) == EXPECTED  # "replan1" redone and counted once
    assert len(paid) == len(resumed.calls) + 1  # every paid call but the one lost with the "process"


def test_a_runs_latency_is_its_planning_then_its_makespan_and_a_step_named_plan_is_not_planning():
    slow = Completion("a plan", "sim-large", "test", Usage(10, 10), 5.0)
    plan = Plan([Step("plan", "a", "go")], calls=[slow])
    team = {"a": Agent("a", lambda step, context: Work("done", 2.0, (call(),)))}
    run = run_plan(plan, team, planning_calls=plan.calls)
    assert [(s, r) for s, r, _ in run.calls] == [("plan", "planner"), ("plan", "a")]
    assert run.elapsed == 2.0 and run.latency == 7.0  # the step's own 2 s call is not planning time
