"""Notebook 07's key: which topology fits each task (marked as a whole, never "k of n")."""

from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.hidden import grading

# C, a long chain known in advance, is planned once: plan-execute, or a planner with workers, which
# runs the same plan one step at a time (the exercise's text says either is right).
SHAPES = {"A": {"react"}, "B": {"planner+workers"}, "C": {"plan-execute", "planner+workers"}, "D": {"react"}}


@grading("07.shapes")
def shapes(choice: Any) -> Iterator[Case]:
    choice = choice if isinstance(choice, Mapping) else {}
    yield Case("the four tasks", all(choice.get(k) in fits for k, fits in SHAPES.items()), "not all right")
