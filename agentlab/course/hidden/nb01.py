"""Notebook 01's keys: its two multiple choices, marked right or wrong as a whole (never "k of n")."""

from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.hidden import grading
from agentlab.course.hidden.keys_nb01 import majority as reference  # most votes, then the newest

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
    handed: list[tuple[str, list[str]]] = []  # (step id, the inputs it was handed)

    def sub_planner(chunk: str) -> Plan:
        look, check = (
            Step("s1", "worker", f"{chunk}: look."),
            Step("s2", "worker", f"{chunk}: check.", ("s1",)),
        )
        return Plan([look, check, Step("s3", "worker", f"{chunk}: sum up.", ("s2",))])

    def act(step: Step, context: Mapping[str, str]) -> str:
        handed.append((step.id, sorted(context)))
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
    finals = [f"{chunk}/s3" for chunk in _CHUNKS]
    yield Case(
        "chunks named out of alphabetical order: the synthesizer gets their results in the manager's order",
        not error
        and given == [finals]
        and isinstance(got, tuple | list)
        and list(got)[:1] == [" + ".join(finals)],
        error or f"the synthesizer got {given}",
    )
    extra = [
        (step_id, keys) for step_id, keys in handed if keys != {"s1": [], "s2": ["s1"], "s3": ["s2"]}[step_id]
    ]
    yield Case(
        "a chunk's steps each handed the outputs of their own dependencies, no others",
        not error and len(handed) == 9 and not extra,
        error or f"{len(handed)} steps run; handed other inputs: {extra[:2]}",
    )


# --- 01.reconcile: workers the exercise's own cases never generate ---------------------------------


def _findings(seed: int) -> dict[str, list]:
    import random

    from agentlab.synthesis import Finding

    rng = random.Random(seed)
    steps = [f"w{i}" for i in range(1, rng.randint(2, 6) + 1)]
    out: dict[str, list] = {s: [] for s in steps}
    for claim in rng.sample(
        ("harbour master of Varra", "crew of Moth Queen", "area of Brindle", "seat of Tamsk"), 3
    ):
        for s in steps:
            if rng.random() < 0.8:
                value = rng.choice(("12", "120", "Odile Crane", "Jory Pike")[: rng.randint(2, 4)])
                out[s].append(Finding(claim, value, f"ledger {s}", rng.choice((1830, 1835, 1840))))
    return out


@grading("01.reconcile")
def reconcile(majority: Any) -> Iterator[Case]:
    from agentlab.course.checks import attempt

    wrong = []
    for seed, findings in [
        *((seed, _findings(seed)) for seed in range(900, 930)),
        ("none", {}),
        ("empty", {"w1": []}),
    ]:
        result, error = attempt(majority, findings)
        rows = error or [
            (r.claim, r.value, frozenset(r.cited))
            if all(hasattr(r, a) for a in ("claim", "value", "cited"))
            else r
            for r in (result if isinstance(result, list) else [result])
        ]
        if rows != reference(findings):
            wrong.append(seed)
    yield Case(
        "30 more generated cases (2-6 workers, 3 claims in any order)", not wrong, f"{len(wrong)} wrong"
    )
