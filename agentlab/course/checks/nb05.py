"""Checks for the exercises of notebook 05, hierarchical teams.

- `05.team-calls`: predict the model calls of a hierarchy from the width of a sum, the depth and
  the branching;
- `05.rollup`: tokens per level, each call counted once, by the team that made it;
- `05.shape`: the shape of team that keeps every planner's plan smallest within a call budget.

Every expected value is measured here, by running `Hierarchy` on the simulated LLM, so a learner's
rule is held to what the kit really does, not to a formula written next to it.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable, Iterator
from functools import cache

from agentlab import world
from agentlab.course.checks import Case, attempt, exercise
from agentlab.faults import Fault
from agentlab.hierarchy import Hierarchy, Node, rollup
from agentlab.llm import SimulatedLLM
from agentlab.recovery import Replan, Retry


def _total_question(width: int) -> str:
    """A question that sums one quantity over `width` islands or towns (any of them: the shape of
    the tree depends only on how many there are)."""
    return world.fanout_task(random.Random(width), width, "total").question


@cache
def _measured(width: int, depth: int, branching: int) -> tuple[int, int]:
    """(model calls, the largest plan any one team wrote) for a sum of `width` items, no errors."""
    root = Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(_total_question(width))
    return len(root.calls()), max(len(team.run.plan) for team in root.walk())


# --- 05.team-calls --------------------------------------------------------------------------------

_CALL_CASES = (
    (8, 2, 2),  # notebook 05's task
    (8, 3, 2),
    (5, 2, 2),  # uneven halves: 3 and 2
    (6, 2, 4),  # parts of one item each still get a team of their own
    (3, 3, 3),  # a part of one item cannot split, but goes down every level
    (6, 3, 4),  # parts of one item halfway down
    (4, 1, 3),  # flat
    (4, 3, 1),  # branching 1: every level only hands on the whole task
)


@exercise(
    "05.team-calls",
    "Predict a hierarchy's model calls",
    hint="look at what happens to a group that cannot be cut (a single item, or branching 1) above the "
    "bottom level: it still goes down, whole, to the bottom; at how uneven groups are cut; and at what a "
    "team at the bottom does",
)
def team_calls(predict: Callable[[int, int, int], int]) -> Iterator[Case]:
    for width, depth, branching in _CALL_CASES:
        want, _ = _measured(width, depth, branching)
        got, error = attempt(predict, width, depth, branching)
        what = f"a sum of {width} items, depth {depth}, branching {branching}"
        direction = "" if not isinstance(got, int | float) else " (too many)" if got > want else " (too few)"
        yield Case(what, not error and got == want, error or f"got {got!r}{direction}")


# --- 05.rollup -----------------------------------------------------------------------------------


def _rollup_trees() -> list[tuple[str, Node]]:
    """Trees to roll up: plain, deep, with a part retried, and with a sub-team that gave up. A fresh
    copy each time: a learner's function may change the tree it is handed."""
    return pickle.loads(_grown_trees())


@cache  # the simulator is deterministic: the trees are grown once, and kept as the bytes of a copy
def _grown_trees() -> bytes:
    sim = SimulatedLLM(seed=0)
    wide, four = _total_question(8), _total_question(4)
    broken = {"s2": [Fault(role="researcher")]}  # the second part's researchers all fail
    deep = {"s2/s1": [Fault(role="researcher")]}  # the same, a level further down
    trees = [
        ("two levels, a sum of 4", Hierarchy(sim, depth=2).solve(four)),
        ("three levels, a sum of 8", Hierarchy(sim, depth=3).solve(wide)),
        (
            "two levels, a part tried twice and given up",
            Hierarchy(sim, recovery=[Retry(1)], faults=broken).solve(wide),
        ),
        (
            "three levels, a sub-team that gave up and was replaced",
            Hierarchy(sim, depth=3, recovery=[Replan(max_replans=1)], faults=deep).solve(wide),
        ),
        ("one level: a flat team", Hierarchy(sim, depth=1).solve(four)),
    ]
    return pickle.dumps(trees)


@exercise(
    "05.rollup",
    "Roll usage up by level",
    hint="look at which calls in a team's run its sub-teams made (they come back inside their answers, "
    "under one role, and you will visit those teams anyway), at whether every team is visited, the failed "
    "and replaced ones too, and check that your levels add up to the manager's bill",
)
def rollup_levels(tokens_by_level: Callable[[Node], dict[int, int]]) -> Iterator[Case]:
    for what, root in _rollup_trees():
        report = rollup(root)
        want = {int(level.split()[-1]): t.usage.total_tokens for level, t in report.by_level.items()}
        got, error = attempt(tokens_by_level, root)
        right = not error and isinstance(got, dict) and got == want
        bill = report.total.usage.total_tokens
        note = ""
        if isinstance(got, dict) and _numbers(got.values()) and sum(got.values()) != bill:
            note = f"; your levels add up to {sum(got.values()):,} tokens, the manager's bill is {bill:,}"
        yield Case(what, right, error or f"got {got!r}{note}")


# --- 05.shape ------------------------------------------------------------------------------------

_DEPTHS, _BRANCHINGS = (1, 2, 3), (2, 3, 4)
_SHAPES = [(d, b) for d in _DEPTHS for b in _BRANCHINGS]


_SHAPE_CASES = (  # (width, budget, the shape expected or None)
    (8, 6, (2, 2)),  # two levels, halves
    (8, 8, (2, 3)),  # three parts a level is worth two more calls
    (8, 20, (3, 2)),  # three levels
    (8, 4, (1, 2)),  # only the flat team fits
    (4, 30, (2, 2)),  # two levels and three write plans of equal size: fewer calls win
    (6, 1, None),  # nothing fits
)


@exercise(
    "05.shape",
    "Choose a shape for a call budget",
    hint="look at which shapes you compare (every depth 1-3 and branching 2-4, each measured on a sum of "
    "`width` items), at the budget (at most, not less than), at the order of the tie-breaks, and at what "
    "you return when nothing fits",
)
def shape(choose: Callable[[int, int], tuple[int, int] | None]) -> Iterator[Case]:
    for case in _SHAPE_CASES:
        yield _judge_shape(choose, *case)


def _judge_shape(choose: Callable, width: int, budget: int, want: tuple[int, int] | None) -> Case:
    """One case of 05.shape: `choose(width, budget)` against the shape `want` (or None)."""
    got, error = attempt(choose, width, budget)
    what = f"a sum of {width} items within {budget} call{'s' if budget > 1 else ''}"
    shape_ok = isinstance(got, tuple | list) and tuple(got) in _SHAPES
    right = not error and (got is None if want is None else shape_ok and tuple(got) == want)
    if shape_ok:
        calls, largest = _measured(width, *got)
        detail = f"got {tuple(got)}, which makes {calls} calls, its largest plan {largest} steps"
    else:
        detail = f"got {got!r}"
    return Case(what, right, error or detail)


def _numbers(values) -> bool:
    return all(isinstance(v, int | float) for v in values)
