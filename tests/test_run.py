"""The orchestrator of notebook 01: decompose -> delegate -> synthesize, with a trace."""

import pytest

from agentlab.agents import STUB_TEAM, Agent, Work
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import stub_planner
from agentlab.run import orchestrate, run_plan


def echo(step, context):
    """An executor whose output shows exactly what it was given."""
    return f"{step.id}<-[{','.join(f'{k}={v}' for k, v in context.items())}]"


ECHO_TEAM = {role: Agent(role, echo, seconds=1.0) for role in ("a", "b")}


def test_each_step_gets_exactly_its_dependencies_outputs_as_context():
    plan = Plan(
        [
            Step("x", "a", "first"),
            Step("y", "b", "second"),
            Step("z", "a", "join", depends_on=("y", "x")),
        ]
    )
    run = run_plan(plan, ECHO_TEAM)
    assert run.outputs == {"x": "x<-[]", "y": "y<-[]", "z": "z<-[y=y<-[],x=x<-[]]"}
    assert run.deliverable == run.outputs["z"]
    assert run.status == "done" and run.reason == ""


def test_report_task_is_decomposed_and_the_writer_synthesizes_every_part():
    run = orchestrate("Write a short report on planning agents.")
    assert [(s.id, s.role) for s in run.plan] == [
        ("s1", "researcher"),
        ("s2", "coder"),
        ("s3", "critic"),
        ("s4", "writer"),
    ]
    report = run.deliverable
    assert report.startswith("REPORT")
    for step_id in ("s1", "s2", "s3"):
        assert f"[{step_id}] {run.outputs[step_id]}" in report
    assert "read 1 input(s)" in run.outputs["s3"]  # the critic saw the researcher's notes


def test_simple_task_collapses_to_one_agent():
    run = orchestrate("Greet the class in one sentence.")
    assert len(run.plan) == 1 and run.plan.final_step.role == "writer"
    assert run.deliverable == "answer (one agent, no decomposition): Greet the class in one sentence."


def test_stub_planner_rejects_an_empty_task():
    with pytest.raises(ValueError, match="non-empty string"):
        stub_planner("   ")


def test_trace_has_planned_started_finished_per_step_on_a_virtual_clock():
    run = orchestrate("Write a short report on planning agents.")
    for step in run.plan:
        kinds = [e.kind for e in run.trace.for_step(step.id)]
        assert kinds == ["planned", "started", "finished"], step.id
    finished = {e.step_id: e for e in run.trace.of_kind("finished")}
    assert finished["s3"].inputs == ("s1",)
    assert finished["s4"].detail == run.deliverable
    # Sequential on the virtual clock: researcher 3 s, coder 2 s, critic 1 s, writer 2 s.
    assert [(e.step_id, e.time) for e in run.trace.of_kind("started")] == [
        ("s1", 0.0),
        ("s2", 3.0),
        ("s3", 5.0),
        ("s4", 6.0),
    ]
    assert run.elapsed == 8.0


def test_declared_duration_and_reported_seconds_set_the_clock():
    def timed(step, context):
        return Work("ok", seconds=4.5)

    team = {"a": Agent("a", timed, seconds=1.0)}
    plan = Plan([Step("x", "a", "go"), Step("y", "a", "go", depends_on=("x",), duration=0.5)])
    run = run_plan(plan, team)
    assert [(e.step_id, e.time) for e in run.trace.of_kind("finished")] == [("x", 4.5), ("y", 5.0)]


def test_a_failing_step_stops_the_run_cleanly_and_keeps_partial_results():
    def broken(step, context):
        raise RuntimeError("the sandbox is down")

    team = dict(STUB_TEAM, critic=Agent("critic", broken))
    run = orchestrate("Write a short report on planning agents.", team=team)
    assert run.status == "failed"
    assert run.reason == "step 's3' (critic) failed: RuntimeError: the sandbox is down"
    assert set(run.outputs) == {"s1", "s2"}  # nothing finished is lost
    assert run.deliverable is None
    assert [e.step_id for e in run.trace.of_kind("failed")] == ["s3"]
    skipped = run.trace.of_kind("skipped")
    assert [e.step_id for e in skipped] == ["s4"]
    assert "not run: step 's3'" in skipped[0].detail


def test_an_agent_returning_something_other_than_text_is_a_failed_step():
    team = {"a": Agent("a", lambda step, context: 42)}
    run = run_plan(Plan([Step("x", "a", "go")]), team)
    assert run.status == "failed"
    assert "the a agent returned int, not text or Work" in run.reason


def test_a_role_without_an_agent_is_a_plan_error_before_anything_runs():
    plan = Plan([Step("x", "poet", "write")])
    with pytest.raises(PlanError, match="step 'x' has unknown role 'poet'"):
        run_plan(plan, STUB_TEAM)


