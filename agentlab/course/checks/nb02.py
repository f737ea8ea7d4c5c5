"""Checks for the exercises of notebook 02, plans as DAGs.

- `02.critical-path`: the longest chain of dependencies by time, written by hand;
- `02.makespan`: the list-scheduling policy played out by hand on k workers;
- `02.longest-first`: a rewrite of a plan (the same steps, written in another order) that the
  same policy finishes sooner.

The right answers come from the kit itself: `Plan.critical_path` and
`schedule.virtual_schedule`, on plans the notebook never shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentlab.agents import STUB_TEAM
from agentlab.checks import Case, attempt, exercise
from agentlab.plan import Plan, Step
from agentlab.planners import stub_planner
from agentlab.schedule import makespan, step_durations, virtual_schedule


def plan_of(*specs: tuple[str, float, Sequence[str]]) -> Plan:
    """A plan from (id, duration, dependencies) triples; every step a researcher's."""
    return Plan([Step(i, "researcher", f"Do {i}.", tuple(deps), duration=d) for i, d, deps in specs])


def durations_of(plan: Plan) -> dict[str, float]:
    return step_durations(plan, STUB_TEAM)


REPORT = stub_planner("Write a short report.")
ISLANDS = Plan(
    [Step(f"L{i + 1}", "researcher", f"Look up island {i + 1}.", duration=2.0 + i % 3) for i in range(6)]
    + [
        Step(f"C{j + 1}", "critic", f"Check pair {j + 1}.", (f"L{2 * j + 1}", f"L{2 * j + 2}"), duration=1.0)
        for j in range(3)
    ]
    + [Step("W", "writer", "Rank the islands.", ("C1", "C2", "C3"), duration=2.0)]
)
OUT_OF_ORDER = plan_of(("join", 2, ("b", "a")), ("a", 3, ()), ("b", 1, ("a",)), ("c", 5, ()))
MOST_STEPS_IS_NOT_LONGEST = plan_of(
    ("a", 1, ()), ("b", 1, ("a",)), ("c", 1, ("b",)), ("d", 1, ("c",)), ("x", 7, ()), ("y", 1, ("x",))
)
SLOWER_OF_TWO = plan_of(("a", 1, ()), ("fast", 2, ("a",)), ("slow", 5, ("a",)), ("end", 1, ("fast", "slow")))
ENDS_EARLY = plan_of(("long", 6, ()), ("q", 1, ()), ("r", 1, ("q",)))
ZERO = plan_of(("a", 2, ()), ("gate", 0, ("a",)), ("c", 3, ("gate",)), ("d", 4, ()))
ONE = plan_of(("only", 3, ()))
# a short step written last heads the longest chain: first-written-first starts it late
DEEP_HEAD = plan_of(("x1", 3, ()), ("x2", 3, ()), ("h", 1, ()), ("m", 1, ("h",)), ("t", 6, ("m",)))
# a short step on the critical chain after a short first step: waiting for whole columns is slower
COLUMNS = plan_of(("a", 1, ()), ("c", 3, ()), ("b", 1, ("a",)))
FAN_OF_FIVE = plan_of(*[(f"L{i}", 3, ()) for i in range(1, 6)], ("W", 2, [f"L{i}" for i in range(1, 6)]))
UNEVEN_FAN = plan_of(("L1", 1, ()), ("L2", 1, ()), ("L3", 4, ()), ("W", 2, ("L1", "L2", "L3")))
CHAIN = plan_of(("a", 1, ()), ("b", 2, ("a",)), ("c", 3, ("b",)))


def span(plan: Plan, workers: int | None) -> float:
    return makespan(virtual_schedule(plan, durations_of(plan), workers))


# --- 02.critical-path ---------------------------------------------------------------------------

PATH_CASES = (
    ("the report plan", REPORT),
    ("the six-island plan", ISLANDS),
    ("a plan written out of order (a step before its dependencies)", OUT_OF_ORDER),
    ("the chain with the most steps is not the longest in time", MOST_STEPS_IS_NOT_LONGEST),
    ("the chain runs through the slower of two dependencies, listed second", SLOWER_OF_TWO),
    ("the longest chain ends at a step that is not the last one", ENDS_EARLY),
    ("a step that takes no time on the longest chain", ZERO),
    ("a plan of one step", ONE),
)


