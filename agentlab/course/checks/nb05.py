"""Checks for the exercises of notebook 05, hierarchical teams.

- `05.team-calls`: predict the model calls of a hierarchy from the width of a sum, the depth and
  the branching;
- `05.rollup`: tokens per level, each call counted once, by the team that made it;
- `05.shape`: the shape of team that keeps every planner's plan smallest within a call budget.

Every expected value is measured here, by running `Hierarchy` on the simulated LLM, so a learner's
rule is held to what the kit really does, not to a formula written next to it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import cache

from agentlab import world
from agentlab.checks import Case, attempt, exercise
from agentlab.faults import Fault
from agentlab.hierarchy import Hierarchy, Node, rollup
from agentlab.llm import SimulatedLLM
from agentlab.recovery import Replan, Retry


def total_question(width: int) -> str:
    """A question that sums one quantity over `width` islands or towns (any of them: the shape of
    the tree depends only on how many there are)."""
    return world.fanout_task(random.Random(width), width, "total").question


@cache
def measured(width: int, depth: int, branching: int) -> tuple[int, int]:
    """(model calls, the largest plan any one team wrote) for a sum of `width` items, no errors."""
    root = Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(total_question(width))
    return len(root.calls()), max(len(team.run.plan) for team in root.walk())


# --- 05.team-calls --------------------------------------------------------------------------------

CALL_CASES = (
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
    hint="every team makes two calls (its plan and its report); a team above the bottom cuts its items "
    "into min(branching, items) groups and gives each group to a team one level down; a group that "
    "cannot be cut (one item, or branching 1) still goes down, whole, to the bottom",
)
def team_calls(predict: Callable[[int, int, int], int]) -> Iterator[Case]:
    for width, depth, branching in CALL_CASES:
        want, _ = measured(width, depth, branching)
        got, error = attempt(predict, width, depth, branching)
        what = f"a sum of {width} items, depth {depth}, branching {branching} → {want} calls"
        yield Case(what, not error and got == want, error or f"got {got!r}")


# --- 05.rollup -----------------------------------------------------------------------------------


def rollup_trees() -> list[tuple[str, Node]]:
    """Trees to roll up: plain, deep, with a part retried, and with a sub-team that gave up."""
    sim = SimulatedLLM(seed=0)
    wide, four = total_question(8), total_question(4)
    broken = {"s2": [Fault(role="researcher")]}  # the second part's researchers all fail
    deep = {"s2/s1": [Fault(role="researcher")]}  # the same, a level further down
    return [
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


@exercise(
    "05.rollup",
    "Roll usage up by level",
    hint="walk every team in the tree (node.walk()), failed attempts included; from each team's "
    "run.calls take only the calls not made under the role LEAD (those belong to its sub-teams, which "
    "you will visit anyway); the levels must add up to the manager's bill",
)
def rollup_levels(tokens_by_level: Callable[[Node], dict[int, int]]) -> Iterator[Case]:
    for what, root in rollup_trees():
        report = rollup(root)
        want = {int(level.split()[-1]): t.usage.total_tokens for level, t in report.by_level.items()}
        got, error = attempt(tokens_by_level, root)
        right = not error and isinstance(got, dict) and got == want
        bill = report.total.usage.total_tokens
        yield Case(f"{what}: {bill:,} tokens in all → {want}", right, error or f"got {got!r}")


# --- 05.shape ------------------------------------------------------------------------------------

DEPTHS, BRANCHINGS = (1, 2, 3), (2, 3, 4)


def best_shape(width: int, budget: int) -> tuple[int, int] | None:
    """The (depth, branching) whose largest plan is smallest within `budget` calls; ties go to
    fewer calls, then the shallower, then the narrower shape."""
    shapes = [(d, b) for d in DEPTHS for b in BRANCHINGS]
    within = [(measured(width, d, b)[1], measured(width, d, b)[0], d, b) for d, b in shapes]
    within = [shape for shape in within if shape[1] <= budget]
    return min(within)[2:] if within else None


SHAPE_CASES = (
    (8, 6),  # two levels, halves
    (8, 8),  # three parts a level is worth two more calls
    (8, 20),  # three levels
    (8, 4),  # only the flat team fits
    (4, 30),  # two levels and three write plans of equal size: fewer calls win
    (6, 1),  # nothing fits
)


@exercise(
    "05.shape",
    "Choose a shape for a call budget",
    hint="for every depth (1-3) and branching (2-4), measure the calls and the largest plan (the most "
    "steps any one team's plan has); keep the shapes within the budget; take the smallest largest "
    "plan, then the fewest calls, then the smaller depth and branching; None when nothing fits",
)
def shape(choose: Callable[[int, int], tuple[int, int] | None]) -> Iterator[Case]:
    for width, budget in SHAPE_CASES:
        want = best_shape(width, budget)
        got, error = attempt(choose, width, budget)
        if want is None:
            what = f"a sum of {width} items within {budget} call → None"
        else:
            calls, largest = measured(width, *want)
            what = (
                f"a sum of {width} items within {budget} calls → depth {want[0]}, branching {want[1]} "
                f"({calls} calls, plans of at most {largest} steps)"
            )
        right = not error and (got == want if want is None else tuple(got or ()) == want)
        yield Case(what, right, error or f"got {got!r}")