def test_orchestrate_rejects_a_planner_that_returns_no_plan():
    with pytest.raises(PlanError, match="the planner returned list, not a Plan"):
        orchestrate("anything", planner=lambda task: [])


def test_run_displays_as_text_and_html():
    run = orchestrate("Write a short report on planning agents.")
    text = str(run)
    assert "done: 4/4 steps in 8.0 s (virtual)" in text
    assert "Deliverable: REPORT" in text
    html = run._repr_html_()
    assert html.count("<tr>") == 1 + 3 * 4  # header + planned/started/finished per step
    assert "<b>Deliverable:</b>" in html


# --- the loop's shape: what a plain run touches, and what it does not ---------------------------


def _team():
    return {role: Agent(role, lambda step, context: f"{step.id} done") for role in ("a", "b")}


def _plan():
    return Plan([Step("s1", "a", "go"), Step("s2", "b", "go"), Step("s3", "a", "join", ["s1", "s2"])])


def test_a_plain_run_never_enters_recovery_budget_checkpoint_or_faults(monkeypatch):
    def entered(*args, **kwargs):
        raise AssertionError("a plain run called into notebook 04's machinery")

    for name in (
        "agentlab.recovery.check_policies",
        "agentlab.recovery.next_attempt",
        "agentlab.recovery.replan",
        "agentlab.checkpoint.save",
        "agentlab.checkpoint.restore",
        "agentlab.run.spent",
        "agentlab.run.first_hit",
    ):
        monkeypatch.setattr(name, entered)
    done = run_plan(_plan(), _team(), workers=2)
    failing = _team() | {"b": Agent("b", lambda step, context: 1 / 0)}
    failed = run_plan(_plan(), failing, workers=2)
    assert done.status == "done" and failed.status == "failed"
    assert failed.reason == "step 's2' (b) failed: ZeroDivisionError: division by zero"


def test_a_run_validates_its_plan_once_when_it_was_made_not_again(monkeypatch):
    import agentlab.plan

    plan = _plan()
    validated = []
    real = agentlab.plan._validate
    monkeypatch.setattr(agentlab.plan, "_validate", lambda *a: validated.append(a) or real(*a))
    assert run_plan(plan, _team(), workers=2).status == "done"
    assert validated == []  # the plan was checked when it was built; the run only meets it with the team


def test_one_worker_runs_in_the_callers_thread_more_run_at_once():
    import threading

    seen = []
    team = {"a": Agent("a", lambda step, context: seen.append(threading.current_thread().name) or "ok")}
    plan = Plan([Step("s1", "a", "x"), Step("s2", "a", "y")])
    run_plan(plan, team)
    run_plan(plan, team, timeout=5)  # a time limit needs a thread it can walk away from
    me = threading.current_thread().name
    assert seen[:2] == [me] * 2
    assert all(name.startswith("agentlab") for name in seen[2:])  # walked away from if late: a thread

    together = threading.Barrier(2, timeout=10)  # broken unless both steps are in it at once

    def meeting(step, context):
        together.wait()
        return "ok"

    run = run_plan(plan, {"a": Agent("a", meeting)}, workers=2)  # one may run on the caller's thread
    assert run.status == "done", run.reason


def test_an_agent_that_writes_into_its_steps_args_cannot_change_the_plan(tmp_path):
    """An agent writing into `step.args` changed the plan the run executes (a retry saw the
    scribbles, and the saved plan's fingerprint moved, so resuming was refused as "a different plan")."""
    from agentlab.budget import Budget
    from agentlab.recovery import Retry

    def scribbler():
        failed = set()

        def scribbles(step, context):
            seen = {key: list(value) for key, value in step.args.items()}
            step.args["notes"].append("scribbled")
            step.args["extra"] = [True]
            if step.id == "s2" and not failed:  # fails once, after scribbling: the retry must not see it
                failed.add(step.id)
                raise RuntimeError("flaky")
            return f"{step.id} saw {seen} after {','.join(context.values())}"

        return {"a": Agent("a", scribbles, seconds=1.0)}

    def plan():
        needs = [[]] + [[f"s{i}"] for i in range(1, 4)]
        return Plan([Step(f"s{i}", "a", "go", needs[i - 1], args={"notes": [f"n{i}"]}) for i in range(1, 5)])

    straight = run_plan(plan(), scribbler(), "t", recovery=[Retry(1)])
    assert straight.status == "done" and straight.plan.to_dict() == plan().to_dict()
    assert "scribbled" not in straight.deliverable and "extra" not in straight.deliverable
    path = tmp_path / "run.json"
    options = dict(checkpoint=path, recovery=[Retry(1)])
    assert run_plan(plan(), scribbler(), "t", budget=Budget(seconds=2), **options).status == "stopped"
    resumed = run_plan(plan(), scribbler(), "t", resume=True, **options)
    assert resumed.status == "done" and resumed.outputs == straight.outputs
