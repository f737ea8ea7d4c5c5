"""Notebook 11's grading cases: bills and streamed plans drawn from seeds the learner never sees,
priced and timed by the same judges as the exercise's own cases."""

import random
from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, attempt
from agentlab.course.checks.nb11 import _judge_bill, _judge_finish, _streamed
from agentlab.course.hidden import grading
from agentlab.llm.base import Completion, Usage
from agentlab.llm.usage import Price

SEEDS = (1107, 2213, 3319, 4421)


def _table(rng: random.Random) -> dict[str, Price]:
    """Two invented models: one with its own 1-hour rate and a long-prompt tier, one with neither."""
    rate = rng.choice((0.5, 1.0, 2.0, 3.0))
    return {
        "model-a": Price(
            rate,
            5 * rate,
            rate / 10,
            1.25 * rate,
            cache_write_1h=1.6 * rate,
            long_above=rng.choice((5_000, 20_000)),
            long_factor=rng.choice((2.0, 3.0)),
        ),
        "model-b": Price(rate / 4, 5 * rate / 4, rate / 40, 1.25 * rate / 4),
    }


def _calls(rng: random.Random) -> list[Completion]:
    def count() -> int:
        return rng.choice((0, rng.randrange(1, 30_000)))

    return [
        Completion(
            "",
            rng.choice(("model-a", "model-b")),
            "anthropic",
            Usage(count(), rng.randrange(1, 2_000), count(), count(), count()),
        )
        for _ in range(rng.randrange(2, 7))
    ]


@grading("11.cache-bill")
def bills(bill: Callable) -> Iterator[Case]:
    for seed in SEEDS:
        rng = random.Random(seed)
        yield _judge_bill(bill, f"the grader's bill #{seed}", _calls(rng), _table(rng))


def _plan(rng: random.Random) -> tuple:
    specs, at = [], 0.0
    for k in range(rng.randrange(3, 9)):
        at += rng.choice((0.5, 0.75, 1.0, 1.5, 2.0))
        earlier = [s[0] for s in specs]
        deps = tuple(rng.sample(earlier, min(len(earlier), rng.randrange(0, 3))))
        specs.append((f"s{k + 1}", at, rng.choice((0.25, 1.0, 2.5, 4.0, 6.0)), deps))
    return _streamed(*specs)


@grading("11.first-step")
def streamed_plans(streamed_finish: Callable) -> Iterator[Case]:
    for seed in SEEDS:
        yield _judge_finish(
            streamed_finish, f"the grader's streamed plan #{seed}", *_plan(random.Random(seed))
        )


# A prompt of exactly `long_above` tokens is not over it: 600 fresh + 400 read = 1,000, at the base
# rates: (600 x 1 + 100 x 5 + 400 x 0.1) / 1e6 = $0.00114. One token more doubles every rate.
_TIERED = {"model-t": Price(1.0, 5.0, 0.1, 1.25, long_above=1_000, long_factor=2.0)}


@grading("11.cache-bill")
def at_the_threshold(bill: Callable) -> Iterator[Case]:
    for what, fresh, want in (
        ("a prompt of exactly the long-prompt threshold", 600, 0.00114),
        ("a prompt one token over the threshold", 601, 2 * (601 + 500 + 40) / 1e6),
    ):
        calls = [Completion("", "model-t", "anthropic", Usage(fresh, 100, 400))]
        got, error = attempt(bill, calls, dict(_TIERED))
        right = not error and isinstance(got, int | float) and abs(got - want) < 1e-12
        yield Case(what, right, error or f"got {got!r} USD")
