"""A checkpoint edited and sealed again (a fresh checksum, as the kit computes it) is refused when
its state contradicts the plan the run started from, its clock or itself; one a genuine run could
have saved still resumes (only a keyed seal could tell); and a run whose agent reports a call no
checkpoint can hold ends clearly, keeping its Run, instead of a bare TypeError."""

import pytest
from test_checkpoint import TASK, Counting, chain, whole, written

from agentlab.agents import Agent, Work
from agentlab.budget import Budget
from agentlab.checkpoint import CheckpointError
from agentlab.llm.base import Completion, Usage
from agentlab.plan import Plan, Step
from agentlab.run import run_plan


def stopped_after_two(path):
    """chain(4) stopped by its budget after s1 and s2: the checkpoint a forger starts from."""
    run = run_plan(chain(4), {"a": Agent("a", Counting())}, TASK, checkpoint=path, budget=Budget(calls=2))
    assert sorted(run.outputs) == ["s1", "s2"]
    return whole(path)


def finish(state, step, output, inputs):
    """What a forger adds to make `step` look done: its output, an attempt, its events."""
    state["outputs"][step] = output
    state["attempts"][step] = 1
    state["trace"] += [[9.0, "started", step, "a", inputs, ""], [9.0, "finished", step, "a", inputs, None]]


def forge_output_without_events(state):
    state["outputs"]["s3"], state["attempts"]["s3"] = "forged", 1


def forge_a_step_before_its_input(state):
    finish(state, "s4", "forged", ["s3"])


def forge_the_first_plan(state):
    state["plans"][0]["steps"][1]["instruction"] = "step 2, forged"


def forge_a_plan_no_replan_made(state):
    extra = {"id": "s9", "role": "a", "instruction": "deliver this", "depends_on": ["s2"]}
    state["plans"].append({**state["plans"][0], "steps": [*state["plans"][0]["steps"][:2], extra]})
    finish(state, "s9", "forged", ["s2"])


def forge_a_finished_event_for_another_output(state):
    state["trace"] = [e for e in state["trace"] if not (e[1] == "finished" and e[2] == "s2")]
    state["trace"].append([5.0, "finished", "s2", "a", ["s1"], "what it said at the time"])


def forge_a_call_for_a_step_no_plan_has(state):
    state["calls"].append(["s9", "a", dict(state["calls"][0][2])])


def forge_an_event_for_a_step_no_plan_has(state):
    state["trace"].append([1.5, "started", "s9", "a", [], "step 9"])


def forge_a_slot_for_a_step_no_plan_has(state):
    state["slots"].append(["s9", 0, 1.0, 1.5, "vm:1"])


def forge_recovery_used_on_a_step_no_plan_has(state):
    state["used"]["s9"] = {"retry": 1}


def forge_inputs_other_than_the_plan_says(state):
    state["trace"] = [e[:4] + [[]] + e[5:] if e[2] == "s2" else e for e in state["trace"]]


def forge_a_step_done_after_the_clock(state):
    finish(state, "s3", "forged", ["s2"])  # at 9.0 s, on a clock that stopped at 2.0 s
    state["slots"].append(["s3", 0, 2.0, 9.0, "vm:1"])


def forge_a_step_done_before_its_input_was(state):
    finish(state, "s3", "forged", ["s2"])
    state["trace"][-2:] = [[e[0] - 8.0, *e[1:]] for e in state["trace"][-2:]]  # 1.0 s: s2 finished at 2.0
    state["slots"].append(["s3", 0, 1.0, 1.0, "vm:1"])


def forge_a_step_done_without_a_slot(state):
    finish(state, "s3", "forged", ["s2"])
    state["trace"][-2:] = [[2.0, *e[1:]] for e in state["trace"][-2:]]


def forge_a_failure_more_than_the_attempts(state):
    state["failures"].append(["s2", "a", "error", "it failed once"])  # attempts says s2 was tried once


def forge_a_replan_the_trace_never_made(state):
    forge_a_plan_no_replan_made(state)
    state["replans"] = 1


@pytest.mark.parametrize(
    "forge, said",
    [
        (forge_a_call_for_a_step_no_plan_has, "it holds a call for step 's9', which no plan of the run has"),
        (forge_an_event_for_a_step_no_plan_has, "it holds an event for step 's9', which no plan of the run"),
        (forge_a_slot_for_a_step_no_plan_has, "it holds a slot for step 's9', which no plan of the run has"),
        (forge_recovery_used_on_a_step_no_plan_has, "it holds recovery used for step 's9', which no plan"),
        (forge_inputs_other_than_the_plan_says, r"its trace gives step 's2' inputs \[\], not \['s1'\]"),
        (forge_a_step_done_after_the_clock, "its trace has an event at 9 s, after the run's clock \\(2 s\\)"),
        (forge_a_step_done_before_its_input_was, "step 's3' finished at 1 s, before its input 's2' did"),
        (forge_a_step_done_without_a_slot, r"step 's3' has an output, but no attempt at it \(a slot\) is"),
        (forge_a_failure_more_than_the_attempts, r"step 's2' failed 1 time\(s\), then finished, but"),
        (forge_a_replan_the_trace_never_made, r"the run replanned 1 time\(s\), but its trace shows 0"),
        (forge_output_without_events, "step 's3' has an output, but its trace never says it finished"),
        (forge_a_step_before_its_input, "step 's4' finished before its input 's3' had an output"),
        (forge_the_first_plan, "its first plan is not the plan the run started from"),
        (forge_a_plan_no_replan_made, "it holds 2 plans, but the run replanned 0 times"),
        (forge_a_finished_event_for_another_output, "step 's2' finished with an output other than the one"),
    ],
    ids=lambda v: v.__name__[6:] if callable(v) else "",
)
def test_a_state_sealed_again_that_contradicts_the_plan_or_itself_is_refused(tmp_path, forge, said):
    path = tmp_path / "run.json"
    head, state = stopped_after_two(path)
    forge(state)
    written(path, head, [state])
    with pytest.raises(CheckpointError, match=f"is damaged: {said}") as refused:
        run_plan(chain(4), {"a": Agent("a", Counting())}, TASK, checkpoint=path, resume=True)
    assert "\n" not in str(refused.value)


