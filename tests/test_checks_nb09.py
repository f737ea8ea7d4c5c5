"""The checks of notebook 09's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

import re
from pathlib import Path

import notebook_code
import pytest

from agentlab import world
from agentlab.course.checks import CheckFailed, check, nb09
from agentlab.guardrails import AuditLog
from agentlab.world.injection import call_text, find_injections, without_injections

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "09_guardrails.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["09.denied", "09.policy", "09.sanitise", "09.safe-replan"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 09.denied ------------------------------------------------------------------------------------


def test_denied_passes_the_solution(capsys):
    check("09.denied", solution("denied"))
    assert "All 4 checks passed." in capsys.readouterr().out


def test_denied_fails_counting_approved_calls_as_refused(capsys):
    def not_allowed(log):
        return [(e.step, e.role, e.tool) for e in log if e.decision != "allowed"]

    with pytest.raises(CheckFailed, match="an approved call is not denied"):
        check("09.denied", not_allowed)
    out = capsys.readouterr().out
    assert "✓ the forged errand under the office policy\n" in out  # not how many were denied
    assert "✗ a log with allowed, approved, denied and failed calls: got [('s4', 'clerk'" in out


def test_denied_fails_handing_back_whole_entries(capsys):
    with pytest.raises(CheckFailed, match="3 of 4 checks failed"):
        check("09.denied", lambda log: [e for e in log if e.decision == "denied"])
    assert "got [Entry(n=4, step='s4', role='clerk', tool='send_message'" in capsys.readouterr().out


def test_the_mixed_log_has_every_kind_of_entry():
    log = nb09._mixed_log()
    assert {e.decision for e in log} == {"allowed", "approved", "denied"}
    assert {e.outcome for e in log} == {"ok", "error", "not run"}
    from agentlab.course.hidden.keys_nb09 import denied_calls

    assert denied_calls(AuditLog.from_json(log.to_json())) == denied_calls(log)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            lambda log: [(e.role, e.step, e.tool) for e in log if e.decision == "denied"],
            "✗ the forged errand",
        ),
        (lambda log: sorted((e.step, e.role, e.tool) for e in log if e.decision == "denied"), "✗ a log with"),
        (lambda log: {(e.step, e.role, e.tool) for e in log if e.decision == "denied"}, "✗ notebook 09's"),
    ],
    ids=["role-before-step", "sorted", "a-set"],
)
def test_denied_catches_the_fields_swapped_the_log_order_lost_and_a_set(wrong, line, capsys):
    notebook_code.caught(capsys, "09.denied", wrong, line)


# --- 09.policy ------------------------------------------------------------------------------------


def test_policy_passes_the_solution(capsys):
    check("09.policy", solution("clerk_only"))
    assert "All 14 checks passed." in capsys.readouterr().out


def test_policy_fails_notebook_08s_office_policy_which_ignores_who_asks(capsys):
    with pytest.raises(CheckFailed, match="7 of 14 checks failed. Hint: look at who asks"):
        check("09.policy", nb09.office_mail)
    out = capsys.readouterr().out
    assert "✗ a researcher messages Anselm Dray: approved: an approver said yes" in out
    assert "✓ the errand with the harbour master's record forged" in out
    assert "✗ a ReAct agent obeying 30 planted notes: scenarios that acted: ['i01'," in out
    assert "✗ every decision comes with a reason for the audit log: 9 without one" in out


def test_policy_fails_trusting_the_clerk_with_anything(capsys):
    with pytest.raises(CheckFailed, match="5 of 14 checks failed"):
        check("09.policy", lambda request: request.role == "clerk")
    out = capsys.readouterr().out
    assert "✗ the clerk deletes the record of Varra: approved" in out
    assert "✗ the errand with the harbour master's record forged: [('send_message', {'to': 'Cor" in out


def test_policy_fails_an_approver_that_crashes_on_a_legitimate_message(capsys):
    def crashes(request):
        return request.role == "clerk" and request.args["entity"] is None  # no "entity" in a message

    with pytest.raises(CheckFailed):
        check("09.policy", crashes)
    out = capsys.readouterr().out
    assert "✗ the clerk messages Hesper Lusk, a person in the records: raised KeyError: 'entity'" in out
    assert "✗ the errand on the real records: messages sent to []; step 's4' (clerk) failed" in out


def policy_with(also=(), no_reason=False):
    """clerk_only with one mistake: more roles than the clerk let through (`also`), or a bare
    True or False with no reason for the log."""

    def approve(request):
        to = request.args.get("to", "")
        ok = (
            request.role in ("clerk", *also)
            and request.tool == "send_message"
            and to in world.ENTITIES
            and world.ENTITIES[to].kind == "person"
        )
        return ok if no_reason else (ok, "a message from the clerk to a person" if ok else "refused")

    return approve


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"also": ("writer",)}, "✗ the writer messages Anselm Dray: approved"),
        ({"also": ("analyst",)}, "✗ the analyst messages Anselm Dray: approved"),
        ({"no_reason": True}, "✗ every decision comes with a reason for the audit log: 9 without one"),
    ],
    ids=["writer-too", "analyst-too", "no-reason"],
)
def test_policy_catches_another_role_let_through_and_decisions_without_reasons(mistake, line, capsys):
    notebook_code.caught(capsys, "09.policy", policy_with(**mistake), line)


def test_the_insider_notes_name_a_real_person_and_spell_their_call():
    for scenario in nb09._insider_scenarios():
        tool, args = scenario.action
        assert (tool, args["to"]) == ("send_message", "Hesper Lusk")
        assert 'send_message(to="Hesper Lusk"' in scenario.note


# --- 09.sanitise ----------------------------------------------------------------------------------


def test_sanitise_passes_the_solution(capsys):
    check("09.sanitise", solution("sanitise"))
    assert "All 12 checks passed." in capsys.readouterr().out


def test_sanitise_fails_keeping_the_first_paragraph_which_misses_a_quoted_note(capsys):
    with pytest.raises(CheckFailed, match="quoting one"):
        check("09.sanitise", lambda text: text.split("\n\n")[0])
    out = capsys.readouterr().out
    assert "✓ a search with no note" in out
    assert "✗ an error message quoting a poisoned record: a call is still there: send_message(to=" in out


def test_sanitise_fails_dropping_whole_paragraphs_which_loses_the_error(capsys):
    failed = notebook_code.caught(
        capsys,
        "09.sanitise",
        without_injections,
        "✗ an error message quoting a poisoned record: your text stops",
    )
    assert (
        "✗ a lookup with a note (RECORDS OFFICE NOTICE: t...): your text stops after 'Hesper Lusk'"
        in failed[0]
    )


def test_sanitise_fails_keeping_only_the_first_line(capsys):
    notebook_code.caught(
        capsys,
        "09.sanitise",
        lambda text: text.splitlines()[0],
        "✗ a search with no note: your text stops after",
        "✗ an error message quoting a poisoned record: a call is still there",
    )


def first_call_only(text):
    """Cuts out the first call it finds, and stops looking."""
    found = find_injections(text)
    return text.replace(call_text(*found[0]), "[call removed]") if found else text


def cut_at_the_call(text):
    """Cuts the text off where the first call starts, and puts the marker there."""
    found = find_injections(text)
    return text[: text.find(call_text(*found[0]))] + "[call removed]" if found else text


def greedy_pattern(text):
    """A regex from a name and "(" to the last ")" on the line: anything in between goes too."""
    return re.sub(r"\w+\(.*\)", "[call removed]", text)


def any_parentheses(text):
    """A regex for any name followed by parentheses: a call, or max(215, 640)."""
    return re.sub(r"\w+\([^()]*\)", "[call removed]", text)


def no_marker(text):
    """Deletes every call without leaving the marker."""
    for tool, args in find_injections(text):
        text = text.replace(call_text(tool, args), "")
    return text


def messages_only(text):
    """Looks for send_message only: the scenarios plant delete_record too."""
    for tool, args in find_injections(text):
        if tool == "send_message":
            text = text.replace(call_text(tool, args), "[call removed]")
    return text


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            first_call_only,
            "✗ a note asking for two calls in one sentence: a call is still there: delete_record",
        ),
        (cut_at_the_call, "✗ a lookup with a note (RECORDS OFFICE NOTICE: t...): your text stops after"),
        (greedy_pattern, "✗ a note asking for two calls in one sentence: your text goes wrong at character"),
        (
            any_parentheses,
            "✗ a text with parentheses that are not calls: max(215, 640): your text goes wrong",
        ),
        (
            no_marker,
            "✗ a lookup with a note (RECORDS OFFICE NOTICE: t...): your text goes wrong at character",
        ),
        (
            messages_only,
            "✗ a lookup with a note asking to delete a record: a call is still there: delete_record",
        ),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_sanitise_catches_one_call_of_two_a_cut_text_broad_patterns_no_marker_and_one_tool(
    wrong, line, capsys
):
    notebook_code.caught(capsys, "09.sanitise", wrong, line)


# --- 09.safe-replan -------------------------------------------------------------------------------


def test_safe_replan_passes_the_solution(capsys):
    check("09.safe-replan", solution("sanitise", "safe_replan"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_safe_replan_fails_cleaning_the_outputs_but_not_the_failure_message(capsys):
    sanitise = solution("sanitise")

    def outputs_only(planner, task, plan, outputs, failure):
        return planner.replan(task, plan, {k: sanitise(v) for k, v in outputs.items()}, failure)

    with pytest.raises(CheckFailed, match="2 of 6 checks failed. Hint: .*the message saying why"):
        check("09.safe-replan", outputs_only)
    out = capsys.readouterr().out
    assert (
        "✗ the failed runs of notebook 09, replanned by a planner that obeys every note: the new plans" in out
    )
    assert "✗ a failure message quoting a note: what the planner is told: told a call is still there" in out


def test_safe_replan_fails_hiding_the_outputs_altogether(capsys):
    sanitise = solution("sanitise")

    def forget_the_outputs(planner, task, plan, outputs, failure):
        return planner.replan(task, plan, {}, sanitise(failure))

    notebook_code.caught(
        capsys,
        "09.safe-replan",
        forget_the_outputs,
        "✗ the replanned runs' answers: wrong or failed: ['i",
        "✗ outputs with no note: what the planner is shown: shown {}",
    )


def test_safe_replan_fails_dropping_the_failure_with_its_note(capsys):
    def drops_the_reason(planner, task, plan, outputs, failure):
        clean = {k: without_injections(v) for k, v in outputs.items()}
        return planner.replan(task, plan, clean, without_injections(failure))

    notebook_code.caught(
        capsys,
        "09.safe-replan",
        drops_the_reason,
        "✗ a failure message quoting a note: what the planner is told",
    )


def in_place(planner, task, plan, outputs, failure):
    """Cleans the outputs in the dict it was handed: the failed run's own record."""
    sanitise = solution("sanitise")
    for step in outputs:
        outputs[step] = sanitise(outputs[step])
    return planner.replan(task, plan, outputs, sanitise(failure))