def _is_chain(plan: Plan, path: Any) -> bool:
    """A non-empty list of step ids, each depending on the one before, from a step that waits for nothing."""
    if not isinstance(path, list | tuple) or not path or any(i not in plan.ids for i in path):
        return False
    links = all(path[k] in plan[path[k + 1]].depends_on for k in range(len(path) - 1))
    return links and not plan[path[0]].depends_on


@exercise(
    "02.critical-path",
    "The critical path, by hand",
    hint="walk the steps in topological order (not written order); a step's earliest finish is the "
    "latest finish among its dependencies plus its own duration; remember which dependency that was, "
    "and walk back from the step that finishes last overall",
)
def critical_path(longest_chain: Callable) -> Iterator[Case]:
    for what, plan in PATH_CASES:
        durations = durations_of(plan)
        want_path, want = plan.critical_path(durations)
        got, error = attempt(longest_chain, plan, dict(durations))
        ok = not error and isinstance(got, tuple) and len(got) == 2
        path, length = got if ok else (None, None)
        right = (
            ok
            and isinstance(length, int | float)
            and abs(length - want) < 1e-9
            and _is_chain(plan, path)
            and abs(sum(durations[i] for i in path) - want) < 1e-9
        )
        yield Case(what, right, error or f"got {got!r}; the longest chain takes {want:g} s")


# --- 02.makespan --------------------------------------------------------------------------------

SPAN_CASES = (
    ("the report plan on 1 worker", REPORT, 1),
    ("the report plan on 2 workers", REPORT, 2),
    ("the six-island plan on 3 workers", ISLANDS, 3),
    ("five 3 s lookups and a writer on 4 workers", FAN_OF_FIVE, 4),
    ("more workers than steps", ISLANDS, 20),
    ("the ready step written first goes first, even when it is short", DEEP_HEAD, 2),
    ("a step starts when its own dependencies are done, not its whole column", COLUMNS, 2),
    ("a plan written out of order", OUT_OF_ORDER, 2),
)


@exercise(
    "02.makespan",
    "Play the list-scheduling policy out by hand",
    hint="keep the clock, the running steps with their end times, and the done steps; at each moment "
    "finish every step that ends then, then start ready steps in written order while workers are "
    "free, then jump the clock to the next end. Nobody waits for a whole column",
)
def makespan_by_hand(finish_time: Callable) -> Iterator[Case]:
    for what, plan, workers in SPAN_CASES:
        want = span(plan, workers)
        got, error = attempt(finish_time, plan, durations_of(plan), workers)
        right = not error and isinstance(got, int | float) and abs(got - want) < 1e-9
        yield Case(what, right, error or f"got {got!r}, the policy finishes at {want:g} s")


# --- 02.longest-first ---------------------------------------------------------------------------

BETTER = (
    ("the six-island plan on 3 workers", ISLANDS, 3),
    ("the six-island plan on 4 workers", ISLANDS, 4),
    ("a short step heading the longest chain, on 2 workers", DEEP_HEAD, 2),
    ("a fan-out with one slow lookup, on 2 workers", UNEVEN_FAN, 2),
)
NO_WORSE = (
    ("the report plan on 2 workers", REPORT, 2),
    ("a chain on 2 workers", CHAIN, 2),
    ("the six-island plan on 1 worker", ISLANDS, 1),
)


@exercise(
    "02.longest-first",
    "Write the same plan in an order that finishes sooner",
    hint="give each step a priority: its own duration plus the longest chain of steps that wait for "
    "it, all the way to the end (not just its own duration, and not just the next step); write the "
    "steps highest priority first, with their dependencies unchanged",
)
def longest_first(rewrite: Callable) -> Iterator[Case]:
    for what, plan, workers in BETTER + NO_WORSE:
        before = span(plan, workers)
        got, error = attempt(rewrite, plan, durations_of(plan))
        if error or not isinstance(got, Plan):
            yield Case(what, False, error or f"returned {type(got).__name__}, not a Plan")
            continue
        if sorted(got.steps, key=lambda s: s.id) != sorted(plan.steps, key=lambda s: s.id):
            yield Case(what, False, "the rewrite must keep every step as it is (id, role, dependencies)")
            continue
        after = span(got, workers)
        better = (what, plan, workers) in BETTER
        right = after < before if better else after <= before
        need = "lower than" if better else "no higher than"
        yield Case(f"{what}: {need} {before:g} s", right, f"the rewritten plan finishes at {after:g} s")
