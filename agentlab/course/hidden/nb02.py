"""Notebook 02's grading cases: plans the exercise's own cases do not show, each with its answer
worked out by hand (the sums are in the comments), so a right answer passes and a near miss does not."""

from collections.abc import Callable, Iterator, Sequence

from agentlab.course.checks import Case, attempt
from agentlab.course.hidden import grading
from agentlab.plan import Plan, Step
from agentlab.schedule import makespan, virtual_schedule


def _plan(*specs: tuple[str, Sequence[str]]) -> Plan:
    """A plan from (id, dependencies) pairs, in the order given; no step declares a duration."""
    return Plan([Step(i, "researcher", f"Do {i}.", tuple(deps)) for i, deps in specs])


def _span(plan: Plan, durations: dict[str, float], workers: int) -> float:
    return makespan(virtual_schedule(plan, durations, workers))


# --- 02.critical-path ------------------------------------------------------------------------------

# quarters and halves: a chain of 1.25 s and 2.5 s is 3.75 s, not 3.8 (nor 4)
_QUARTERS = _plan(("a", ()), ("b", ("a",)), ("c", ()))
_QUARTER_TIMES = {"a": 1.25, "b": 2.5, "c": 3.5}


@grading("02.critical-path")
def critical_path(longest_chain: Callable) -> Iterator[Case]:
    got, error = attempt(longest_chain, _QUARTERS, dict(_QUARTER_TIMES))
    right = not error and isinstance(got, tuple | list) and len(got) == 2
    chain, length = got if right else (None, None)
    right = right and list(chain) == ["a", "b"] and isinstance(length, int | float)
    yield Case(
        "a chain of a quarter-second step and a half-second one",
        right and abs(length - 3.75) < 1e-9,
        error or f"got {got!r}",
    )


# --- 02.makespan ---------------------------------------------------------------------------------

# Written out of dependency order, on 2 workers. In written order the ready steps d and b1 wait
# for a (and b1) to start: a and b1 at 0, d and b2 at 4, c at 5: the last ends at 8. Taken in
# topological order (a and b1 first, then b2, d, c) the finish is 9.
_SHUFFLED = _plan(("b2", ("b1",)), ("d", ("a",)), ("b1", ()), ("c", ("b1",)), ("a", ()))
_SHUFFLED_TIMES = {"b2": 1.0, "d": 4.0, "b1": 4.0, "c": 2.0, "a": 4.0}


@grading("02.makespan")
def makespan_cases(finish_time: Callable) -> Iterator[Case]:
    for what, plan, durations, workers, want in (
        ("a plan written out of dependency order, on 2 workers", _SHUFFLED, _SHUFFLED_TIMES, 2, 8.0),
        ("the same plan on 1 worker", _SHUFFLED, _SHUFFLED_TIMES, 1, 15.0),
    ):
        got, error = attempt(finish_time, plan, dict(durations), workers)
        right = not error and isinstance(got, int | float) and abs(got - want) < 1e-9
        yield Case(what, right, error or f"got {got!r}")


# --- 02.longest-first ----------------------------------------------------------------------------

# Written backwards (every step before its dependencies); the durations are in the `durations`
# argument: the steps declare none (a researcher's default is 3 s for each), or stale ones. On 2
# workers as written: x1 and x2 at 0, big at 2, h at 8, m at 12, t at 14 to 16. Longest chain
# first (x1 9, h 8, big 6, m 4, t 2, x2 2): x1 and h at 0, big at 4, m at 9, x2 at 10, t 11 to 13.
_BACKWARDS = (("t", ("m",)), ("m", ("h",)), ("x1", ()), ("x2", ()), ("big", ()), ("h", ()))
_BACKWARDS_TIMES = {"t": 2.0, "m": 2.0, "x1": 9.0, "x2": 2.0, "big": 6.0, "h": 4.0}
_STALE = {"t": 9.0, "m": 1.0, "x1": 9.0, "x2": 1.0, "big": 2.0, "h": 6.0}


@grading("02.longest-first")
def longest_first(rewrite: Callable) -> Iterator[Case]:
    bare = _plan(*_BACKWARDS)
    stale = Plan(
        [Step(i, "researcher", f"Do {i}.", tuple(deps), duration=_STALE[i]) for i, deps in _BACKWARDS]
    )
    for what, plan in (
        ("a plan written backwards, no durations on its steps", bare),
        ("a plan written backwards, stale durations on its steps", stale),
    ):
        got, error = attempt(rewrite, plan, dict(_BACKWARDS_TIMES))
        if error or not isinstance(got, Plan):
            yield Case(what, False, error or f"got {got!r}")
            continue
        same = sorted(got.steps, key=lambda s: s.id) == sorted(plan.steps, key=lambda s: s.id)
        after = _span(got, _BACKWARDS_TIMES, 2) if same else None
        yield Case(
            f"{what}: the rewrite on 2 workers",
            same and after <= 13.0 + 1e-9,
            f"it finishes at {after:g} s" if same else "the rewrite must keep every step as it is",
        )


# Two short steps feed a third, beside one long step, on 2 workers. Each step's level is its own
# duration plus the longest level that waits for it (p1 and p2: 2 + 1 = 3; solo: 4): solo and p1
# at 0, p2 at 2, join at 4 to 5. Counting the waiting step's duration twice (p1 and p2: 4) ties
# them with solo, and as written they start first: p1 and p2 at 0, solo at 2 to 6.
_FEED = _plan(("p1", ()), ("p2", ()), ("solo", ()), ("join", ("p1", "p2")))
_FEED_TIMES = {"p1": 2.0, "p2": 2.0, "solo": 4.0, "join": 1.0}


@grading("02.longest-first")
def levels_counted_once(rewrite: Callable) -> Iterator[Case]:
    what = "two short steps feeding a third, beside a long one, on 2 workers"
    got, error = attempt(rewrite, _FEED, dict(_FEED_TIMES))
    same = isinstance(got, Plan) and sorted(got.steps, key=lambda s: s.id) == sorted(
        _FEED.steps, key=lambda s: s.id
    )
    after = _span(got, _FEED_TIMES, 2) if not error and same else None
    yield Case(
        what, after is not None and after <= 5.0 + 1e-9, error or f"the rewrite finishes at {after!r} s"
    )
