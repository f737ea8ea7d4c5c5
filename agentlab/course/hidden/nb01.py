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


# --- 01.hierarchy: chunks named out of alphabetical order --------------------------------------------

_CHUNKS = ("west coast", "east coast", "north isles")  # the manager's order is not the alphabet's


@grading("01.hierarchy")
def hierarchy_in_the_managers_order(run_hierarchy: Any) -> Iterator[Case]:
    from agentlab.course.checks import attempt
    from agentlab.plan import Plan, Step

    given: list[list[str]] = []

    def sub_planner(chunk: str) -> Plan:
        return Plan(
            [Step("s1", "worker", f"{chunk}: look."), Step("s2", "worker", f"{chunk}: sum up.", ("s1",))]
        )

    def act(step: Step, context: Mapping[str, str]) -> str:
        return f"{step.instruction.split(':')[0]}/{step.id}"

    def synthesize(task: str, results: list[str]) -> str:
        given.append(list(results))
        return " + ".join(results)

    got, error = attempt(
        run_hierarchy,
        "Write the report.",
        lambda task: list(_CHUNKS),
        sub_planner,
        {"worker": act},
        synthesize,
    )
    finals = [f"{chunk}/s2" for chunk in _CHUNKS]
    yield Case(
        "chunks named out of alphabetical order: the synthesizer gets their results in the manager's order",
        not error
        and given == [finals]
        and isinstance(got, tuple | list)
        and list(got)[:1] == [" + ".join(finals)],
        error or f"the synthesizer got {given}",
    )
