"""Handoffs: one agent active at a time, a triage that hands the conversation to the right specialist,
every transfer logged, and the classic bug (the user's request dropped on the way) with its fix."""

import random

import pytest

from agentlab import world
from agentlab.compare import TOPOLOGIES, Setup, compare
from agentlab.handoffs import Specialist, handoff, world_desk
from agentlab.llm import SimulatedLLM
from agentlab.llm.base import Completion, ModelError, Usage
from agentlab.prompts import transfer_tool

LLM = SimulatedLLM(seed=0)
CHAIN = world.chain_task(random.Random(7), 4)  # notebook 07's four-hop chain
TOTAL = world.fanout_task(random.Random(3), 3, "total")
HIGHEST = world.fanout_task(random.Random(5), 3, "highest")


def test_the_triage_hands_over_to_the_specialist_with_the_tools_the_question_needs():
    chain, total, highest = (handoff(t.question, LLM) for t in (CHAIN, TOTAL, HIGHEST))
    assert [r.transfers[0].target for r in (chain, total, highest)] == ["researcher", "analyst", "researcher"]
    for run, task in ((chain, CHAIN), (total, TOTAL), (highest, HIGHEST)):
        assert run.status == "done" and task.check(run.answer), run
        assert run.agent == run.transfers[0].target  # the specialist answered, not the triage
        agents = [agent for _, agent, _ in run.calls]
        assert agents[0] == "triage" and set(agents[1:]) == {run.agent}  # one agent active at a time
        assert run.calls[0][2].tool_calls[0].name == transfer_tool(run.agent)


def test_every_transfer_is_logged_with_its_note_and_what_the_specialist_started_from():
    run = handoff(CHAIN.question, LLM, carry="intent")
    (transfer,) = run.transfers
    assert (transfer.turn, transfer.source, transfer.target) == (1, "triage", "researcher")
    assert transfer.note == "Start here: What is the origin of Emberpeat?"  # the first hop, as a question
    assert len(transfer.sent) == 1 and CHAIN.question in transfer.sent[0]["content"]
    assert "triage -> researcher" in str(transfer) and "1 transfer(s)" in str(run)


def test_dropping_the_request_makes_the_specialist_answer_another_question_and_forwarding_it_fixes_it():
    note_only = handoff(CHAIN.question, LLM, carry="note")
    assert CHAIN.question not in note_only.transfers[0].sent[0]["content"]  # the bug, visible in the log
    first_hop = world.gold_answer("What is the origin of Emberpeat?")
    assert note_only.answer == first_hop != CHAIN.answer  # a right answer to the wrong question
    assert CHAIN.check(handoff(CHAIN.question, LLM, carry="intent").answer)


def test_on_a_batch_the_bug_costs_every_multi_step_task_and_the_fix_costs_context_not_accuracy():
    tasks = world.make_tasks(15, seed=4)
    runs = {
        carry: [handoff(t.question, LLM, carry=carry) for t in tasks]
        for carry in ("history", "note", "intent")
    }
    right = {carry: [t.check(r.answer) for t, r in zip(tasks, rs, strict=True)] for carry, rs in runs.items()}
    assert all(right["history"]) and all(right["intent"])
    assert right["note"] == [
        world.steps_needed(t.question) == 1 for t in tasks
    ]  # only one-fact questions survive
    # the specialist's first call: the whole conversation so far, or a fresh context with the request
    first = {carry: [r.calls[1][2].usage.input_tokens for r in rs] for carry, rs in runs.items()}
    assert all(i < h for i, h in zip(first["intent"], first["history"], strict=True))


def test_with_pages_the_specialist_still_reads_the_fact():
    run = handoff(CHAIN.question, LLM, world_desk(page_tokens=500))
    assert CHAIN.check(run.answer) and run.calls[-1][2].usage.input_tokens > 4 * 500


def test_a_question_no_specialist_can_take_is_answered_by_the_triage_saying_so():
    desk = world_desk()
    desk["triage"] = Specialist("triage", "routes", desk["triage"].instructions, transfers=("analyst",))
    run = handoff("Tell me a story about Varra.", LLM, desk)  # needs a search; the analyst has none
    assert run.status == "done" and run.transfers == [] and run.agent == "triage"
    assert run.answer.startswith("None of the specialists I can hand over to (analyst)")


def test_the_bound_stops_the_run_and_says_so_keeping_the_calls():
    run = handoff(CHAIN.question, LLM, max_turns=3)
    assert run.status == "stopped" and run.answer is None and len(run.calls) == 3
    assert "stopped by max_turns=3" in run.reason and run.agent == "researcher"


class Broken:
    backend = "simulated"

    def __init__(self):
        self.llm, self.calls = SimulatedLLM(seed=0), 0

    def complete(self, **request):
        self.calls += 1
        if self.calls == 2:
            paid = Completion("{", "sim-large", "simulated", Usage(50, 5), 1.0)
            raise ModelError("the API failed", [paid])
        return self.llm.complete(**request)


def test_a_model_error_ends_the_run_as_failed_with_every_call_it_paid_for():
    run = handoff(CHAIN.question, Broken())
    assert run.status == "failed" and "ModelError: the API failed" in run.reason
    assert [agent for _, agent, _ in run.calls] == ["triage", "researcher"]  # the failed call's cost too


def test_a_reply_cut_off_by_max_tokens_is_no_answer():
    run = handoff(CHAIN.question, LLM, max_tokens=5)
    assert run.status == "stopped" and run.answer is None and "stopped by max_tokens=5" in run.reason


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="carry must be one of"):
        handoff(CHAIN.question, LLM, carry="summary")
    with pytest.raises(ValueError, match="no agent 'desk' at the desk; its agents: triage, researcher"):
        handoff(CHAIN.question, LLM, start="desk")
    with pytest.raises(ValueError, match="the task must be a non-empty string"):
        handoff("  ", LLM)
    with pytest.raises(ValueError, match="max_turns must be a whole number >= 1"):
        handoff(CHAIN.question, LLM, max_turns=0)
    desk = world_desk()
    desk["triage"] = Specialist("triage", "routes", "", transfers=("researcher", "billing"))
    with pytest.raises(ValueError, match="a transfer to an agent not at the desk: triage -> billing"):
        handoff(CHAIN.question, LLM, desk)


def test_the_handoff_is_a_topology_and_adding_it_changed_no_other_row():
    tasks = world.make_tasks(10, seed=2)
    setup = Setup(SimulatedLLM(seed=0, error_rate=0.1), tool_seconds=1.0)
    before = [n for n in TOPOLOGIES if n != "handoff"]
    alone, together = compare(tasks, setup, before), compare(tasks, setup)
    assert together.rows()[:-1] == alone.rows() and together.rows()[-1].topology == "handoff"
    row = together["handoff"]
    outcomes = together.outcomes["handoff"]
    assert row.calls == sum(len(o.calls) for o in outcomes) and row.right == sum(o.right for o in outcomes)
    assert all(o.run.transfers for o in outcomes)  # the run behind each outcome, log and all
