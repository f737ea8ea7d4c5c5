"""Model routing: the strong model where it matters, the cheap one everywhere else.

Work can be split between a strong, expensive model and a weak, cheap one in two ways:

- **by role**: the planner on the strong model, the executors on the cheap one. That needs
  nothing new: `compare.Setup(planner_model="sim-large", executor_model="sim-small")`;
- **by request**: a router reads each request before it is sent and picks the model.
  RouteLLM (Ong et al. 2024, arXiv:2406.18665) learns the choice from human preference
  data. The router here has a hand-written signal instead, `world.steps_needed`: how
  many tool steps the request's question takes. `RoutedLLM` is an LLM that routes, so
  any topology can use one; every call serving one goal (a task, for a single agent;
  a step, for an executor) goes to the same model.

How good can a router be? Run both models on the same queries and four counts say it:
both right, only the strong one, only the weak one, neither. A router that flips a
coin gets a straight line from the weak model's accuracy to the strong one's; a perfect
router sends to the strong model exactly the queries only it gets right. `PairCounts`
computes both curves, for RouteLLM's published GSM8K counts (`ROUTELLM_GSM8K`) and for
counts measured here.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentlab.compare import Outcome, Setup, compare
from agentlab.llm.base import LLM, Completion, Message
from agentlab.valid import number
from agentlab.world import Task, steps_needed

# --- what a router could achieve -----------------------------------------------------------------


@dataclass(frozen=True)
class PairCounts:
    """Both models on the same queries: how many each got right, alone or together."""

    both: int
    only_strong: int
    only_weak: int
    neither: int

    def __post_init__(self):
        for name in ("both", "only_strong", "only_weak", "neither"):
            number(getattr(self, name), name, minimum=0, whole=True, must_be="a count (a whole number >= 0)")
        if self.total == 0:
            raise ValueError("PairCounts needs at least one query")

    @classmethod
    def from_results(cls, weak: Sequence[bool], strong: Sequence[bool]) -> PairCounts:
        """Count from per-query results (True = right), in the same order for both models."""
        if len(weak) != len(strong):
            raise ValueError(
                f"one result per query for each model: got {len(weak)} weak, {len(strong)} strong"
            )
        pairs = Counter(zip(map(bool, weak), map(bool, strong), strict=True))  # (weak right, strong right)
        return cls(pairs[True, True], pairs[False, True], pairs[True, False], pairs[False, False])

    @property
    def total(self) -> int:
        return self.both + self.only_strong + self.only_weak + self.neither

    @property
    def weak_accuracy(self) -> float:
        return (self.both + self.only_weak) / self.total

    @property
    def strong_accuracy(self) -> float:
        return (self.both + self.only_strong) / self.total

    @property
    def perfect_accuracy(self) -> float:
        """Right whenever either model is: the ceiling for any router between the two."""
        return (self.total - self.neither) / self.total


# Ong et al. 2024 (RouteLLM), GSM8K, 1,319 questions: GPT-4 strong, Mixtral 8x7B weak.
ROUTELLM_GSM8K = PairCounts(both=747, only_strong=383, only_weak=95, neither=94)


def _check_share(share: float) -> float:
    return float(number(share, "share", minimum=0, maximum=1, must_be="a fraction of the queries in [0, 1]"))


def random_router(counts: PairCounts, share: float) -> float:
    """Expected accuracy when each query goes to the strong model with probability `share`."""
    share = _check_share(share)
    return (1 - share) * counts.weak_accuracy + share * counts.strong_accuracy


def perfect_router(counts: PairCounts, share: float) -> float:
    """The best accuracy with `share` of the queries on the strong model: first the queries only
    it gets right, then those where the choice does not matter, and last (only when forced) the
    queries only the weak model gets right."""
    strong = _check_share(share) * counts.total
    gained = min(strong, counts.only_strong)
    lost = max(0.0, strong - (counts.total - counts.only_weak))
    return (counts.both + counts.only_weak + gained - lost) / counts.total


# --- routing requests ------------------------------------------------------------------------------

Choose = Callable[[str], str]  # the text of a request's goal -> the model to send it to


def by_difficulty(threshold: float, strong: str = "sim-large", weak: str = "sim-small") -> Choose:
    """Send a request to `strong` when its question needs at least `threshold` steps."""

    def choose(goal: str) -> str:
        return strong if steps_needed(goal) >= threshold else weak

    return choose


def at_random(share: float, seed: int = 0, strong: str = "sim-large", weak: str = "sim-small") -> Choose:
    """Send a request to `strong` with probability `share`: a coin tossed by hashing the goal,
    so the same goal always lands on the same model."""
    share = _check_share(share)

    def choose(goal: str) -> str:
        coin = int(hashlib.sha256(f"{seed}\x00{goal}".encode()).hexdigest()[:12], 16) / 16**12
        return strong if coin < share else weak

    return choose


class RoutedLLM:
    """An LLM that picks the model for every call with `choose(goal)`, the goal being the
    request's first user message. The model a caller names is overruled: the router decides.
    `sent` counts the calls each model got."""

    def __init__(self, llm: LLM, choose: Choose):
        self.llm, self.choose = llm, choose
        self.sent: Counter[str] = Counter()

    @property
    def backend(self) -> str:
        return self.llm.backend

    def __repr__(self) -> str:
        return f"RoutedLLM({self.llm!r})"

    def complete(
        self, *, messages: Sequence[Message], model: str | None = None, **request: Any
    ) -> Completion:
        chosen = self.choose(goal_of(messages))  # whatever `model` the caller named
        self.sent[chosen] += 1
        return self.llm.complete(messages=messages, model=chosen, **request)


def goal_of(messages: Sequence[Message]) -> str:
    """The first user message's text: what the whole conversation is for."""
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, str):
                return content
            return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


# --- measuring a router ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutePoint:
    """One router on a batch: the share of tasks and of model calls it gave the strong model,
    its accuracy, and its cost in USD per task."""

    label: str
    task_share: float
    call_share: float
    accuracy: float
    cost: float


def route_point(label: str, outcomes: Sequence[Outcome], strong: str = "sim-large") -> RoutePoint:
    """Sum up one router's outcomes; a task counts as the strong model's if all its calls were."""
    calls = [c for o in outcomes for _, _, c in o.calls]
    on_strong = sum(bool(o.calls) and all(c.model == strong for _, _, c in o.calls) for o in outcomes)
    return RoutePoint(
        label,
        on_strong / len(outcomes),
        sum(c.model == strong for c in calls) / len(calls) if calls else 0.0,
        sum(o.right for o in outcomes) / len(outcomes),
        sum(o.cost for o in outcomes) / len(outcomes),
    )


def route(
    tasks: Sequence[Task], setup: Setup, routers: Mapping[str, Choose], topology: str = "react"
) -> dict[str, list[Outcome]]:
    """Run the tasks through `topology` once per router, every call routed by it."""
    return {
        label: compare(tasks, replace(setup, llm=RoutedLLM(setup.llm, choose)), [topology]).outcomes[topology]
        for label, choose in routers.items()
    }
