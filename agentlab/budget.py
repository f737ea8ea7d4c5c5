"""Budgets: caps on what a run may spend, so that recovery cannot run away with the bill.

Retries and replans are more model calls; a run that keeps recovering keeps
paying. A `Budget` caps model calls, tokens, dollars and time (on the run's
clock: virtual seconds by default, wall-clock seconds with `clock="real"`).
The run checks it before starting any new work (a step, a retry, a replan):
once a cap is reached nothing new starts, the steps already running finish,
and the run stops with status "stopped", its partial outputs, the usage so far
and the reason. A step in flight is never cut off, so a run can end a little
over a cap, by at most what the steps running at that moment spent.

Planning is held to the same caps: while a run plans or replans (`planning_within`), a planner
asks for each plan, and each re-ask after a plan it rejected, only while the budget has room
(`planning_refused`), so `Budget(calls=2)` means two paid calls, re-asks included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agentlab.llm.base import Usage
from agentlab.llm.usage import cost
from agentlab.valid import number


@dataclass(frozen=True)
class Spent:
    """What a run has used so far."""

    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Spent) -> Spent:
        """Calls, tokens and cost add up; the time is the later of the two."""
        return Spent(
            self.calls + other.calls,
            self.tokens + other.tokens,
            self.cost + other.cost,
            max(self.seconds, other.seconds),
        )

    def __str__(self) -> str:
        return f"{self.calls} calls, {self.tokens:,} tokens, ${self.cost:.4f}, {self.seconds:.1f} s"


def spent(calls: Iterable[tuple[str, str, Any]], seconds: float = 0.0) -> Spent:
    """Roll up (step id, role, Completion) triples, e.g. `run.calls`. A model without a price
    costs $0 here, as in `usage_report`."""
    n, tokens, dollars = 0, 0, 0.0
    for _step, _role, completion in calls:
        n += 1
        usage = getattr(completion, "usage", None)
        if not isinstance(usage, Usage):
            continue  # a call recorded as a plain value: counted, with no tokens or price known
        tokens += usage.total_tokens
        try:
            dollars += cost(completion.model, usage)
        except (ValueError, TypeError):
            pass
    return Spent(n, tokens, dollars, seconds)


@dataclass(frozen=True)
class Budget:
    """Caps for one run; None means no cap. `cost` is in USD, `seconds` on the run's clock."""

    calls: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None

    def __post_init__(self):
        for name in ("calls", "tokens", "cost", "seconds"):
            if (value := getattr(self, name)) is not None:
                number(value, f"a budget's {name}", minimum=0, must_be="a number >= 0 (or None for no cap)")

    def reached(self, used: Spent) -> str | None:
        """The cap that `used` has reached, as the reason a run stops; None while within budget."""
        if self.calls is not None and used.calls >= self.calls:
            return f"budget reached: {used.calls} model calls (cap {self.calls})"
        if self.tokens is not None and used.tokens >= self.tokens:
            return f"budget reached: {used.tokens:,} tokens (cap {self.tokens:,})"
        if self.cost is not None and used.cost >= self.cost:
            return f"budget reached: ${used.cost:.4f} (cap ${self.cost:.4f})"
        if self.seconds is not None and used.seconds >= self.seconds:
            return f"budget reached: {used.seconds:.1f} s (cap {self.seconds:g} s)"
        return None


_PLANNING: ContextVar[tuple[Budget, tuple] | None] = ContextVar("the budget planning is under", default=None)


@contextlib.contextmanager
def planning_within(budget: Budget | None, paid: Sequence[tuple[str, str, Any]] = ()) -> Iterator[None]:
    """Plan (or replan) for a run under `budget` that has paid for `paid` (`run.calls`) so far."""
    token = _PLANNING.set(None if budget is None else (budget, tuple(paid)))
    try:
        yield
    finally:
        _PLANNING.reset(token)


def planning_refused(calls: Sequence[Any]) -> str | None:
    """Why a planner that has paid for `calls` towards this plan may not ask again (the cap its
    run's budget has reached), or None: no budget, or room left."""
    held = _PLANNING.get()
    if held is None:
        return None
    budget, paid = held
    return budget.reached(spent([*paid, *(("plan", "planner", call) for call in calls)]))
