"""Answers graded as `agentlab course grade` grades them: the exercise's own cases, then the
instructor's hidden ones (`grading.verdict`), with the exercise's forbidden helpers trapped while
the answer runs, as in the grader's sandbox. In this process: no kernel, no sandbox, so a battery
of answers takes seconds. Also answers made from a solution notebook's own code, changed a little."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import notebook_code

from agentlab.course.checks import NAMES, Case, find
from agentlab.course.forbidden import forbidding
from agentlab.course.grading import Result, verdict
from agentlab.course.hidden import cases_for

ROOT = Path(__file__).resolve().parents[1]


def graded(exercise: str, answer: Any) -> Result:
    """The grader's verdict on `answer`: passed, failed, not done or error."""
    with forbidding(exercise, answer) as trapped:
        return verdict(exercise, trapped)


def hidden_failures(exercise: str, answer: Any) -> list[str]:
    """What each hidden case that `answer` fails tried. (Each wrong answer these are used for passed
    every one of its exercise's own cases when its hidden case was written: issue 34's gaps.)"""
    with forbidding(exercise, answer) as trapped:
        return [case.what for cases in cases_for(exercise) for case in cases(trapped) if not case.passed]


@functools.cache
def solution_namespace(notebook: str) -> dict:
    """Every name the solution notebook `notebook` ("02") defines, its answers included."""
    return notebook_code.run_cells(ROOT / "solutions" / f"{NAMES[notebook]}.ipynb", answers=True)


def changed(notebook: str, name: str, *edits: tuple[str, str]) -> Any:
    """The solution's `name` with each (old, new) edit made to the source of the cell defining it
    (every occurrence; each must occur), defined beside the solution's other names."""
    cell = notebook_code.exercise_cell(ROOT / "solutions" / f"{NAMES[notebook]}.ipynb", f"def {name}(")
    source = "\n".join(line for line in cell.splitlines() if not line.startswith("check("))
    for old, new in edits:
        assert old in source, f"{name}: {old!r} is not in the solution"
        source = source.replace(old, new)
    return written(notebook, name, source)


def written(notebook: str, name: str, source: str) -> Any:
    """`name` as `source` defines it, beside the solution notebook's other names."""
    namespace = dict(solution_namespace(notebook))
    exec(compile(source, f"<answer to {name}>", "exec"), namespace)
    return namespace[name]


@functools.cache
def answer_name(exercise: str) -> str:
    """The name an exercise's answer has in the kit's exercise notebook (`longest_chain`)."""
    from agentlab.course.cells import answer_names, read_cells

    notebook = exercise.split(".")[0]
    return answer_names(notebook, ROOT, read_cells(ROOT / "exercises" / f"{NAMES[notebook]}.ipynb"))[exercise]


def made(exercise: str, spec: Any) -> Any:
    """An answer from a short spec: None for the solution itself, (old, new) edits of the solution's
    code, the source of a whole answer (a str), or, for an exercise whose answer is data, the data."""
    notebook, name = exercise.split(".")[0], answer_name(exercise)
    if spec is None:  # the solution itself
        return solution_namespace(notebook)[name]
    if isinstance(spec, str):
        return written(notebook, name, spec)
    if isinstance(spec, tuple | list) and all(isinstance(e, tuple) and len(e) == 2 for e in spec):
        return changed(notebook, name, *spec)
    return spec


def memorised(exercise: str) -> Any:
    """A learner who read the shipped checks: the solution's answers to the exercise's own cases,
    looked up by the arguments' repr, and None for any other input."""
    solution, table = made(exercise, None), {}

    def recording(*args: Any) -> Any:
        table[repr(args)] = got = solution(*args)
        return got

    with forbidding(exercise, recording) as trapped:
        list(find(exercise).cases(trapped))
    return lambda *args: table.get(repr(args))


def first_failure(exercise: str, answer: Any) -> str | None:
    """The first case the grader would fail `answer` on (its own cases, then the hidden ones), or
    the error that stopped them; None when every case passes. Stops there: a wrong answer's later
    cases cannot change its grade, and some take a second each."""
    with forbidding(exercise, answer) as trapped:
        cases = itertools.chain(
            find(exercise).cases(trapped), *(extra(trapped) for extra in cases_for(exercise))
        )
        try:
            for case in cases:
                if not (isinstance(case, Case) and case.passed is True):
                    return case.what
        except Exception as error:  # the grader's status "error"
            return f"{type(error).__name__}: {error}"
    return None


# --- a battery of answers: tests/test_wrong_answers_*.py ------------------------------------------------


def battery(wrong: dict[str, list], right: dict[str, list]) -> list:
    """pytest params (exercise, kind, spec) for each answer of `wrong` and `right`, with, for each
    exercise, the solution itself (right) and, for a function, the visible cases' answers copied
    out of the shipped checks (wrong)."""
    import pytest

    params = []
    for exercise in wrong:
        params.append(pytest.param(exercise, "right", None, id=f"{exercise}-the-solution"))
        if callable(made(exercise, None)):
            params.append(pytest.param(exercise, "wrong", "memorised", id=f"{exercise}-memorised"))
    for kind, table in (("wrong", wrong), ("right", right)):
        for exercise, specs in table.items():
            params += [
                pytest.param(exercise, kind, s, id=f"{exercise}-{kind}-{n}") for n, s in enumerate(specs, 1)
            ]
    return params


def judge(exercise: str, kind: str, spec: Any) -> None:
    """A wrong answer must fail some case; a right one must pass, as the grader grades it."""
    answer = memorised(exercise) if spec == "memorised" else made(exercise, spec)
    if kind == "wrong":
        assert first_failure(exercise, answer) is not None, f"{exercise}: a wrong answer passed"
    else:
        result = graded(exercise, answer)
        assert result.status == "passed", f"{exercise}: a right answer {result.status}: {result.detail}"