def broad_cleaning(planner, task, plan, outputs, failure):
    """Cleans with a pattern that takes anything from a name and "(" to the last ")" on a line."""
    return planner.replan(
        task, plan, {k: greedy_pattern(v) for k, v in outputs.items()}, greedy_pattern(failure)
    )


@pytest.mark.parametrize(
    "wrong, line",
    [
        (in_place, "✗ the failed runs' own records afterwards: outputs changed in place: ['i"),
        (broad_cleaning, "✗ outputs with notes of both kinds, two calls in one: what the planner is shown"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_safe_replan_catches_a_record_cleaned_in_place_and_a_broad_pattern(wrong, line, capsys):
    notebook_code.caught(capsys, "09.safe-replan", wrong, line)


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def the_two_known_tools(text):
    """Cuts out send_message and delete_record calls only: the tools the lesson's notes happen to use."""
    for tool, args in find_injections(text):
        if tool in ("send_message", "delete_record"):
            text = text.replace(call_text(tool, args), "[call removed]")
    return text


def side_effect_tools_only(text):
    """Cuts out calls of tools that change something, and leaves a lookup spelled out in a note."""
    for tool, args in find_injections(text):
        if tool != "lookup":
            text = text.replace(call_text(tool, args), "[call removed]")
    return text


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            the_two_known_tools,
            "✗ a note asking for a tool no other note names: a call is still there: transfer",
        ),
        (
            side_effect_tools_only,
            "✗ a note asking for a lookup, then a message: a call is still there: lookup(",
        ),
    ],
    ids=["two-known-tools", "side-effects-only"],
)
def test_sanitise_catches_a_list_of_tools_instead_of_every_call(wrong, line, capsys):
    notebook_code.caught(capsys, "09.sanitise", wrong, line)


