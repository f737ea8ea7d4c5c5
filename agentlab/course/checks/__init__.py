"""Automatic checks for the exercises: one call per exercise.

    from agentlab.checks import check
    check("01.sentinel", orchestrate_with_reroute)

runs the learner's answer (a function, or a value) against hidden cases, prints
each case as passed or failed, and on failure raises `CheckFailed` with a hint.
An answer that is still the exercise's stub raises `NotImplementedError`, so an
untouched exercise notebook stops exactly where the learner's work begins.

Each notebook's checks live in `checks/nbNN.py` and register themselves with
`@exercise(...)`: a check is a generator that yields one `Case` per hidden case.
"""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

NOTEBOOKS = ("01", "02", "03", "04", "05", "06", "07", "08")


class CheckFailed(AssertionError):
    """The answer got at least one hidden case wrong; the message has the hint."""


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


def find(exercise_id: str) -> Exercise:
    notebook = exercise_id.split(".")[0]
    if notebook in NOTEBOOKS:
        importlib.import_module(f"agentlab.checks.nb{notebook}")  # registers its exercises
    if exercise_id not in REGISTRY:
        known = ", ".join(sorted(REGISTRY)) or "none loaded"
        raise KeyError(f"no exercise {exercise_id!r}; known: {known}")
    return REGISTRY[exercise_id]


def check(exercise_id: str, answer: Any) -> None:
    """Run an exercise's hidden cases on `answer`; print the results; raise on any failure."""
    ex = find(exercise_id)
    print(f"Checking {ex.id}: {ex.title}")
    passed = failed = 0
    try:
        for case in ex.cases(answer):
            mark = "✓" if case.passed else "✗"
            print(f"  {mark} {case.what}" + (f": {case.detail}" if case.detail and not case.passed else ""))
            passed, failed = passed + case.passed, failed + (not case.passed)
    except NotImplementedError:
        print("  … not written yet: fill in the part marked in the exercise, then run this cell again.")
        raise
    if failed:
        raise CheckFailed(f"{failed} of {passed + failed} checks failed. Hint: {ex.hint}")
    print(f"All {passed} checks passed.")


CASE_SECONDS = 10.0  # for one hidden case: far more than a right answer needs


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
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

    NotImplementedError is let through: it means the exercise is still a stub. A call that
    takes longer than `limit` seconds is stopped and reported as a failed case.
    """
    try:
        with time_limit(limit):
            return function(*args, **kwargs), ""
    except NotImplementedError:
        raise
    except Exception as e:  # a learner's bug is a failed case, shown with its message
        return None, f"raised {type(e).__name__}: {e}"
