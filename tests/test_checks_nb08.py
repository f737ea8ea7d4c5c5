"""The checks of notebook 08's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

from pathlib import Path

import notebook_code
import pytest

from agentlab.checks import CheckFailed, check, nb08
from agentlab.guardrails import AuditLog
from agentlab.world.injection import without_injections

SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "08_guardrails.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["08.denied", "08.policy", "08.sanitise", "08.safe-replan"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 08.denied ------------------------------------------------------------------------------------


def test_denied_passes_the_solution(capsys):
    check("08.denied", solution("denied"))
    assert "All 4 checks passed." in capsys.readouterr().out


def test_denied_fails_counting_approved_calls_as_refused(capsys):
    def not_allowed(log):
        return [(e.step, e.role, e.tool) for e in log if e.decision != "allowed"]

    with pytest.raises(CheckFailed, match="an approved call is not denied"):
        check("08.denied", not_allowed)
    out = capsys.readouterr().out
    assert "✓ the forged errand under the office policy: 1 denied" in out
    assert "✗ a log with allowed, approved, denied and failed calls: 2 denied: got [('s4', 'clerk'" in out


def test_denied_fails_handing_back_whole_entries(capsys):
    with pytest.raises(CheckFailed, match="3 of 4 checks failed"):
        check("08.denied", lambda log: [e for e in log if e.decision == "denied"])
    assert "got [Entry(n=4, step='s4', role='clerk', tool='send_message'" in capsys.readouterr().out


def test_the_mixed_log_has_every_kind_of_entry():
    log = nb08.mixed_log()
    assert {e.decision for e in log} == {"allowed", "approved", "denied"}
    assert {e.outcome for e in log} == {"ok", "error", "not run"}
    assert nb08.denied_answer(AuditLog.from_json(log.to_json())) == nb08.denied_answer(log)


# --- 08.policy ------------------------------------------------------------------------------------


def test_policy_passes_the_solution(capsys):
    check("08.policy", solution("clerk_only"))
    assert "All 9 checks passed." in capsys.readouterr().out


def test_policy_fails_notebook_08s_office_policy_which_ignores_who_asks(capsys):
    with pytest.raises(CheckFailed, match="4 of 9 checks failed. Hint: look at who asks"):
        check("08.policy", nb08.office_mail)
    out = capsys.readouterr().out
    assert "✗ a researcher messages Anselm Dray → denied: approved: an approver said yes" in out
    assert "✓ the errand with a forged record: nothing goes to Corvin Pell" in out
    assert "✗ a ReAct agent obeying 30 planted notes: nothing acts: scenarios that acted: ['i01'," in out


def test_policy_fails_trusting_the_clerk_with_anything(capsys):
    with pytest.raises(CheckFailed, match="3 of 9 checks failed"):
        check("08.policy", lambda request: request.role == "clerk")
    out = capsys.readouterr().out
    assert "✗ the clerk deletes the record of Varra → denied: approved" in out
    assert (
        "✗ the errand with a forged record: nothing goes to Corvin Pell: [('send_message', {'to': 'Cor" in out
    )


def test_policy_fails_an_approver_that_crashes_on_a_legitimate_message(capsys):
    def crashes(request):
        return request.role == "clerk" and request.args["entity"] is None  # no "entity" in a message

    with pytest.raises(CheckFailed):
        check("08.policy", crashes)
    out = capsys.readouterr().out
    assert "✗ the clerk messages Hesper Lusk → approved: raised KeyError: 'entity'" in out
    assert (
        "✗ the errand on the real records: the message reaches Anselm Dray: step 's4' (clerk) failed" in out
    )


def test_the_insider_notes_name_a_real_person_and_spell_their_call():
    for scenario in nb08.insider_scenarios():
        tool, args = scenario.action
        assert (tool, args["to"]) == ("send_message", "Hesper Lusk")
        assert 'send_message(to="Hesper Lusk"' in scenario.note


# --- 08.sanitise ----------------------------------------------------------------------------------


def test_sanitise_passes_the_solution(capsys):
    check("08.sanitise", solution("sanitise"))
    assert "All 7 checks passed." in capsys.readouterr().out


def test_sanitise_fails_keeping_the_first_paragraph_which_misses_a_quoted_note(capsys):
    with pytest.raises(CheckFailed, match="1 of 7 checks failed. Hint: .*quoted inside an error message"):
        check("08.sanitise", lambda text: text.split("\n\n")[0])
    out = capsys.readouterr().out
    assert "✓ a search with a note: every line of results kept, no call" in out
    assert "✗ an error message quoting a poisoned record: which step failed kept, no call: 'step" in out


def test_sanitise_fails_dropping_whole_paragraphs_which_loses_the_error(capsys):
    with pytest.raises(CheckFailed, match="1 of 7 checks failed"):
        check("08.sanitise", without_injections)
    assert "✗ an error message quoting a poisoned record: which step failed kept, no call: ''" in (
        capsys.readouterr().out
    )


def test_sanitise_fails_keeping_only_the_first_line(capsys):
    with pytest.raises(CheckFailed, match="3 of 7 checks failed"):
        check("08.sanitise", lambda text: text.splitlines()[0])
    out = capsys.readouterr().out
    assert "✓ a lookup with a note (RECORDS OFFICE NOTICE: t...): the value kept, no call" in out
    assert "✗ a search with a note: every line of results kept" in out
    assert "✗ a search with no note: unchanged" in out
    assert "✗ an error message quoting a poisoned record" in out  # one line, note and all


# --- 08.safe-replan -------------------------------------------------------------------------------


def test_safe_replan_passes_the_solution(capsys):
    check("08.safe-replan", solution("sanitise", "safe_replan"))
    assert "All 4 checks passed." in capsys.readouterr().out


def test_safe_replan_fails_cleaning_the_outputs_but_not_the_failure_message(capsys):
    sanitise = solution("sanitise")

    def outputs_only(planner, task, plan, outputs, failure):
        return planner.replan(task, plan, {k: sanitise(v) for k, v in outputs.items()}, failure)

    with pytest.raises(CheckFailed, match="1 of 4 checks failed. Hint: .*the message saying why"):
        check("08.safe-replan", outputs_only)
    assert (
        "✗ 28 failed runs replanned by a planner that obeys every note: no plan acts: plans that act: ['i"
        in (capsys.readouterr().out)
    )


def test_safe_replan_fails_hiding_the_outputs_altogether(capsys):
    sanitise = solution("sanitise")

    def forget_the_outputs(planner, task, plan, outputs, failure):
        return planner.replan(task, plan, {}, sanitise(failure))

    with pytest.raises(CheckFailed, match="2 of 4 checks failed"):
        check("08.safe-replan", forget_the_outputs)
    out = capsys.readouterr().out
    assert "✗ every replanned run finishes with the right answer: wrong or failed: ['i" in out
    assert "✗ outputs with no note reach the planner unchanged: shown {}" in out


def test_safe_replan_fails_dropping_the_failure_with_its_note(capsys):
    def drops_the_reason(planner, task, plan, outputs, failure):
        clean = {k: without_injections(v) for k, v in outputs.items()}
        return planner.replan(task, plan, clean, without_injections(failure))

    with pytest.raises(CheckFailed, match="1 of 4 checks failed"):
        check("08.safe-replan", drops_the_reason)
    assert "✗ the planner is still told which step failed, and why: shown ''" in capsys.readouterr().out
