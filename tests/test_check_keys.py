"""The feedback checks that ship carry expected values as data, never a working answer.

Before, 11 function exercises had their reference answer in `checks/nbNN.py` (`_speedup`,
`_best_shape`, `_lost`, ...): copied into a notebook, it passed. Now each check's visible cases hold
their expected values as literals, and the references live in the instructor's
`hidden/keys_nbNN.py`, which also adds the grader's own cases: an answer that looks the visible
cases up fails those.
"""

import importlib
import inspect
import itertools
import pickle
import pkgutil
from pathlib import Path

import notebook_code
import pytest

import agentlab.course.checks as shipped
from agentlab.course import hidden
from agentlab.course.cells import answer_names, read_cells
from agentlab.course.checks import NAMES, NOTEBOOKS, exercises_of, find
from agentlab.course.forbidden import forbidding
from agentlab.course.grading import verdict
from agentlab.guardrails import AuditLog

ROOT = Path(__file__).resolve().parents[1]
ELSEWHERE = {"07.pick"}  # its check is being rewritten on another branch (the statistics of issue 35)
KEYED = {  # exercise -> the module of its keys (the grader's reference and its own cases)
    "01.reconcile": "keys_nb01",
    "02.longest-first": "keys_nb02",
    "03.score": "keys_nb03",
    "05.shape": "keys_nb05",
    "06.best-cut": "keys_nb06",
    "06.retries-correlated": "keys_nb06",
    "07.react-tokens": "keys_nb07",
    "07.router-share": "keys_nb07",
    "08.threshold": "keys_nb08",
    "08.handoff-audit": "keys_nb08",
    "09.denied": "keys_nb09",
    "09.sanitise": "keys_nb09",
    "10.speedup": "keys_nb10",
    "10.break-even": "keys_nb10",
}


def check_modules(notebook: str) -> list:
    """The modules of the release's checks for one notebook: `nbNN` and its `_nbNN_*` helpers."""
    names = [f"nb{notebook}"] + [
        m.name for m in pkgutil.iter_modules(shipped.__path__) if m.name.startswith(f"_nb{notebook}_")
    ]
    return [importlib.import_module(f"agentlab.course.checks.{name}") for name in names]


def passes(exercise: str, answer) -> bool:
    """Whether `answer` passes every case of `exercise`, the grader's own included, with the
    helpers it forbids refused (as they are absent in the grader's sandbox)."""
    try:
        with forbidding(exercise, answer) as called:
            extra = (cases(called) for cases in hidden.cases_for(exercise))
            tried = 0
            for case in itertools.chain(find(exercise).cases(called), *extra):
                if case.passed is not True:
                    return False  # the first failed case settles it
                tried += 1
    except Exception:
        return False
    return tried > 0


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_function_of_the_shipped_checks_passes_an_exercise_when_copied(notebook):
    """Every function the release's checks define, tried as the answer to each exercise of its
    notebook, as it is and given only the first one or two arguments: none passes."""
    functions = [
        f
        for module in check_modules(notebook)
        for _, f in inspect.getmembers(module, inspect.isfunction)
        if f.__module__ == module.__name__
    ]
    copies = [(f.__name__, f) for f in functions]
    for k in (1, 2):  # a reference that takes fewer arguments than the answer (the plan, not the durations)
        copies += [(f"{f.__name__} on {k}", lambda *a, f=f, k=k, **_: f(*a[:k])) for f in functions]
    for exercise in set(exercises_of(notebook)) - ELSEWHERE:
        assert not [name for name, copy in copies if passes(exercise, copy)], exercise


def key(args: tuple) -> bytes | str:
    """The same for the same inputs, made apart (a log holds a lock, so it is keyed by its entries)."""
    try:
        return pickle.dumps(args)
    except (TypeError, pickle.PicklingError):
        return repr([list(a) if isinstance(a, AuditLog) else a for a in args])


# not those whose data cannot be an answer: digests (01), a bound (02), the chance a simulation estimates (06)
LOOKED_UP = sorted(set(KEYED) - {"01.reconcile", "02.longest-first", "06.retries-correlated"})


@pytest.mark.parametrize("exercise", LOOKED_UP)
def test_the_grader_adds_cases_an_answer_that_looks_the_visible_ones_up_fails(exercise):
    """An answer that returns each visible case's expected value (read from the shipped table) passes
    the feedback's cases and fails the grader's."""
    keys = importlib.import_module(f"agentlab.course.hidden.{KEYED[exercise]}")
    visible = keys.visible(exercise)
    table = {key(tuple(case[1:-1])): case[-1] for case in visible}
    given = len(visible[0]) - 2  # the inputs a visible case names (03.score also hands a solver)

    def looked_up(*args):
        return table[key(args[:given])]

    named = {case[0] for case in visible}
    cases = find(exercise).cases(looked_up)
    assert all(case.passed for case in cases if any(case.what.startswith(n) for n in named))
    assert not passes(exercise, looked_up)


@pytest.mark.parametrize("exercise", sorted(KEYED))
def test_the_shipped_expected_values_are_the_references_and_the_solution_passes_the_graders_cases(exercise):
    keys = importlib.import_module(f"agentlab.course.hidden.{KEYED[exercise]}")
    reference = keys.REFERENCES[exercise]
    for _, *inputs, want in keys.visible(exercise):
        assert want == reference(*inputs)
    notebook_code.skip_without_solutions()
    notebook = exercise.split(".")[0]
    solution = ROOT / "solutions" / f"{NAMES[notebook]}.ipynb"
    name = answer_names(notebook, ROOT, read_cells(solution))[exercise]
    result = verdict(exercise, notebook_code.define(solution, name))
    assert result.status == "passed", result
