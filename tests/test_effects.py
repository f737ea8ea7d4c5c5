"""Effects under retry: a lost reply and a Retry send a message twice; an idempotency key makes
the outbox send it once. The ledger is the record of what really went out."""

import hashlib
import json

from agentlab.effects import LostReply, NoticePlanner, Outbox, notice_plan, notice_team
from agentlab.recovery import Replan, Retry
from agentlab.run import run_plan

TASK = "Tell the governor the population of Varra."


def keyed(task, step, to, text):
    """The message itself: for which task, to whom, saying what; the same in every process."""
    return hashlib.sha256(json.dumps([task, to, text]).encode()).hexdigest()


def by_step(task, step, to, text):
    """Where in the plan the message was asked for: a replan renames the step."""
    return f"{task}|{step.id}|{to}"


def test_a_retried_step_that_acts_acts_twice():
    outbox = Outbox()
    run = run_plan(notice_plan(), notice_team(outbox, TASK), TASK, recovery=[Retry(1)])
    assert run.status == "done" and run.attempts["s2"] == 2
    assert [f.message.split(":")[0] for _, _, f in run.failures] == [LostReply.__name__]
    assert len(outbox.sent) == 2 and outbox.sent[0] == outbox.sent[1]  # the ledger shows both copies


def test_an_idempotency_key_makes_it_happen_once_and_the_repeat_gets_the_first_receipt():
    outbox = Outbox()
    run = run_plan(notice_plan(), notice_team(outbox, TASK, keyed), TASK, recovery=[Retry(1)])
    assert run.status == "done" and run.attempts["s2"] == 2
    assert outbox.sent == [{"to": "Ines Marrow", "text": f"{TASK} 2140"}]
    assert run.outputs["s2"] == "sent #1: message sent to Ines Marrow"


def test_a_whole_run_again_sends_nothing_new_with_keys_and_everything_again_without():
    for key, want in ((keyed, 1), (None, 4)):
        outbox = Outbox()
        for _ in range(2):
            run_plan(notice_plan(), notice_team(outbox, TASK, key), TASK, recovery=[Retry(1)])
        assert len(outbox.sent) == want


def test_without_a_retry_the_lost_reply_fails_the_run_but_the_message_went_out():
    outbox = Outbox()
    run = run_plan(notice_plan(), notice_team(outbox, TASK), TASK)
    assert run.status == "failed" and "LostReply" in run.reason
    assert len(outbox.sent) == 1


def test_different_keys_are_different_messages():
    outbox = Outbox()
    assert outbox.send_message("A", "hi", "k1") == "#1: message sent to A"
    assert outbox.send_message("A", "hi", "k2") == "#2: message sent to A"
    assert outbox.send_message("A", "hi", "k1") == "#1: message sent to A"
    assert len(outbox.sent) == 2


def test_a_replan_renames_the_step_so_a_key_on_its_id_sends_again_and_one_on_the_message_does_not():
    replan = [Replan(NoticePlanner(), max_replans=1)]
    for key, want in ((by_step, 2), (keyed, 1)):
        outbox = Outbox()
        run = run_plan(notice_plan(), notice_team(outbox, TASK, key), TASK, recovery=replan)
        assert run.status == "done" and "r1_s2" in run.outputs and "s2" not in run.outputs
        assert len(outbox.sent) == want, key.__name__


def test_a_run_resumed_from_its_checkpoint_sends_nothing_new_with_the_message_key(tmp_path):
    outbox, path = Outbox(), tmp_path / "run.json"
    team = notice_team(outbox, TASK, keyed)
    first = run_plan(notice_plan(), team, TASK, checkpoint=path)  # no recovery: the lost reply fails it
    assert first.status == "failed" and len(outbox.sent) == 1
    again = run_plan(notice_plan(), team, TASK, checkpoint=path, resume=True)
    assert again.status == "done" and again.attempts["s2"] == 2 and again.attempts["s1"] == 1
    assert len(outbox.sent) == 1 and again.outputs["s2"] == "sent #1: message sent to Ines Marrow"
