"""Checks for the exercises of notebook 04, monitor and replan.

- `04.total-check`: a per-step validator that knows a property of every right total (it is a
  number, read as `world.number_in` reads one, no smaller than any of its parts) without computing it;
- `04.retry-then-reroute`: one step tried by its role up to 1 + retries times, then once by a
  stand-in, every attempt judged by the kit's monitor;
- `04.installments`: a run paid for in installments, a call budget at a time, resumed from its
  checkpoint until it ends;
- `04.message-key`: the key that lets a step's message go out once, however often the step runs.

The steps and tasks are built here, the agents and runs in `_nb04_runs.py`; the reference for
recovery and resuming is what the kit's `run_plan` and `orchestrate` do with the same pieces.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from agentlab.course.checks import Case, attempt, exercise
from agentlab.course.checks._nb04_runs import (
    WRONG,
    attempt_bounded,
    pay_installments,
    scripted,
    sends,
    straight_run,
)
from agentlab.plan import Step
from agentlab.run import Run
from agentlab.world import sample_tasks

# --- 04.total-check -------------------------------------------------------------------------------

_PARTS = {"s1": "215", "s2": "640", "s3": "395"}
_SUM_CALL = Step(
    "s4",
    "analyst",
    "What is $s1 + $s2 + $s3?",
    ("s1", "s2", "s3"),
    tool="calculate",
    args={"expression": "$s1 + $s2 + $s3"},
)
_SWAPPED_CALL = replace(_SUM_CALL, args={"expression": "$s1 - $s2 + $s3"})
_SUM_BY_AGENT = replace(_SUM_CALL, tool=None, args={})
_LITERAL_SUM = Step("s2", "analyst", "What is 33 + 17?", tool="calculate", args={"expression": "33 + 17"})
_DIFFERENCE = Step(
    "s3", "analyst", "What is $s1 - $s2?", ("s1", "s2"), tool="calculate", args={"expression": "$s1 - $s2"}
)
_LOOKUP = Step(
    "s1",
    "researcher",
    "What is the population of Hollin?",
    tool="lookup",
    args={"entity": "Hollin", "attribute": "population"},
)
_COMPARISON = Step(
    "s4",
    "analyst",
    "Which has the highest crew: Brass Lantern ($s1), Silver Heron ($s2) or Moth Queen ($s3)?",
    ("s1", "s2", "s3"),
)
_REPORT = Step(
    "s5",
    "writer",
    "Report the answer to the task in a few words: What is the total population of Hollin, Westwick and "
    "Cobble Quay? The result to report is $s4.",
    ("s4",),
)

_NO_QUESTION = Step("s2", "writer", "Write up the finding in one line.", ("s1",))

_TOTALS_FINE = (
    ("the right total", _SUM_CALL, "1250", _PARTS),
    ("the right total, with a thousands separator", _SUM_CALL, "1,250", _PARTS),
    ("the right total in a sentence, as a task's check reads it", _SUM_CALL, "It is 1,250.", _PARTS),
    ("a difference, which may well be negative", _DIFFERENCE, "-425", {"s1": "215", "s2": "640"}),
    ("a lookup: not a sum", _LOOKUP, "215", {}),
    ("a comparison: not a sum", _COMPARISON, "Brass Lantern", {"s1": "41", "s2": "24", "s3": "17"}),
    ("the writer's report", _REPORT, "1250", {"s4": "1250"}),
    (
        "a plausible total that is not the sum (10% high): plausibility cannot see it",
        _SUM_CALL,
        "1375",
        _PARTS,
    ),
    ("a plausible total below the sum, above every part", _SUM_CALL, "700", _PARTS),
    (
        "a total equal to its largest part (the other parts are zero)",
        _SUM_CALL,
        "640",
        {"s1": "0", "s2": "640", "s3": "0"},
    ),
    ("a step that asks no question", _NO_QUESTION, "Hollin: 215 people.", {"s1": "215"}),
)
_TOTALS_WRONG = (
    ("a call that subtracts where the question adds (the tool's result, -30)", _SWAPPED_CALL, "-30", _PARTS),
    ("an agent's total smaller than one of its parts", _SUM_BY_AGENT, "600", _PARTS),
    ("a total that is not a number", _SUM_CALL, "about a thousand", _PARTS),
    ("two totals where the question asks for one", _SUM_CALL, "1,200 or 1,300", _PARTS),
    ("a sum of numbers written into the question", _LITERAL_SUM, "16", {}),
)


@exercise(
    "04.total-check",
    "A total covers its parts",
    hint="look at what you judge the step by: its question, with its inputs filled in, not its tool call "
    "(the call may be the mistake); at how you read the output (as a task's check reads a number: "
    "'1,250' and 'It is 1250.' give one, '1,200 or 1,300' does not); at which steps are none of this "
    "check's business; and at what you compare the total with: a plausibility check works nothing out, "
    "so a plausible total passes even when it is not the sum",
)
def total_check(validator: Callable) -> Iterator[Case]:
    for what, step, output, context in _TOTALS_FINE:
        got, error = attempt(validator, step, output, dict(context))
        yield Case(f"{what}: no objection", not error and not got, error or f"objected: {got!r}")
    for what, step, output, context in _TOTALS_WRONG:
        got, error = attempt(validator, step, output, dict(context))
        right = not error and isinstance(got, str) and bool(got.strip())
        yield Case(f"{what}: a problem, said in words", right, error or f"returned {got!r}")


# --- 04.retry-then-reroute ------------------------------------------------------------------------


_STEP = Step(
    "s2",
    "researcher",
    "What is the harbour master of $s1?",
    ("s1",),
    tool="lookup",
    args={"entity": "$s1", "attribute": "harbour master"},
)
_CONTEXT = {"s1": "Westwick"}


def _no_9999(step: Step, output: str, context: Mapping[str, str]) -> str | None:
    return "9999 is the records' placeholder, not a value" if output.strip() == WRONG else None


def _kinds(attempts: Any) -> list | None:
    if not isinstance(attempts, list | tuple):
        return None
    try:
        return [
            (role, None if failure is None else getattr(failure, "kind", failure))
            for role, failure in attempts
        ]
    except (TypeError, ValueError):
        return None


_RECOVERY_CASES = (
    # (what, researcher's script, backup's script, retries, stand-in, expected attempts or an error)
    ("a first attempt that succeeds is the answer", ("ok",), ("ok",), 2, True, [("researcher", None)]),
    (
        "a fluke: one error, then a retry succeeds",
        ("raise", "ok"),
        ("ok",),
        2,
        True,
        [("researcher", "error"), ("researcher", None)],
    ),
    (
        "FAILED every time: 1 + 2 attempts, then the stand-in",
        ("FAILED",),
        ("ok",),
        2,
        True,
        [("researcher", "sentinel")] * 3 + [("backup", None)],
    ),
    (
        "an answer the check rejects is a failure too",
        ("wrong",),
        ("ok",),
        1,
        True,
        [("researcher", "check")] * 2 + [("backup", None)],
    ),
    (
        "no retries: straight to the stand-in",
        ("raise",),
        ("ok",),
        0,
        True,
        [("researcher", "error"), ("backup", None)],
    ),
    (
        "the stand-in fails too: the step fails, after one try by the stand-in",
        ("raise",),
        ("FAILED",),
        1,
        True,
        None,
    ),
    ("no stand-in for the role: the step fails after its retries", ("FAILED",), ("ok",), 2, False, None),
)


@exercise(
    "04.retry-then-reroute",
    "Retry, then reroute, within bounds",
    hint="look at what counts as a failed attempt (an exception, a FAILED answer, a check's objection: "
    "the monitor judges the last two), at how often the step's own role is tried and the stand-in after "
    "it, at what the stand-in is handed (an instruction for its own role, without the tool call that may "
    "be the mistake), and at what happens when every try is used up",
)
def retry_then_reroute(recover: Callable) -> Iterator[Case]:
    for what, script, backup_script, retries, has_stand_in, want in _RECOVERY_CASES:
        log: list = []
        team = {
            "researcher": scripted("researcher", script, log),
            "backup": scripted("backup", backup_script, log),
        }
        stand_in = {"researcher": "backup"} if has_stand_in else {}
        got, error = attempt_bounded(recover, _STEP, dict(_CONTEXT), team, retries, stand_in, (_no_9999,))
        asked = Counter(role for role, _, _ in log)
        if want is None:
            bounded = asked["researcher"] == 1 + retries and asked["backup"] == (1 if has_stand_in else 0)
            yield Case(
                what,
                bool(error) and "s2" in error and bounded,
                error
                and f"{error}; asked {dict(asked)}"
                or f"no error: returned {got!r}; asked {dict(asked)}",
            )
            continue
        ok = not error and isinstance(got, tuple) and len(got) == 2
        output, attempts = got if ok else (None, None)
        expected_output = f"the {want[-1][0]}'s answer"
        right = (
            ok and _kinds(attempts) == want and output == expected_output and sum(asked.values()) == len(want)
        )
        yield Case(what, right, error or f"returned {got!r}; asked {dict(asked)}")
    log = []
    team = {
        "researcher": scripted("researcher", ("raise",), log),
        "backup": scripted("backup", ("ok",), log),
    }
    got, error = attempt_bounded(recover, _STEP, dict(_CONTEXT), team, 1, {"researcher": "backup"}, ())
    given = [(step, context) for role, step, context in log if role == "backup"]
    step, context = given[0] if given else (None, None)
    right = (
        step is not None
        and (step.role, step.tool, dict(step.args), step.instruction)
        == ("backup", None, {}, _STEP.instruction)
        and context == _CONTEXT
    )
    yield Case(
        "the stand-in gets the step as an instruction: its own role, no tool call, the same inputs",
        not error and right,
        error or (f"it got {step!r} with {context!r}" if step else "the stand-in was never asked"),
    )


# --- 04.installments ------------------------------------------------------------------------------


def _runs(runs: Any) -> bool:
    return isinstance(runs, list | tuple) and bool(runs) and all(isinstance(r, Run) for r in runs)


@exercise(
    "04.installments",
    "Pay for a run in installments",
    hint="look at whether each installment carries the same run on from its checkpoint, at what a "
    "budget caps when a run resumes (the calls since the resume, or the whole run's?), at when paying "
    "more stops helping (a run that ends 'failed' will not mend), and at the error when the installments "
    "run out: it should say what the bound was",
)
def installments(pay: Callable) -> Iterator[Case]:
    chain = sample_tasks()[1].question
    straight = straight_run(chain)
    runs, error, asked = pay_installments(pay, chain, 2)
    if error or not _runs(runs):
        yield Case(
            "a chain of lookups, 2 calls an installment: a list of runs", False, error or f"got {runs!r}"
        )
    else:
        yield Case(
            "a chain of lookups, 2 calls an installment: it finishes",
            runs[-1].status == "done",
            f"the last run is {runs[-1].status}",
        )
        budget_stops = all(r.status == "stopped" and r.reason.startswith("budget reached") for r in runs[:-1])
        yield Case(
            "every installment but the last stopped on its budget",
            len(runs) > 1 and budget_stops,
            f"{len(runs)} installment(s): {[r.status for r in runs]}",
        )
        yield Case("no step ran twice", set(asked.values()) == {1}, f"steps run: {dict(asked)}")
        same = runs[-1].outputs == straight.outputs and runs[-1].calls == straight.calls
        yield Case(
            "the same outputs and model calls as a run never interrupted",
            same,
            f"{len(runs[-1].calls)} calls, outputs {runs[-1].outputs}; uninterrupted: "
            f"{len(straight.calls)} calls, outputs {straight.outputs}",
        )

    runs, error, _ = pay_installments(pay, chain, 100)
    yield Case(
        "a budget larger than the run: one installment",
        not error and _runs(runs) and len(runs) == 1 and runs[0].status == "done",
        error or f"{[getattr(r, 'status', r) for r in runs] if _runs(runs) else runs!r}",
    )
    runs, error, _ = pay_installments(pay, chain, 1)
    yield Case(
        "one call an installment: it still finishes",
        not error and _runs(runs) and runs[-1].status == "done",
        error or f"{[getattr(r, 'status', r) for r in runs] if _runs(runs) else runs!r}",
    )

    runs, error, _ = pay_installments(pay, chain, 2, broken="writer")
    ends = _runs(runs) and runs[-1].status == "failed" and all(r.status == "stopped" for r in runs[:-1])
    yield Case(
        "a step that fails for good: the run ends 'failed', and no installment is paid after that",
        not error and ends,
        error or f"{[getattr(r, 'status', r) for r in runs] if _runs(runs) else runs!r}",
    )
    runs, error, _ = pay_installments(pay, chain, 2)
    if not error and _runs(runs) and runs[-1].status == "done":  # exactly as many installments as it needs
        again, error, _ = pay_installments(pay, chain, 2, max_installments=len(runs))
        yield Case(
            f"max_installments={len(runs)}, just what this run needs at 2 calls each: it finishes",
            not error and _runs(again) and again[-1].status == "done",
            error or f"{[getattr(r, 'status', r) for r in again] if _runs(again) else again!r}",
        )
    for bound in (2, 3):
        runs, error, _ = pay_installments(pay, chain, 1, max_installments=bound)
        message = error.split(":", 1)[-1]
        yield Case(
            f"not finished within max_installments={bound}: an error that says what the bound was",
            bool(error) and re.search(rf"(?<![\d.]){bound}(?![\d.])", message) is not None,
            error or f"no error: {[getattr(r, 'status', r) for r in runs] if _runs(runs) else runs!r}",
        )


# --- 04.message-key -------------------------------------------------------------------------------

_TASKS = ("Tell the governor the population of Varra.", "Tell the governor the area of Brindle.")


def _two_notices():
    """Two lookups, each sent on to the same person by a step of its own: two messages."""
    from agentlab.effects import notice_plan
    from agentlab.plan import Plan

    area = [replace(s, id=f"{s.id}b", depends_on=tuple(f"{d}b" for d in s.depends_on))
            for s in notice_plan("Varra", "area")]
    return Plan([*notice_plan(), *area])


@exercise(
    "04.message-key",
    "One message per effect, however often a step runs",
    hint="the key must be the same for every attempt at the same message, however it is tried again (a "
    "retry's note changes the step's instruction; a replan renames the step, s2 becoming r1_s2; a run "
    "resumed in a new process has another hash() for the same text) and different for every different "
    "message (another recipient, another text, another task)",
)
def message_key(key: Callable) -> Iterator[Case]:
    from agentlab.course.checks._nb04_runs import Sending
    from agentlab.effects import NoticePlanner, notice_plan
    from agentlab.recovery import Replan, Retry

    step, task = notice_plan()["s2"], _TASKS[0]
    first, error = attempt(key, task, step, "Ines Marrow", f"{task} 2140")
    if error or not isinstance(first, str):
        yield Case("a key is a string", False, error or f"got {type(first).__name__}")
        return
    one, gov, both = notice_plan(), ("Ines Marrow",), ("Ines Marrow", "Hesper Lusk")
    again, replan = Retry(1), Replan(NoticePlanner(), max_replans=1)
    checks = [
        ("a retry after a lost reply: one message", [Sending(task, one, gov, again)], 1),
        ("three tries: still one message", [Sending(task, one, gov, Retry(2))], 1),
        ("two recipients, retried: one message each", [Sending(task, one, both, again)], 2),
        ("a replan after a lost reply (s2 is renamed r1_s2): one message",
         [Sending(task, one, gov, replan)], 1),
        ("two tasks through the same outbox: a message for each",
         [Sending(t, one, gov, again) for t in _TASKS], 2),
        ("two steps that each send another figure to the same person: both go out",
         [Sending(task, _two_notices(), gov, again)], 2),
        ("the same task run again after a crash, in a new Python process: nothing new goes out",
         [Sending(task, one, gov, again), Sending(task, one, gov, again, new_process=True)], 1),
    ]
    for what, runs, want in checks:
        sent, error = sends(key, runs)
        recipients = {to for run in runs for to in run.to}
        ok = not error and len(sent) == want and {to for to, _ in sent} == recipients
        to_whom = ", ".join(f"{n} to {to}" for to, n in Counter(to for to, _ in sent or []).items())
        yield Case(what, ok, error or f"{len(sent)} message(s) went out ({to_whom or 'none'})")
