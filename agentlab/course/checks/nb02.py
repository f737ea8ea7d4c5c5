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
from agentlab.course.checks import Case, attempt, exercise
from agentlab.plan import Plan, Step
from agentlab.planners import stub_planner
from agentlab.schedule import makespan, step_durations, virtual_schedule


def _plan_of(*specs: tuple[str, float, Sequence[str]]) -> Plan:
    """A plan from (id, duration, dependencies) triples; every step a researcher's."""
    return Plan([Step(i, "researcher", f"Do {i}.", tuple(deps), duration=d) for i, d, deps in specs])


def _durations_of(plan: Plan) -> dict[str, float]:
    return step_durations(plan, STUB_TEAM)


_REPORT = stub_planner("Write a short report.")
_ISLANDS = Plan(
    [Step(f"L{i + 1}", "researcher", f"Look up island {i + 1}.", duration=2.0 + i % 3) for i in range(6)]
    + [
        Step(f"C{j + 1}", "critic", f"Check pair {j + 1}.", (f"L{2 * j + 1}", f"L{2 * j + 2}"), duration=1.0)
        for j in range(3)
    ]
    + [Step("W", "writer", "Rank the islands.", ("C1", "C2", "C3"), duration=2.0)]
)
_OUT_OF_ORDER = _plan_of(("join", 2, ("b", "a")), ("a", 3, ()), ("b", 1, ("a",)), ("c", 5, ()))
_MOST_STEPS_IS_NOT_LONGEST = _plan_of(
    ("a", 1, ()), ("b", 1, ("a",)), ("c", 1, ("b",)), ("d", 1, ("c",)), ("x", 7, ()), ("y", 1, ("x",))
)
_SLOWER_OF_TWO = _plan_of(
    ("a", 1, ()), ("fast", 2, ("a",)), ("slow", 5, ("a",)), ("end", 1, ("fast", "slow"))
)
_ENDS_EARLY = _plan_of(("long", 6, ()), ("q", 1, ()), ("r", 1, ("q",)))
_ZERO = _plan_of(("a", 2, ()), ("gate", 0, ("a",)), ("c", 3, ("gate",)), ("d", 4, ()))
_ONE = _plan_of(("only", 3, ()))
# a short step written last heads the longest chain: first-written-first starts it late
_DEEP_HEAD = _plan_of(("x1", 3, ()), ("x2", 3, ()), ("h", 1, ()), ("m", 1, ("h",)), ("t", 6, ("m",)))
# a short step on the critical chain after a short first step: waiting for whole columns is slower
_COLUMNS = _plan_of(("a", 1, ()), ("c", 3, ()), ("b", 1, ("a",)))
_FAN_OF_FIVE = _plan_of(*[(f"L{i}", 3, ()) for i in range(1, 6)], ("W", 2, [f"L{i}" for i in range(1, 6)]))
_UNEVEN_FAN = _plan_of(("L1", 1, ()), ("L2", 1, ()), ("L3", 4, ()), ("W", 2, ("L1", "L2", "L3")))
_CHAIN = _plan_of(("a", 1, ()), ("b", 2, ("a",)), ("c", 3, ("b",)))
# two steps end at the same moment: finishing them one at a time lets the first one's dependant
# take a free worker before the ready steps written earlier, which wait for the second one
_TOGETHER = _plan_of(("a", 1, ()), ("b", 1, ()), ("c1", 1, ("b",)), ("c2", 1, ("b",)), ("d", 5, ("a",)))
# durations that are not whole seconds: a length or a clock kept as an int is off
_FRACTIONS = _plan_of(("a", 1.5, ()), ("b", 2.25, ("a",)), ("c", 3.5, ()), ("d", 0.75, ("c", "b")))
# the most work waiting below a step is not the longest chain below it: ordered by work, 12 s on 2
# workers; by the longest chain, 11 s (as written, 14 s)
_BY_WORK = _plan_of(
    ("n0", 2, ()),
    ("n1", 5, ()),
    ("n2", 1, ()),
    ("n3", 4, ("n2",)),
    ("n4", 4, ()),
    ("n5", 5, ("n0", "n1", "n2", "n4")),
)
_TOGETHER_MIRRORED = _plan_of(
    ("a", 1, ()), ("b", 1, ()), ("c1", 1, ("a",)), ("c2", 1, ("a",)), ("d", 5, ("b",))
)


def _span(plan: Plan, workers: int | None) -> float:
    return makespan(virtual_schedule(plan, _durations_of(plan), workers))


# --- 02.critical-path ---------------------------------------------------------------------------

_PATH_CASES = (
    ("the report plan", _REPORT),
    ("the six-island plan", _ISLANDS),
    ("a plan written out of order (a step before its dependencies)", _OUT_OF_ORDER),
    ("the chain with the most steps is not the longest in time", _MOST_STEPS_IS_NOT_LONGEST),
    ("the chain runs through the slower of two dependencies, listed second", _SLOWER_OF_TWO),
    ("the longest chain ends at a step that is not the last one", _ENDS_EARLY),
    ("a step that takes no time on the longest chain", _ZERO),
    ("a plan of one step", _ONE),
    ("durations that are not whole seconds", _FRACTIONS),
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
    hint="look at the order you visit the steps in (can a step come before its dependencies?), at which "
    "dependency decides when a step can finish, and at where the chain ends: not necessarily at the "
    "step written last",
)
def critical_path(longest_chain: Callable) -> Iterator[Case]:
    for what, plan in _PATH_CASES:
        durations = _durations_of(plan)
        _, want = plan.critical_path(durations)
        given = dict(durations)
        got, error = attempt(longest_chain, plan, given)
        if not error and given != durations:
            yield Case(what, False, "your function changed the durations dict it was handed")
            continue
        if error or not (isinstance(got, tuple) and len(got) == 2):
            yield Case(what, False, error or f"expected (chain, length), got {got!r}")
            continue
        yield Case(what, *_judge_path(plan, durations, *got, want))


