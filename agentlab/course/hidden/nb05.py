"""Notebook 05's grading cases: shapes of team and trees the exercise's own cases do not show,
every expected value measured by running the kit's `Hierarchy` on the simulated LLM."""

import functools
import random
from collections.abc import Callable, Iterator

from agentlab import world
from agentlab.course.checks import Case, attempt
from agentlab.course.hidden import grading
from agentlab.faults import Fault
from agentlab.hierarchy import Hierarchy, Node, rollup
from agentlab.llm import SimulatedLLM
from agentlab.recovery import Retry


@functools.cache
def _measured(width: int, depth: int, branching: int) -> tuple[int, int]:
    """(model calls, the largest plan any one team wrote) for a sum of `width` items, no errors."""
    question = world.fanout_task(random.Random(500 + width), width, "total").question
    root = Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(question)
    return len(root.calls()), max(len(team.run.plan) for team in root.walk())


@grading("05.team-calls")
def team_calls(predict: Callable) -> Iterator[Case]:
    for width, depth, branching in ((7, 3, 2), (8, 2, 3), (2, 3, 4), (5, 1, 2), (7, 2, 5), (6, 3, 3)):
        want, _ = _measured(width, depth, branching)
        got, error = attempt(predict, width, depth, branching)
        yield Case(
            f"a sum of {width} items, depth {depth}, branching {branching}",
            not error and got == want,
            error or f"got {got!r}",
        )


def _trees() -> list[tuple[str, Node]]:
    sim = SimulatedLLM(seed=0)
    six = world.fanout_task(random.Random(606), 6, "total").question
    seven = world.fanout_task(random.Random(707), 7, "highest").question
    broken = {"s1": [Fault(role="researcher")]}  # the first part's researchers all fail
    return [
        ("two levels of three teams, the highest of 7", Hierarchy(sim, depth=2, branching=3).solve(seven)),
        ("three levels of four, a sum of 6", Hierarchy(sim, depth=3, branching=4).solve(six)),
        (
            "two levels, the first part retried and given up",
            Hierarchy(sim, recovery=[Retry(2)], faults=broken).solve(six),
        ),
    ]


@grading("05.rollup")
def tokens_by_level(count: Callable) -> Iterator[Case]:
    for what, root in _trees():
        want = {int(level.split()[-1]): t.usage.total_tokens for level, t in rollup(root).by_level.items()}
        got, error = attempt(count, root)
        yield Case(what, not error and got == want, error or f"got {got!r}")


@grading("05.shape")
def shape(choose: Callable) -> Iterator[Case]:
    for width, budget in ((6, 14), (7, 25), (8, 40), (5, 3), (4, 12)):
        shapes = [(*_measured(width, d, b)[::-1], d, b) for d in (1, 2, 3) for b in (2, 3, 4)]
        within = [s for s in shapes if s[1] <= budget]  # (largest plan, calls, depth, branching)
        want = min(within)[2:] if within else None
        got, error = attempt(choose, width, budget)
        got = tuple(got) if isinstance(got, list) else got
        yield Case(
            f"a sum of {width} items within {budget} calls",
            not error and got == want,
            error or f"got {got!r}",
        )