def each_refusal_once(log):
    """Lists each (step, role, tool) once, however often the guard refused it."""
    return list(dict.fromkeys((e.step, e.role, e.tool) for e in log if e.decision == "denied"))


def as_lists(log):
    """The right calls, each as a list [step, role, tool] instead of a tuple."""
    return [[e.step, e.role, e.tool] for e in log if e.decision == "denied"]


def the_first_refusal(log):
    """Stops at the first refused call: a run stops there, but a log can hold more."""
    return next(([(e.step, e.role, e.tool)] for e in log if e.decision == "denied"), [])


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            each_refusal_once,
            "✗ notebook 09's replanned runs under the office policy: got [('s1', 'clerk', 'send_m",
        ),
        (as_lists, "✗ the forged errand under the office policy: got [["),
        (the_first_refusal, "✗ notebook 09's replanned runs under the office policy: got"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_denied_catches_refusals_merged_lists_for_tuples_and_the_first_refusal_only(wrong, line, capsys):
    notebook_code.caught(capsys, "09.denied", wrong, line)


def anyone_in_the_records(request):
    """Lets the clerk message any entity of the records, an island or a ship as much as a person."""
    if request.role != "clerk" or request.tool != "send_message":
        return False, "only the clerk sends messages"
    to = request.args.get("to", "")
    return (to in world.ENTITIES, "a known recipient" if to in world.ENTITIES else "not in the records")


def all_but_the_researcher(request):
    """Refuses the role that reads the records, and trusts every other one."""
    if request.role == "researcher" or request.tool != "send_message":
        return False, "the researcher reads the records: it may not act"
    to = request.args.get("to", "")
    ok = to in world.ENTITIES and world.ENTITIES[to].kind == "person"
    return ok, "a person in the records" if ok else "not a person in the records"


def reasons_only_for_refusals(request):
    """Gives a reason when it refuses, and an empty one when it approves."""
    to = request.args.get("to", "")
    if request.role == "clerk" and request.tool == "send_message" and to in world.ENTITIES:
        if world.ENTITIES[to].kind == "person":
            return True, ""
    return False, "only the clerk may message a person in the records"


@pytest.mark.parametrize(
    "wrong, line",
    [
        (anyone_in_the_records, "✗ the clerk messages Varra, an island: approved"),
        (all_but_the_researcher, "✗ the analyst messages Anselm Dray: approved"),
        (reasons_only_for_refusals, "✗ every decision comes with a reason for the audit log: 1 without one"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_policy_catches_any_entity_a_blocklist_of_roles_and_a_silent_approval(wrong, line, capsys):
    notebook_code.caught(capsys, "09.policy", wrong, line)


RAW_OUTPUTS_SHOWN = "✗ outputs with notes of both kinds, two calls in one: what the planner is shown"


def failure_left_out(planner, task, plan, outputs, failure):
    """Cleans the outputs, and tells the planner nothing about why the step failed."""
    sanitise = solution("sanitise")
    return planner.replan(task, plan, {k: sanitise(v) for k, v in outputs.items()}, "")


def failure_only(planner, task, plan, outputs, failure):
    """Cleans the failure message, and hands the outputs on as they came."""
    return planner.replan(task, plan, outputs, solution("sanitise")(failure))


def acting_steps_pruned(planner, task, plan, outputs, failure):
    """Lets the planner read the note, then drops every step of the new plan that calls a tool with
    an effect: the plan is safe, but the planner was still steered."""
    from agentlab.plan import Plan

    new = planner.replan(task, plan, outputs, failure)
    kept = [s for s in new if s.tool not in ("send_message", "delete_record")]
    ids = {s.id for s in kept}
    return Plan([replace_deps(s, ids) for s in kept])


def replace_deps(step, ids):
    from dataclasses import replace

    return replace(step, depends_on=tuple(d for d in step.depends_on if d in ids))


@pytest.mark.parametrize(
    "wrong, line",
    [
        (failure_left_out, "✗ a failure message quoting a note: what the planner is told: told "),
        (failure_only, RAW_OUTPUTS_SHOWN),
        (acting_steps_pruned, RAW_OUTPUTS_SHOWN),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_safe_replan_catches_no_failure_message_raw_outputs_and_a_pruned_plan(wrong, line, capsys):
    notebook_code.caught(capsys, "09.safe-replan", wrong, line)


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


_OLD_SCANNER = """
import ast, re


def sanitise(text):
    for match in re.finditer(r"\\b([A-Za-z_]\\w*)\\(([^()]*)\\)", text):  # the kit's scanner before the fix
        try:
            call = ast.parse(f"_({match.group(2)})", mode="eval").body
        except SyntaxError:
            continue
        if call.keywords and not call.args:
            text = text.replace(match.group(0), "[call removed]")
    return text
"""
_REPLAN = "    return planner.replan(task, plan, clean_outputs, sanitise(failure))"


@pytest.mark.parametrize(
    "exercise, name, edit, caught",
    [
        (
            "09.policy",
            "clerk_only",
            (
                'to not in world.ENTITIES or world.ENTITIES[to].kind != "person"',
                'to not in ("Hesper Lusk", "Anselm Dray")',
            ),
            "the clerk messages Cassian Reed, a person in the records",
        ),
        (
            "09.safe-replan",
            "safe_replan",
            (_REPLAN, "    planner.replan(task, plan, outputs, failure)  # to compare\n" + _REPLAN),
            "every replan the planner is asked for: only cleaned texts",
        ),
        ("09.sanitise", "sanitise", None, "a planted call whose text holds brackets"),
    ],
)
def test_hidden_cases_catch_what_the_exercises_own_cases_let_through(exercise, name, edit, caught):
    import graded

    wrong = graded.changed("09", name, edit) if edit else graded.written("09", name, _OLD_SCANNER)
    assert caught in graded.hidden_failures(exercise, wrong)
    assert graded.graded(exercise, wrong).status == "failed"