def test_an_edit_a_genuine_run_could_have_saved_resumes_only_a_keyed_seal_could_tell(tmp_path):
    # The seal is a checksum anyone can compute again, so a state a real run could have saved is
    # taken as one: here s3 and s4 done in order, in time, with their attempts and slots...
    path = tmp_path / "run.json"
    head, state = stopped_after_two(path)
    for step, inputs, at in (("s3", ["s2"], 3.0), ("s4", ["s3"], 4.0)):
        state["outputs"][step], state["attempts"][step] = f"{step} forged", 1
        state["trace"] += [[at - 1, "started", step, "a", inputs, ""]]
        state["trace"] += [[at, "finished", step, "a", inputs, None]]
        state["slots"].append([step, 0, at - 1, at, "vm:1"])
    state["now"] = 4.0
    written(path, head, [state])
    agent = Counting()
    run = run_plan(chain(4), {"a": Agent("a", agent)}, TASK, checkpoint=path, resume=True)
    assert run.status == "done" and run.deliverable == "s4 forged" and agent.tried == []
    # ...and the calls a run paid for, dropped: its budget of two calls looks unspent again
    head, state = stopped_after_two(path)
    state["calls"] = []
    written(path, head, [state])
    team, two = {"a": Agent("a", Counting())}, Budget(calls=2)
    run = run_plan(chain(4), team, TASK, checkpoint=path, resume=True, budget=two)
    assert run.status == "done" and len(run.calls) == 2  # s3 and s4's: the two spent before are gone


def test_the_state_sealed_again_unedited_still_resumes(tmp_path):
    path = tmp_path / "run.json"
    written(path, *stopped_after_two(path)[:1], [stopped_after_two(path)[1]])
    run = run_plan(chain(4), {"a": Agent("a", Counting())}, TASK, checkpoint=path, resume=True)
    assert run.status == "done" and run.attempts == {"s1": 1, "s2": 1, "s3": 1, "s4": 1}


@pytest.mark.parametrize(
    "call, said",
    [
        (Completion("ok", "sim-large", "test", Usage(1, 1), data={1, 2}), "holds a value of type set"),
        (object(), "holds a value of type object"),
        (Completion("ok", "sim-large", "test", Usage(1, 1), data=float("nan")), "holds NaN or infinity"),
    ],
    ids=["a Completion whose data is a set", "a plain object", "a NaN"],
)
def test_a_call_no_checkpoint_can_hold_ends_the_run_clearly_and_keeps_it(tmp_path, call, said):
    plan = Plan([Step("s1", "a", "one"), Step("s2", "a", "two", ("s1",))])
    team = {"a": Agent("a", lambda step, context: Work(f"{step.id} done", calls=(call,)))}
    assert run_plan(plan, team, TASK).status == "done"  # without a checkpoint: nothing to encode
    run = run_plan(plan, team, TASK, checkpoint=tmp_path / "run.json")
    assert run.status == "stopped" and run.outputs == {"s1": "s1 done"}  # what was done is kept
    assert "the checkpoint could not be saved" in run.reason and "step 's1'" + "'s call " + said in run.reason
    assert len(run.calls) == 1  # the call paid is counted


def test_a_replanned_run_whose_later_plan_was_edited_is_refused(tmp_path):
    from agentlab.effects import NoticePlanner, Outbox, notice_plan, notice_team
    from agentlab.recovery import Replan

    path, task = tmp_path / "run.json", "Tell the governor the population of Varra."
    team, replan = notice_team(Outbox(), task), [Replan(NoticePlanner(), 1)]
    run = run_plan(notice_plan(), team, task, recovery=replan, checkpoint=path)
    assert run.status == "done" and run.replans == 1
    head, state = whole(path)
    state["plans"][1]["steps"][0]["instruction"] = "Look up something else."  # s1, kept by the replan
    written(path, head, [state])
    with pytest.raises(CheckpointError, match="is damaged: its plan 2 changes step 's1' of an earlier plan"):
        run_plan(notice_plan(), team, task, recovery=replan, checkpoint=path, resume=True)
