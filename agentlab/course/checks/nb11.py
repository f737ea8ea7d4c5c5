"""Checks for the exercises of notebook 11, caching and streaming.

- `11.cache-bill`: the dollars a list of model calls cost, each call priced from its usage (fresh
  input, cache reads, 5-minute and 1-hour cache writes, output) at the rates of a price table, a
  long prompt at its model's higher tier;
- `11.first-step`: when a plan that is streamed finishes, each step starting once it has been
  written and its dependencies are done, with as many workers as it needs.

The right answers come from the kit itself, `llm.usage.cost` and `Plan.critical_path`, which the
exercises ask the learner not to call, on calls and plans the notebook never shows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from agentlab.course.checks import Case, attempt, exercise
from agentlab.llm.base import Completion, Usage
from agentlab.llm.usage import PRICES, Price, cost
from agentlab.plan import Plan, Step

_TIME_LIMIT = 10.0  # seconds for one case: far more than a right answer needs


def _number(got: Any) -> bool:
    return isinstance(got, int | float) and not isinstance(got, bool) and math.isfinite(got)


def _shown(got: Any, unit: str = "") -> str:
    return f"got {got:.6g}{unit}" if _number(got) else f"got {got!r}"


# --- 11.cache-bill ---------------------------------------------------------------------------------


def _call(model: str, **counts: int) -> Completion:
    return Completion("", model, "anthropic", Usage(**counts))


def _run_calls(cache: str, executors: str = "sim-large") -> list[Completion]:
    """Every call of one task on the simulator, cached: a ReAct run, or a team whose executors
    run on `executors` (two models in one bill)."""
    from agentlab import world
    from agentlab.compare import Setup, compare
    from agentlab.llm import SimulatedLLM

    if executors == "sim-large":
        from agentlab.react import react

        task = world.chain_task(random.Random(3), 6, "bill")
        return [c for _, _, c in react(task.question, SimulatedLLM(seed=1, cache=cache)).calls]
    task = world.fanout_task(random.Random(5), 4, "total", "bill")
    setup = Setup(SimulatedLLM(seed=1, cache=cache), executor_model=executors)
    return [c for _, _, c in compare([task], setup, ["planner+workers"]).outcomes["planner+workers"][0].calls]


_OWN_HOUR = {"model-x": Price(1.0, 5.0, 0.1, 1.25, cache_write_1h=1.5)}  # not 2x its input rate
_OWN_TABLE = {"sim-large": Price(2.0, 9.0, 0.2, 2.5), "sim-small": Price(0.5, 2.0, 0.05, 0.625)}


def _bill_cases() -> Iterator[tuple[str, list[Completion], Mapping[str, Price]]]:
    haiku = "claude-haiku-5-5"
    yield "a six-hop ReAct run on the simulator, cached for 5 minutes", _run_calls("5m"), PRICES
    yield "a team's run: planner on sim-large, executors on sim-small", _run_calls("5m", "sim-small"), PRICES
    yield "the ReAct run cached for an hour (its writes are 1-hour writes)", _run_calls("1h"), PRICES
    yield (
        "the team's run priced from a table of your own, not PRICES",
        _run_calls("5m", "sim-small"),
        _OWN_TABLE,
    )
    yield (
        "a model whose 1-hour writes have a rate of their own",
        [_call("model-x", input_tokens=300, output_tokens=40, cache_write_1h_tokens=2_000)],
        _OWN_HOUR,
    )
    yield (
        "a Haiku call of 123,000 prompt tokens, most of them read from the cache",
        [
            _call(
                haiku,
                input_tokens=2_000,
                output_tokens=500,
                cache_read_tokens=120_000,
                cache_write_tokens=1_000,
            )
        ],
        PRICES,
    )
    yield (
        "three Haiku calls of 40,000 prompt tokens each (over 100,000 together, not one by one)",
        [_call(haiku, input_tokens=30_000, output_tokens=200, cache_read_tokens=10_000) for _ in range(3)],
        PRICES,
    )
    yield "no calls at all", [], PRICES


@exercise(
    "11.cache-bill",
    "The dollar bill of a run's calls, cache reads and writes included",
    hint="price every call on its own: each of its five counts at its own rate from the table you are "
    "given (a read is not fresh input; a 1-hour write has its own rate when the table has one, else "
    "twice the input rate), output included; and look at what decides a long prompt: the whole prompt "
    "of one call (fresh, read and written), not its fresh input, nor the batch",
)
def cache_bill(bill: Callable[[list, Mapping[str, Price]], float]) -> Iterator[Case]:
    for what, calls, prices in _bill_cases():
        yield _judge_bill(bill, what, calls, prices)


def _judge_bill(bill: Callable, what: str, calls: Sequence[Completion], prices: Mapping[str, Price]) -> Case:
    want = sum(cost(c.model, c.usage, prices) for c in calls)
    got, error = attempt(bill, list(calls), dict(prices), limit=_TIME_LIMIT)
    right = not error and _number(got) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    detail = error or (
        _shown(got, " USD") + (" (too much)" if _number(got) and got > want else " (too little)")
    )
    return Case(what, right, detail)


# --- 11.first-step ---------------------------------------------------------------------------------


def _streamed(*specs: tuple[str, float, float, Sequence[str]]) -> tuple[Plan, dict, dict]:
    """A plan from (id, written at, duration, dependencies), in the order the planner wrote it."""
    plan = Plan([Step(i, "researcher", f"Do {i}.", tuple(deps)) for i, _, _, deps in specs])
    return plan, {i: d for i, _, d, _ in specs}, {i: w for i, w, _, _ in specs}


def _finish_of(plan: Plan, durations: Mapping[str, float], written: Mapping[str, float]) -> float:
    """The kit's answer: a step's writing is one more thing it waits for, so the finish is the
    longest chain of a plan in which every step also depends on its own writing."""
    steps = [Step(f"{s.id} written", "planner", "-") for s in plan]
    steps += [Step(s.id, s.role, s.instruction, (*s.depends_on, f"{s.id} written")) for s in plan]
    times = {**{f"{i} written": t for i, t in written.items()}, **durations}
    return Plan(steps).critical_path(times)[1]


_CHAIN = [(f"h{k}", 1.2 * k, 1.0, (f"h{k - 1}",) if k > 1 else ()) for k in range(1, 6)]
_SLOW_CHAIN = [(f"h{k}", 1.2 * k, 4.0, (f"h{k - 1}",) if k > 1 else ()) for k in range(1, 5)]
_FAN = [(f"L{k}", 1.5 * k, 1.0, ()) for k in range(1, 5)] + [("join", 6.5, 0.5, ("L1", "L2", "L3", "L4"))]
_EARLY_SLOW = [
    ("slow", 1.0, 9.0, ()),
    ("q1", 2.0, 1.0, ()),
    ("q2", 3.0, 1.0, ("q1",)),
    ("end", 4.0, 1.0, ("q2",)),
]
_LATE_ROOT = [("a", 1.0, 1.0, ()), ("b", 2.0, 1.0, ("a",)), ("c", 6.0, 0.5, ())]
_DIAMOND = [
    ("a", 1.25, 2.5, ()),
    ("b", 2.5, 0.75, ("a",)),
    ("c", 3.75, 3.0, ("a",)),
    ("d", 5.0, 1.0, ("b", "c")),
]
_ONE = [("only", 2.4, 1.0, ())]

_FIRST_STEP_CASES = (
    ("a five-hop chain, each hop written 1.2 s after the last and done in 1 s", _CHAIN),
    ("a four-hop chain of slow steps (4 s each)", _SLOW_CHAIN),
    ("a fan-out of four lookups and a join written last", _FAN),
    ("a slow first step, written first, with a quick chain beside it", _EARLY_SLOW),
    ("a step that waits for nothing, written last", _LATE_ROOT),
    ("a diamond with durations that are not whole seconds", _DIAMOND),
    ("a plan of one step", _ONE),
)


@exercise(
    "11.first-step",
    "When a streamed plan finishes",
    hint="a step can start only once two things are true: the planner has finished writing it, and every "
    "step it depends on has ended (not just been written); take the later of the two, add its duration, "
    "and the plan finishes when its last step ends, not when the last-written one does",
)
def first_step(streamed_finish: Callable[[Plan, dict, dict], float]) -> Iterator[Case]:
    for what, specs in _FIRST_STEP_CASES:
        yield _judge_finish(streamed_finish, what, *_streamed(*specs))


def _judge_finish(streamed_finish: Callable, what: str, plan: Plan, durations: dict, written: dict) -> Case:
    want = _finish_of(plan, durations, written)
    given = (dict(durations), dict(written))
    got, error = attempt(streamed_finish, plan, given[0], given[1], limit=_TIME_LIMIT)
    if not error and given != (durations, written):
        error = "your function changed the dicts it was handed"
    right = not error and _number(got) and abs(got - want) < 1e-9
    direction = "" if not _number(got) else " s (too late)" if got > want else " s (too soon)"
    return Case(what, right, error or (_shown(got) + direction))
