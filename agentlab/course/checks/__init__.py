"""Automatic checks for the exercises: one call per exercise.

    from agentlab.course.checks import check
    check("01.sentinel", orchestrate_with_reroute)

runs the learner's answer (a function, or a value) against hidden cases, prints
each case as passed or failed, and on failure raises `CheckFailed` with a hint.
An answer that is still the exercise's stub (a function that raises it, or a value still
holding the `...` to fill in) raises `NotImplementedError` after the line "not written yet",
so every check cell of an untouched exercise notebook says where the learner's work begins.

Each notebook's checks live in `checks/nbNN.py` and register themselves with
`@exercise(...)`: a check is a generator that yields one `Case` per hidden case.
A case says what was tried, never the answer it expects: a passing line shows the
case, a failing line what the learner's answer did.

A check compares plain data only, as the grader does: an answer that is an object of the learner's
own class, or a subclass of a number, string, list or dict that changes how it compares or computes,
fails with what it is (`checks.plain`), so the feedback never passes what the grade would not.

Every check also writes down what happened (started; passed, failed, not done or
error) in the file named by the environment variable `AGENTLAB_CHECK_LOG`, when it
is set. The grader (`agentlab course grade`) sets it, and grades from these records,
not from the text of the cells: a check that never ran has nothing to show.
"""

from __future__ import annotations

import dis
import importlib
import inspect
import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agentlab.course.checks.plain import plain
from agentlab.course.forbidden import forbidding

NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11")
NAMES = {  # each exercise notebook's file name (without .ipynb), by number
    "01": "01_stub_planner_and_executors",
    "02": "02_plans_are_dags",
    "03": "03_llm_planner",
    "04": "04_monitor_and_replan",
    "05": "05_hierarchical_teams",
    "06": "06_error_propagation",
    "07": "07_one_agent_or_a_team",
    "08": "08_migration_and_handoffs",
    "09": "09_guardrails",
    "10": "10_across_machines",
    "11": "11_caching_and_streaming",
}
# The course was renumbered: 07 split in two (its last two exercises went to the new 08), guardrails
# went from 08 to 09 and across machines from 09 to 10. An old id names its new one, so a notebook
# saved before the change is told where its exercise went instead of failing without a word.
MOVED = {
    "07.threshold": "08.threshold",
    "07.handoff-audit": "08.handoff-audit",
    "08.denied": "09.denied",
    "08.policy": "09.policy",
    "08.sanitise": "09.sanitise",
    "08.safe-replan": "09.safe-replan",
    "09.speedup": "10.speedup",
    "09.break-even": "10.break-even",
    "09.travel": "10.travel",
}
# Multiple choice whose key is the grader's alone (agentlab/course/hidden/): the learner's check can
# only look at the form of the answer, so its verdict says that, never "passed".
FORM_ONLY = frozenset({"01.concerns", "01.when-hierarchy", "07.shapes"})
FORM_RIGHT = "The form is right; your instructor's grader marks the choices."  # what such a check says
STUB_MESSAGE = "Exercise: write this part, then run the cell again."  # what an exercise's stub raises
LOG_VARIABLE = "AGENTLAB_CHECK_LOG"


def _one_line(error: BaseException) -> list[str]:
    """What Jupyter shows for a check's own error: its name and message on one line, no traceback.
    The check has printed its verdict above; the checker's frames would only bury it."""
    return [f"\x1b[0;31m{type(error).__name__}\x1b[0m: {error}"]


class CheckFailed(AssertionError):
    """The answer got at least one hidden case wrong; the message has the hint.

    In Jupyter it shows as one line (IPython honours `_render_traceback_`), and the cell still
    raises, so "Run All" goes on (the cell is tagged raises-exception) and the grader records it."""

    def _render_traceback_(self) -> list[str]:
        return _one_line(self)


@dataclass(frozen=True)
class Case:
    """One hidden case: what was tried, whether the answer got it right, and what went wrong."""

    what: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    hint: str
    cases: Callable[[Any], Iterator[Case]]


REGISTRY: dict[str, Exercise] = {}


def exercise(id: str, title: str, hint: str) -> Callable:
    """Register a check: `@exercise("01.sentinel", "Detect and reroute", hint="...")`."""

    def register(cases: Callable[[Any], Iterator[Case]]) -> Callable[[Any], Iterator[Case]]:
        REGISTRY[id] = Exercise(id, title, hint, cases)
        return cases

    return register


def moved(exercise_id: str) -> str:
    """What to tell a learner whose notebook calls an exercise by its id before the renumbering."""
    new = MOVED[exercise_id]
    return (
        f"exercise {exercise_id} is now {new}, in exercises/{NAMES[new.split('.')[0]]}.ipynb "
        f"(the course was renumbered): copy your answer there"
    )


def find(exercise_id: str) -> Exercise:
    if exercise_id in MOVED:
        raise KeyError(moved(exercise_id))
    notebook = exercise_id.split(".")[0]
    if notebook in NOTEBOOKS:
        importlib.import_module(f"agentlab.course.checks.nb{notebook}")  # registers its exercises
    if exercise_id not in REGISTRY:
        known = ", ".join(sorted(REGISTRY)) or "none loaded"
        raise KeyError(f"no exercise {exercise_id!r}; known: {known}")
    return REGISTRY[exercise_id]


def exercises_of(notebook: str) -> list[str]:
    """The ids of the exercises notebook `notebook` ("06") must have, in the notebook's order."""
    if notebook not in NOTEBOOKS:
        raise KeyError(f"no exercise notebook {notebook!r}; there are {', '.join(NOTEBOOKS)}")
    importlib.import_module(f"agentlab.course.checks.nb{notebook}")
    return [id for id in REGISTRY if id.split(".")[0] == notebook]


