"""Notebook 04's grading cases: sums the exercise's own cases do not show, installment bounds worked
out from the length of a run never interrupted, and a stand-in that raises. The agents and runs are
notebook 04's own (`checks/_nb04_runs.py`); every expected value is worked out here."""

import math
import re
from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, attempt
from agentlab.course.checks._nb04_runs import attempt_bounded, pay_installments, scripted, straight_run
from agentlab.course.hidden import grading
from agentlab.plan import Step
from agentlab.world import sample_tasks


def _sum(*parts: str, role: str = "analyst") -> Step:
    ids = [f"s{i + 1}" for i in range(len(parts))]
    expression = " + ".join(f"${i}" for i in ids)
    return Step(
        "t", role, f"What is {expression}?", tuple(ids), tool="calculate", args={"expression": expression}
    )


def _context(*parts: str) -> dict[str, str]:
    return {f"s{i + 1}": part for i, part in enumerate(parts)}


# (what, the parts, the step's role, the output, whether a right check objects)
_SUMS = (
    (
        "a total below a three-digit part, above a two-digit one (95 + 120 = 110?)",
        ("95", "120"),
        "analyst",
        "110",
        True,
    ),
    (
        "a total below the third part, above the first two (10 + 20 + 500 = 300?)",
        ("10", "20", "500"),
        "analyst",
        "300",
        True,
    ),
    ("a researcher's sum, smaller than a part", ("215", "640", "395"), "researcher", "600", True),
    ("a generalist's sum, smaller than a part", ("215", "640", "395"), "generalist", "600", True),
    ("a total of 0 for 5 + 7", ("5", "7"), "analyst", "0", True),
    ("a total of 0 for 0 + 0", ("0", "0"), "analyst", "0", False),
    ("a researcher's right total", ("95", "120"), "researcher", "215", False),
    ("a total with decimals, right (1.5 + 2.25)", ("1.5", "2.25"), "analyst", "3.75", False),
    ("a total with decimals, below a part (1.5 + 2.25 = 2)", ("1.5", "2.25"), "analyst", "2", True),
)


@grading("04.total-check")
def total_check(validator: Callable) -> Iterator[Case]:
    for what, parts, role, output, objects in _SUMS:
        got, error = attempt(validator, _sum(*parts, role=role), output, _context(*parts))
        if objects:
            right = not error and isinstance(got, str) and bool(got.strip())
            yield Case(f"{what}: a problem, said in words", right, error or f"returned {got!r}")
        else:
            yield Case(f"{what}: no objection", not error and not got, error or f"objected: {got!r}")


@grading("04.installments")
def installments(pay: Callable) -> Iterator[Case]:
    task, per = sample_tasks()[2].question, 3
    needed = math.ceil(len(straight_run(task).calls) / per)  # the budget caps the whole run
    runs, error, _ = pay_installments(pay, task, per, max_installments=needed)
    statuses = _statuses(runs)
    right = not error and isinstance(statuses, list) and statuses == ["stopped"] * (needed - 1) + ["done"]
    yield Case(
        f"{per} calls an installment, max_installments={needed}: every installment it needs",
        right,
        error or f"{statuses!r}",
    )
    bound = needed - 1
    runs, error, _ = pay_installments(pay, task, per, max_installments=bound)
    said = re.search(rf"(?<![\d.]){bound}(?![\d.])", error.split(":", 1)[-1]) is not None
    yield Case(
        f"{per} calls an installment, max_installments={bound}, one fewer than it needs: an error",
        bool(error) and said,
        error or f"no error: {_statuses(runs)!r}",
    )


def _statuses(runs: object) -> object:
    return [getattr(r, "status", r) for r in runs] if isinstance(runs, list | tuple) else runs


# --- 04.retry-then-reroute: a stand-in that raises -----------------------------------------------


@grading("04.retry-then-reroute")
def stand_in_raises(recover: Callable) -> Iterator[Case]:
    step = Step(
        "s3", "researcher", "What is the area of $s1?", ("s1",), tool="lookup", args={"entity": "$s1"}
    )
    log: list = []
    team = {
        "researcher": scripted("researcher", ("FAILED",), log),
        "backup": scripted("backup", ("raise",), log),
    }
    got, error = attempt_bounded(recover, step, {"s1": "Varra"}, team, 1, {"researcher": "backup"}, ())
    asked = [role for role, _, _ in log]
    yield Case(
        "a stand-in that raises: the step fails, named, after its 2 tries and the stand-in's one",
        bool(error) and "s3" in error and asked == ["researcher", "researcher", "backup"],
        (error or f"no error: returned {got!r}") + f"; asked {asked}",
    )
