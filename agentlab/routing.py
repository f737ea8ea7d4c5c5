"""Routing: the strong model where it matters, the team where it pays, and one agent elsewhere.

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

Tasks can be routed between topologies too: one agent for small tasks, a team for large ones
(the textbook's migration case, section 32.3). `stage_errors` reads a team's traces to say which stage of
the chain goes wrong how often; `by_size` is the policy, a topology of its own, and `split`
replays it on a comparison's outcomes, to choose its threshold from data without new runs.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentlab.compare import TOPOLOGIES, Comparison, Outcome, Setup, Topology, compare
from agentlab.llm.base import LLM, Completion, Message
from agentlab.plan import fill_in
from agentlab.prompts import reported
from agentlab.valid import number
from agentlab.world import Task, check_answer, gold_answer, steps_needed

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


# --- routing tasks between topologies: the migration case ------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One stage of a team's chain over a batch: how many times it ran and how often it got its own
    part wrong (a plan that would not answer the task; a step whose output does not answer the
    question it was asked, or that failed)."""

    name: str
    ran: int
    wrong: int

    @property
    def rate(self) -> float:
        return self.wrong / self.ran if self.ran else 0.0


def stage_errors(outcomes: Sequence[Outcome]) -> dict[str, Stage]:
    """Per stage of a planned team ("planner", then each role), read from each run's trace: the
    planned steps, what each finished with and which failed. A step is judged by its instruction
    with its inputs filled in, against the world's gold answer to that question, so a step given a
    wrong input but answering what it was asked is right: the error is charged where it began."""
    ran: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    for outcome in outcomes:
        trace = getattr(outcome.run, "trace", None)
        if trace is None:
            raise ValueError(f"stage errors need a planned team's runs; {outcome.task.id} has no trace")
        asked = {}  # step id -> (role, instruction), in plan order: the first plan's
        for event in trace.of_kind("planned"):
            asked.setdefault(event.step_id, (event.role, event.detail))
        ran["planner"] += 1
        wrong["planner"] += not _plan_answers(asked, outcome.task)
        outputs = {e.step_id: e.detail for e in trace.of_kind("finished")}
        for event in trace:
            if event.kind not in ("finished", "failed") or event.step_id not in asked:
                continue
            role, instruction = asked[event.step_id]
            expected = _expected(fill_in(instruction, outputs))
            if event.kind == "finished" and expected is None:
                continue  # a question with no answer in the records (an input was wrong): not judged
            ran[role] += 1
            wrong[role] += event.kind == "failed" or not check_answer(event.detail, expected)
    return {name: Stage(name, ran[name], wrong[name]) for name in ran}


def _expected(question: str) -> str | None:
    """The right output for a step asked `question`: the result a report step hands over, or the
    gold answer; None when the records cannot answer it."""
    handed = reported(question)
    if handed is not None:
        return handed
    try:
        return gold_answer(question)
    except ValueError:  # not a question of the world's grammar, or one the records cannot answer
        return None


def _plan_answers(asked: dict[str, tuple[str, str]], task: Task) -> bool:
    """Would the plan answer the task if every step answered its own question right?"""
    gold: dict[str, str] = {}
    for step_id, (_, instruction) in asked.items():
        value = _expected(fill_in(instruction, gold))
        if value is None:
            return False
        gold[step_id] = value
    return bool(gold) and task.check(list(gold.values())[-1])


def by_size(threshold: float, below: str = "react", above: str = "planner+workers") -> Topology:
    """A topology that sends a task to `above` when its question needs at least `threshold` steps
    (`world.steps_needed`) and to `below` otherwise: one agent for small tasks, a team for large."""
    for name in (below, above):
        if name not in TOPOLOGIES:
            raise ValueError(f"unknown topology {name!r}; known: {', '.join(TOPOLOGIES)}")

    def solve(task: Task, setup: Setup) -> Outcome:
        return TOPOLOGIES[above if steps_needed(task.question) >= threshold else below].solve(task, setup)

    summary = f"{below} below {threshold:g} steps, {above} from there"
    return Topology(f"by size >= {threshold:g}", summary, solve)


def split(
    comparison: Comparison, threshold: float, below: str = "react", above: str = "planner+workers"
) -> list[Outcome]:
    """The outcomes `by_size(threshold, below, above)` would have on the comparison's tasks, taken
    from the two topologies' own outcomes: no new runs (the simulator answers a task the same
    whoever routes it there)."""
    small, large = comparison.outcomes[below], comparison.outcomes[above]
    return [
        large[i] if steps_needed(task.question) >= threshold else small[i]
        for i, task in enumerate(comparison.tasks)
    ]