def is_stub(error: BaseException) -> bool:
    """Whether `error` is an exercise's untouched stub, not a NotImplementedError of the learner's own."""
    return isinstance(error, NotImplementedError) and str(error).startswith("Exercise:")


def _record(exercise_id: str, event: str, **facts: Any) -> None:
    """Append one record for the grader, if one is listening; never let that break a check."""
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"exercise": exercise_id, "event": event, **facts}) + "\n")
    except OSError:
        pass


def check(exercise_id: str, answer: Any) -> None:
    """Run an exercise's hidden cases on `answer`; print the results; raise on any failure."""
    ex = find(exercise_id)
    print(f"Checking {ex.id}: {ex.title}")
    _record(ex.id, "start")
    passed = failed = 0
    first = ""  # the first failing line, for the grader's report
    try:
        if unwritten(answer):
            raise NotImplementedError(STUB_MESSAGE)
        answer, odd = (answer, "") if callable(answer) else plain(answer)  # a function's answers: `attempt`
        with forbidding(ex.id, answer) as answer:
            cases = [Case("your answer, as plain data", False, f"it is {odd}")] if odd else ex.cases(answer)
            for case in cases:
                mark = "✓" if case.passed else "✗"
                line = case.what + (f": {case.detail}" if case.detail and not case.passed else "")
                print(f"  {mark} {line}")
                passed, failed = passed + case.passed, failed + (not case.passed)
                first = first or ("" if case.passed else line)
    except NotImplementedError as error:
        if passed + failed == 0:
            print("  … not written yet: fill in the part marked in the exercise, then run this cell again.")
            _record(ex.id, "end", status="not done", passed=0, failed=0, detail="")
            error._render_traceback_ = lambda shown=error: _one_line(shown)  # its frames teach nothing
            raise
        line = f"the next case stopped at a part still left as the stub ({error})"
        print(f"  ✗ {line}")
        failed += 1
        first = first or line
    except BaseException as error:  # a check that broke, or the learner's code escaping it
        _record(ex.id, "end", status="error", passed=passed, failed=failed, detail=_name(error))
        raise
    if failed:
        _record(ex.id, "end", status="failed", passed=passed, failed=failed, detail=first)
        raise CheckFailed(f"{failed} of {passed + failed} checks failed. Hint: {ex.hint}")
    _record(ex.id, "end", status="passed", passed=passed, failed=0, detail="")
    if ex.id in FORM_ONLY:  # it looked at the form alone: saying "passed" would be a claim it cannot make
        print(FORM_RIGHT)
    else:
        print(f"All {passed} checks passed." if passed > 1 else "The check passed.")


def _raises_only_the_stub(answer: Any) -> bool:
    """Whether `answer` is a function whose whole body (its docstring aside) is the stub's raise:
    the instructions of `_stub_shape`, with an "Exercise: ..." message of its own."""
    if not inspect.isfunction(answer):
        return False
    body, shape = _instructions(answer), _instructions(_stub_shape)
    return [name for name, _ in body] == [name for name, _ in shape] and all(
        value == expected or (name == "LOAD_CONST" and str(value).startswith("Exercise:"))
        for (name, value), (_, expected) in zip(body, shape, strict=True)
    )


def _stub_shape() -> None:
    raise NotImplementedError("Exercise:")


def _instructions(function: Callable) -> list[tuple[str, Any]]:
    return [(i.opname, i.argval) for i in dis.get_instructions(function) if i.opname not in ("RESUME", "NOP")]


def unwritten(answer: Any) -> bool:
    """Whether an answer is still the exercise's stub: a function that only raises it, or data
    holding the `...` placeholders (`{"A": ..., "B": ...}`). Found before any case is worked out:
    some take a second to build (07.pick runs its comparisons), and there is nothing to try yet."""
    if answer is Ellipsis or _raises_only_the_stub(answer):
        return True
    if isinstance(answer, dict):
        return any(unwritten(v) for v in answer.values())
    if isinstance(answer, list | tuple | set | frozenset):
        return any(unwritten(v) for v in answer)
    return False


def _name(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


CASE_SECONDS = 10.0  # for one hidden case: far more than a right answer needs


@contextmanager
def time_limit(seconds: float | None = CASE_SECONDS) -> Iterator[None]:
    """Raise TimeoutError inside the block after `seconds`, so a loop that never ends fails its
    case instead of hanging the notebook. Needs an alarm signal and the main thread (where Jupyter
    runs cells); elsewhere, or with `seconds=None`, the block runs unbounded."""
    if (
        seconds is None
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def stop(signum, frame):
        raise TimeoutError(f"no answer after {seconds:g} s: does a loop never end?")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def attempt(
    function: Callable, *args: Any, limit: float | None = CASE_SECONDS, **kwargs: Any
) -> tuple[Any, str]:
    """Call the learner's function; return (result, "") or (None, the error it raised).

    The exercise's own stub is let through (it means the exercise is not written yet); any other
    error, the learner's own NotImplementedError included, is a failed case. A call that takes
    longer than `limit` seconds is stopped and reported as a failed case.
    """
    try:
        with time_limit(limit):
            got = function(*args, **kwargs)
    except Exception as e:  # a learner's bug is a failed case, shown with its message
        if is_stub(e):
            raise
        return None, f"raised {_name(e)}"
    got, odd = plain(got)
    return (None, f"returned {odd}") if odd else (got, "")
