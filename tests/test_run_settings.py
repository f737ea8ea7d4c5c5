"""What run_plan and orchestrate are given, and what a planner or an agent hands back: anything
wrong is one clear line (a TypeError naming what a team must be, a failed Run saying what the
planner did), never a traceback from deep inside (issue 22, Low)."""

from concurrent import futures

import pytest

from agentlab.agents import Agent, Work
from agentlab.attempt import pool_failure
from agentlab.budget import Budget
from agentlab.cluster import TasksFailed
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate, run_plan

PLAN = Plan([Step("s1", "writer", "write")])


@pytest.mark.parametrize("team", [None, [Agent("writer", lambda s, c: "x")], "writer"])
def test_a_team_that_is_not_a_mapping_is_refused_saying_what_a_team_is(team):
    for call in (lambda: run_plan(PLAN, team), lambda: orchestrate("Write it.", lambda task: PLAN, team)):
        with pytest.raises(TypeError, match="^team must be a mapping from role to Agent"):
            call()


def test_a_team_of_plain_functions_is_refused_naming_the_role_and_the_fix():
    """Each step used to fail with "'str' object has no attribute 'output'"."""
    with pytest.raises(TypeError, match=r"team\['writer'\] must be an Agent, got a function: wrap"):
        run_plan(PLAN, {"writer": lambda step, context: "done"})


def test_a_planner_that_raises_anything_is_a_failed_run_with_the_reason():
    def broken(task):
        raise KeyError("steps")

    run = orchestrate("Write it.", broken, {"writer": Agent("writer", lambda s, c: "x")})
    assert run.status == "failed" and run.reason == "planning failed: KeyError: 'steps'"


def test_a_backend_that_returns_no_completion_while_planning_is_a_failed_run():
    class Sloppy:
        backend = "sloppy"

        def complete(self, **request):
            return "a plan, honest"

    team = {"writer": Agent("writer", lambda s, c: "x", description="writes")}
    run = orchestrate("Write it.", LLMPlanner(Sloppy(), team), team)
    assert run.status == "failed" and run.reason.startswith("planning failed: ")
    assert "str" in run.reason


def test_calls_that_are_not_completions_are_counted_under_a_budget_without_a_crash():
    """`spent` read `.usage` of every call: a plain value crashed the loop."""
    def act(step, context):
        return Work("done", calls=({"tokens": 5}, "a call"))

    steps = [Step("s1", "w", "a"), Step("s2", "w", "b", ["s1"]), Step("s3", "w", "c", ["s2"])]
    run = run_plan(Plan(steps), {"w": Agent("w", act)}, budget=Budget(calls=3))
    assert run.status == "stopped" and "4 model calls (cap 3)" in run.reason
    assert len(run.calls) == 4


def test_pool_and_batch_failures_read_as_one_line():
    said = pool_failure(futures.CancelledError())
    assert "cancelled" in said and "scheduler" in said  # a cluster that is gone, said so
    trace = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 40 + "ValueError: bad"
    failed = TasksFailed([None], {0: f"RuntimeError: {trace}"})
    assert "\n" not in str(failed) and len(str(failed)) < 400


def test_a_checkpoint_that_cannot_be_written_mid_run_stops_the_run_and_keeps_it(tmp_path, monkeypatch):
    """A full disk at step 2 raised OSError out of run_plan: the Run and its outputs were lost."""
    import os

    from agentlab.checkpoint import load

    real = os.write

    def fills_up(handle, data):
        if b"s2 done" in bytes(data):  # the start and step 1 are saved; then the disk is full
            raise OSError(28, "No space left on device")
        return real(handle, data)

    monkeypatch.setattr(os, "write", fills_up)
    chain = Plan([Step("s1", "w", "a"), Step("s2", "w", "b", ["s1"]), Step("s3", "w", "c", ["s2"])])
    team = {"w": Agent("w", lambda step, context: f"{step.id} done")}
    run = run_plan(chain, team, checkpoint=tmp_path / "run.json")
    assert run.status == "stopped" and "No space left on device" in run.reason
    assert load(tmp_path / "run.json", "")["outputs"] == {"s1": "s1 done"}  # the failed save was taken back
    assert run.outputs == {"s1": "s1 done", "s2": "s2 done"}  # nothing lost
