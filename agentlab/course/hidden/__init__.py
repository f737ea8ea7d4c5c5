"""The instructor's grading cases: extra hidden cases the grader runs after an exercise's own.

This folder never ships to learners (`agentlab course release` leaves it out) and is hidden inside
the grading sandbox. A module `nbNN.py` here registers, for an exercise of notebook NN, generators
of cases with `@grading("NN.name")`, written like the checks in `checks/nbNN.py` but with inputs
and keys learners have never seen. A module `keys_nbNN.py` holds the reference answers whose
results the feedback checks carry as data (so no working answer ships), and the grader's cases
worked out with them; it registers its cases the same way.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

from agentlab.course.checks import NOTEBOOKS, Case

CASES: dict[str, list[Callable[[Any], Iterator[Case]]]] = {}


def grading(exercise_id: str) -> Callable:
    def register(cases: Callable[[Any], Iterator[Case]]) -> Callable[[Any], Iterator[Case]]:
        CASES.setdefault(exercise_id, []).append(cases)
        return cases

    return register


def cases_for(exercise_id: str) -> list[Callable[[Any], Iterator[Case]]]:
    """The grading cases of an exercise (none when the instructor's folder holds none)."""
    notebook = exercise_id.split(".")[0]
    if notebook in NOTEBOOKS:
        for module in (f"agentlab.course.hidden.nb{notebook}", f"agentlab.course.hidden.keys_nb{notebook}"):
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as error:
                if error.name != module:
                    raise
    return CASES.get(exercise_id, [])
