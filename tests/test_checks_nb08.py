"""The checks of notebook 08's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

from pathlib import Path

import notebook_code
import pytest

from agentlab import world
from agentlab.compare import row
from agentlab.course.checks import CheckFailed, check
from agentlab.routing import split

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "08_migration_and_handoffs.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["08.threshold", "08.handoff-audit"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 08.threshold ---------------------------------------------------------------------------------


def policies(comparison, thresholds):
    return {t: row(f"from {t}", split(comparison, t)) for t in thresholds}


def sizes_of(comparison):
    return sorted({world.steps_needed(t.question) for t in comparison.tasks})


def test_threshold_passes_the_solution(capsys):
    check("08.threshold", solution("choose_threshold"))
    assert "All 9 checks passed." in capsys.readouterr().out


def most_accurate_first(comparison):
    """The notebook's one-line rule: the most accurate threshold, the first of equals; no cost."""
    every = policies(comparison, range(1, max(sizes_of(comparison)) + 2))
    return max(every, key=lambda t: every[t].accuracy)


def only_the_sizes_seen(comparison):
    """Tries only thresholds at the sizes the batch has, plus one agent for everything."""
    seen = policies(comparison, [*sizes_of(comparison), max(sizes_of(comparison)) + 1])
    return min(seen, key=lambda t: (-seen[t].accuracy, seen[t].mean_cost, t))


def never_one_agent_for_all(comparison):
    """Stops at the largest size: never tries sending every task to one agent."""
    every = policies(comparison, range(1, max(sizes_of(comparison)) + 1))
    return min(every, key=lambda t: (-every[t].accuracy, every[t].mean_cost, t))


def where_the_team_first_wins(comparison):
    """The crossing: the smallest size at which the team is more accurate than one agent, size by size."""
    for size in sizes_of(comparison):
        picked = [i for i, t in enumerate(comparison.tasks) if world.steps_needed(t.question) == size]
        one = sum(comparison.outcomes["react"][i].right for i in picked)
        team = sum(comparison.outcomes["planner+workers"][i].right for i in picked)
        if team > one:
            return size
    return max(sizes_of(comparison)) + 1


