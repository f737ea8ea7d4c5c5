"""A plan as a graph: the order its steps can run in, what a step needs and what needs it, and
the cycle that stops a plan from running.

Plain Python, no networkx: these run in every kernel, sandbox and Dask worker, and importing
networkx costs each of them 0.4 s. `Plan.to_networkx()` is there for drawing and exploring.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Protocol


class Step(Protocol):
    """What the graph needs of a step: its id and the ids it depends on (a `plan.Step` is one;
    so is anything else with these two fields, which keeps this module free of the plan type)."""

    @property
    def id(self) -> str: ...

    @property
    def depends_on(self) -> Sequence[str]: ...


def in_order(steps: Sequence[Step]) -> list[str]:
    """Step ids in dependency order by Kahn's algorithm: take a ready step (all it depends on taken),
    the one written first when several are ready, as `schedule.ListScheduler` does. The steps of a
    cycle are never ready, so they are missing from the answer."""
    waiting = {s.id: len(s.depends_on) for s in steps}  # dependencies not yet taken
    needed_by: dict[str, list[int]] = {}  # step id -> written positions of the steps that need it
    for i, s in enumerate(steps):
        for d in s.depends_on:
            needed_by.setdefault(d, []).append(i)
    ready = [i for i, s in enumerate(steps) if not s.depends_on]  # a heap of written positions
    order: list[str] = []
    while ready:
        taken = steps[heapq.heappop(ready)].id
        order.append(taken)
        for i in needed_by.get(taken, ()):
            waiting[steps[i].id] -= 1
            if not waiting[steps[i].id]:
                heapq.heappush(ready, i)
    return order


def sinks(steps: Sequence[Step]) -> list[str]:
    """The ids of the steps no step depends on (a plan's ends), in the order `in_order` gives."""
    needed = {d for s in steps for d in s.depends_on}
    return [i for i in in_order(steps) if i not in needed]


def below(steps: Sequence[Step], step_id: str) -> set[str]:
    """The ids of every step that needs `step_id`, directly or through others."""
    needs = {s.id: s.depends_on for s in steps}
    found = {step_id}
    for taken in in_order(steps):  # a step is below once one of its dependencies is
        if found.intersection(needs[taken]):
            found.add(taken)
    return found - {step_id}


def above(steps: Sequence[Step], step_id: str) -> set[str]:
    """The ids of every step that `step_id` needs, directly or through others."""
    needs = {s.id: s.depends_on for s in steps}
    found = {step_id}
    for taken in reversed(in_order(steps)):  # `below` backwards: a step is above once it is needed
        if taken in found:
            found.update(needs[taken])
    return found - {step_id}


def cycle(steps: Sequence[Step]) -> list[str]:
    """The step ids of one cycle, in dependency order; [] when the steps can all run."""
    if len(in_order(steps)) == len(steps):  # the common case, and Kahn's algorithm settles it
        return []
    import networkx as nx  # only to name the cycle, as a learner's plan has it

    graph = nx.DiGraph((d, s.id) for s in steps for d in s.depends_on)
    return [u for u, _ in nx.find_cycle(graph)]