def _judge_path(plan: Plan, durations: dict[str, float], path: Any, length: Any, want: float) -> tuple:
    """(right, what is wrong): the chain and the length are judged apart, so a failing line says
    which of the two is off, and never what the right ones are."""
    if not _is_chain(plan, path):
        return False, f"{path!r} is not a chain of dependencies from a step that waits for nothing"
    total = sum(durations[i] for i in path)
    length_ok = isinstance(length, int | float) and abs(length - total) < 1e-9
    mismatch = "" if length_ok else f"; and the length you returned, {length!r}, is not its total"
    if abs(total - want) > 1e-9:
        return False, f"the chain {list(path)} takes {total:g} s: a longer one exists{mismatch}"
    if not length_ok:
        return (
            False,
            f"the chain {list(path)} is the longest, but you returned {length!r} as its length",
        )
    return True, ""


# --- 02.makespan --------------------------------------------------------------------------------

_SPAN_CASES = (
    ("the report plan on 1 worker", _REPORT, 1),
    ("the report plan on 2 workers", _REPORT, 2),
    ("the six-island plan on 3 workers", _ISLANDS, 3),
    ("five 3 s lookups and a writer on 4 workers", _FAN_OF_FIVE, 4),
    ("more workers than steps", _ISLANDS, 20),
    ("the ready step written first goes first, even when it is short", _DEEP_HEAD, 2),
    ("a step starts when its own dependencies are done, not its whole column", _COLUMNS, 2),
    ("a plan written out of order", _OUT_OF_ORDER, 2),
    ("two steps end at the same moment: both finish before anything new starts", _TOGETHER, 2),
    ("the same, with the two steps' dependants the other way round", _TOGETHER_MIRRORED, 2),
    ("durations that are not whole seconds, on 1 worker", _FRACTIONS, 1),
    ("durations that are not whole seconds, on 2 workers", _FRACTIONS, 2),
)


@exercise(
    "02.makespan",
    "Play the list-scheduling policy out by hand",
    hint="look at a moment when several steps end together (do they all finish before anything new "
    "starts?), at the order in which ready steps take free workers (written order, not duration), and at "
    "what a step waits for: its own dependencies, not a whole column",
)
def makespan_by_hand(finish_time: Callable) -> Iterator[Case]:
    for what, plan, workers in _SPAN_CASES:
        want = _span(plan, workers)
        given = _durations_of(plan)
        got, error = attempt(finish_time, plan, given, workers)
        if not error and given != _durations_of(plan):
            error = "your function changed the durations dict it was handed"
        right = not error and isinstance(got, int | float) and abs(got - want) < 1e-9
        direction = "" if not isinstance(got, int | float) else " (too late)" if got > want else " (too soon)"
        yield Case(what, right, error or f"got {got!r}{direction}")


# --- 02.longest-first ---------------------------------------------------------------------------


# (what, plan, workers, the finish of the plan written longest chain first on those workers)
_BETTER = (
    ("the six-island plan on 3 workers", _ISLANDS, 3, 9.0),
    ("the six-island plan on 4 workers", _ISLANDS, 4, 8.0),
    ("a short step heading the longest chain, on 2 workers", _DEEP_HEAD, 2, 8.0),
    ("a fan-out with one slow lookup, on 2 workers", _UNEVEN_FAN, 2, 6.0),
    ("the most work below a step is not its longest chain, on 2 workers", _BY_WORK, 2, 11.0),
)
_NO_WORSE = (
    ("the report plan on 2 workers", _REPORT, 2, 6.0),
    ("a chain on 2 workers", _CHAIN, 2, 6.0),
    ("the six-island plan on 1 worker", _ISLANDS, 1, 23.0),
)


@exercise(
    "02.longest-first",
    "Write the same plan in an order that finishes sooner",
    hint="look at the priority you order the steps by: does it stop at the step's own duration, or at "
    "the next step, instead of the longest chain that waits for the step all the way to the end? and at "
    "whether every step comes back exactly as it was",
)
def longest_first(rewrite: Callable) -> Iterator[Case]:
    for better, cases in ((True, _BETTER), (False, _NO_WORSE)):
        for what, plan, workers, best in cases:
            yield _judge_rewrite(rewrite, what, plan, workers, best, better)


def _judge_rewrite(rewrite: Callable, what: str, plan: Plan, workers: int, best: float, better: bool) -> Case:
    """One case of 02.longest-first: `rewrite(plan, durations)` must keep every step, finish on
    `workers` workers no later than `best` (longest chain first), and sooner than as written when
    `better` (else no later)."""
    before = _span(plan, workers)
    given = _durations_of(plan)
    got, error = attempt(rewrite, plan, given)
    if not error and given != _durations_of(plan):
        error = "your function changed the durations dict it was handed"
    if error or not isinstance(got, Plan):
        return Case(what, False, error or f"returned {type(got).__name__}, not a Plan")
    if sorted(got.steps, key=lambda s: s.id) != sorted(plan.steps, key=lambda s: s.id):
        return Case(what, False, "the rewrite must keep every step as it is (id, role, dependencies)")
    after = _span(got, workers)
    right = (after < before if better else after <= before) and after <= best + 1e-9
    need = "sooner than as written" if better else "no later than as written"
    return Case(
        f"{what}: {need}",
        right,
        f"the rewrite finishes at {after:g} s, the plan as written at {before:g} s",
    )