@pytest.mark.parametrize(
    "wrong, line",
    [
        (most_accurate_first, "✗ two thresholds equally accurate, one of them cheaper: got 1"),
        (only_the_sizes_seen, "✗ sizes with a gap between them: got 6"),
        (never_one_agent_for_all, "✗ one agent better at every size: got"),
        (where_the_team_first_wins, "✗ the team wins only where the tasks are largest: got 2"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_threshold_catches_no_cost_tie_break_only_seen_sizes_no_all_one_agent_and_the_crossing(
    wrong, line, capsys
):
    notebook_code.caught(capsys, "08.threshold", wrong, line)


def test_threshold_lines_never_print_the_threshold_and_the_hint_says_where_to_look(capsys):
    with pytest.raises(CheckFailed, match="at ties \\(the cheaper, then the smaller threshold\\)"):
        check("08.threshold", most_accurate_first)
    passed = [line for line in capsys.readouterr().out.splitlines() if "✓" in line]
    assert passed and not any(ch.isdigit() for line in passed for ch in line.split("08")[-1])


# --- 08.handoff-audit -----------------------------------------------------------------------------


def test_handoff_audit_passes_the_solution(capsys):
    check("08.handoff-audit", solution("lost_requests"))
    assert "All 11 checks passed." in capsys.readouterr().out


def by_the_note(run):
    """Looks for the request in the note instead of in what the receiver was sent."""
    return [t for t in run.transfers if run.task not in t.note]


def first_message_as_is(run):
    """Looks in the first message's content without telling a string from a list of blocks."""
    return [t for t in run.transfers if run.task not in t.sent[0]["content"]]


def last_message_only(run):
    """Looks only at the newest message the receiver got."""
    return [t for t in run.transfers if run.task not in str(t.sent[-1]["content"])]


def first_transfer_only(run):
    """Audits the first transfer and trusts the rest."""
    return [t for t in run.transfers[:1] if not any(run.task in str(m["content"]) for m in t.sent)]


@pytest.mark.parametrize(
    "wrong, line",
    [
        (by_the_note, "✗ notebook 07's four-hop chain, the request forwarded: got [triage -> researcher]"),
        (first_message_as_is, "✗ the request in a text block: got [triage -> analyst]"),
        (last_message_only, "✗ the whole conversation, ending with a tool result: got [triage -> analyst]"),
        (
            first_transfer_only,
            "✗ two transfers: the first forwards the request, the second only a note: got []",
        ),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_handoff_audit_catches_the_note_one_message_and_one_transfer(wrong, line, capsys):
    notebook_code.caught(capsys, "08.handoff-audit", wrong, line)


def test_handoff_audit_fails_an_answer_that_is_not_a_list_of_transfers(capsys):
    with pytest.raises(CheckFailed, match="Hint: look at every message a transfer's receiver starts from"):
        check("08.handoff-audit", lambda run: {t.turn for t in run.transfers})
    assert "✗ notebook 07's four-hop chain, the note alone: got a set, not a list of transfers" in (
        capsys.readouterr().out
    )


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def any_content_counts(run):
    """Looks in every message's content as a whole, so a tool result that quotes the request counts."""
    return [t for t in run.transfers if not any(run.task in str(m["content"]) for m in t.sent)]


def first_message_only(run):
    """Reads the text of the first message the receiver got, and nothing after it."""

    def text(message):
        content = message["content"]
        if isinstance(content, str):
            return content
        return " ".join(b.get("text", "") for b in content if b.get("type") == "text")

    return [t for t in run.transfers if not t.sent or run.task not in text(t.sent[0])]


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            any_content_counts,
            "✗ a tool result that quotes the request, after a note: only text counts: got []",
        ),
        (
            first_message_only,
            "✗ the request in the third message the receiver starts from: got [triage -> analyst]",
        ),
    ],
    ids=["tool-result-counts", "first-message-only"],
)
def test_handoff_audit_catches_a_quoting_tool_result_and_reading_only_the_first_message(wrong, line, capsys):
    notebook_code.caught(capsys, "08.handoff-audit", wrong, line)


def from_zero(comparison):
    """Tries t from 0, which sends every task to the team just as t = 1 does, and keeps the first."""
    every = policies(comparison, range(0, max(sizes_of(comparison)) + 2))
    return min(every, key=lambda t: (-every[t].accuracy, every[t].mean_cost, t))


def the_largest_of_equals(comparison):
    """Breaks a tie in accuracy and cost by the larger threshold instead of the smaller."""
    every = policies(comparison, range(1, max(sizes_of(comparison)) + 2))
    return min(every, key=lambda t: (-every[t].accuracy, every[t].mean_cost, -t))


def tokens_for_dollars(comparison):
    """Breaks a tie in accuracy by tokens a task instead of dollars a task."""
    every = policies(comparison, range(1, max(sizes_of(comparison)) + 2))
    return min(every, key=lambda t: (-every[t].accuracy, every[t].mean_tokens, t))


@pytest.mark.parametrize(
    "wrong, line",
    [
        (from_zero, "✗ the team better at every size: got 0"),
        (the_largest_of_equals, "✗ sizes with a gap between them: got 6"),
        (tokens_for_dollars, "✗ equally accurate everywhere: the team reads fewer tokens, but writes more"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_threshold_catches_a_threshold_of_zero_the_largest_of_equals_and_tokens_for_dollars(
    wrong, line, capsys
):
    notebook_code.caught(capsys, "08.threshold", wrong, line)


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


_LOST = (
    "    return [t for t in run.transfers if not any(run.task in text for m in t.sent for text in texts(m))]"
)
_LOST_BY_RECEIVER = """    lost = {}
    for t in run.transfers:
        if not any(run.task in text for m in t.sent for text in texts(m)):
            lost.setdefault(t.target, t)
    return list(lost.values())"""


@pytest.mark.parametrize(
    "edit, caught",
    [
        ((_LOST, _LOST + "[:1]"), "three transfers, the first and the last lose the request"),
        ((_LOST, _LOST_BY_RECEIVER), "the same agent receives twice, losing the request both times"),
        (
            ("run.task in text", "run.task[:30] in text"),
            "a message that shares the request's first 44 characters only",
        ),
    ],
)
def test_hidden_cases_catch_what_the_exercises_own_cases_let_through(edit, caught):
    import graded

    wrong = graded.changed("08", "lost_requests", edit)
    assert caught in graded.hidden_failures("08.handoff-audit", wrong)
    assert graded.graded("08.handoff-audit", wrong).status == "failed"
