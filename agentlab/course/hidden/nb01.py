"""Notebook 01's keys: its two multiple choices, marked right or wrong as a whole (never "k of n")."""

from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.hidden import grading

SYMPTOMS = {"bottleneck": "c", "single point of failure": "a", "decomposition cost": "e"}
AVOIDED = {"bottleneck", "single point of failure"}
GIVEN_UP = "y"
WHEN = {"p": "flat", "q": "hierarchy", "r": "flat", "s": "hierarchy"}


@grading("01.concerns")
def concerns(answer: Any) -> Iterator[Case]:
    answer = answer if isinstance(answer, Mapping) else {}
    avoided = answer.get("swarms avoid")
    avoided = set(avoided) if isinstance(avoided, list | tuple | set | frozenset) else avoided
    yield Case(
        "the symptoms of the three concerns",
        all(answer.get(k) == v for k, v in SYMPTOMS.items()),
        "not all right",
    )
    yield Case(
        "what a response-threshold swarm avoids, and what it gives up",
        avoided == AVOIDED and answer.get("swarms give up") == GIVEN_UP,
        "not both right",
    )


@grading("01.when-hierarchy")
def when_hierarchy(answer: Any) -> Iterator[Case]:
    answer = answer if isinstance(answer, Mapping) else {}
    yield Case("the four situations", all(answer.get(k) == v for k, v in WHEN.items()), "not all right")
