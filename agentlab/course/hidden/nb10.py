"""Notebook 10's grading cases: batches the exercise's own cases do not show, answers worked out
by hand (a round is one task per worker; the last one may not be full)."""

from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, attempt
from agentlab.course.hidden import grading

# (tasks, workers, seconds, overhead, speedup): 10 on 4 is 3 rounds, 10 x 2 / (3 x 2.5) = 2.666...
_SPEEDUPS = (
    (10, 4, 2.0, 0.5, 20 / 7.5),
    (7, 7, 1.0, 1.0, 3.5),
    (5, 1, 3.0, 0.0, 1.0),
    (9, 2, 1.0, 0.25, 9 / 6.25),
)
# (tasks, workers, overhead, break-even): 10 on 4 is 3 rounds, 10 t = 3 (t + 0.5) at t = 1.5 / 7
_BREAK_EVENS = (
    (10, 4, 0.5, 1.5 / 7),
    (6, 1, 1.0, None),
    (1, 8, 2.0, None),
    (9, 3, 1.5, 0.75),
    (5, 8, 1.0, 0.25),
)


@grading("10.speedup")
def speedup(function: Callable) -> Iterator[Case]:
    for tasks, workers, seconds, overhead, want in _SPEEDUPS:
        got, error = attempt(function, tasks, workers, seconds, overhead)
        right = not error and isinstance(got, int | float) and abs(got - want) < 1e-9
        yield Case(
            f"{tasks} tasks on {workers} workers, {seconds:g} s each, {overhead:g} s overhead",
            right,
            error or f"got {got!r}",
        )


@grading("10.break-even")
def break_even(function: Callable) -> Iterator[Case]:
    for tasks, workers, overhead, want in _BREAK_EVENS:
        got, error = attempt(function, tasks, workers, overhead)
        right = not error and (
            got is None if want is None else isinstance(got, int | float) and abs(got - want) < 1e-9
        )
        yield Case(
            f"{tasks} tasks on {workers} workers, {overhead:g} s overhead", right, error or f"got {got!r}"
        )
