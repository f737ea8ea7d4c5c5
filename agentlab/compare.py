"""One agent or a team? The same tasks through each topology, measured the same way.

A *topology* is one small function: it takes a world task and a `Setup` (the model backend,
which model plays which part, how slow the tools are) and returns an `Outcome`: the answer,
every model call it made, and its latency on the virtual clock. `TOPOLOGIES` lists them;
adding one is a function and a line:

- `chat`: one model call, no tools. It cannot know the answer (the world is invented), but it
  is the unit the others are priced in: "× one call" is a topology's tokens over this call's;
- `react`: one agent in one loop, a tool at a time (`agentlab.react`);
- `plan-execute`: a planner writes the whole plan, the steps run one after another on one
  worker, a writer reports (ReWOO's shape);
- `planner+workers`: the same plan, every step started as soon as its inputs are ready, on as
  many workers as it can use (LLMCompiler's shape, without streaming);
- `hierarchical`: a manager splits the task into at most two parts, and a sub-team plans and
  runs each (`agentlab.hierarchy`, two levels);
- `handoff`: a triage agent hands the task to one specialist, which answers it in its own loop
  (`agentlab.handoffs`, the user's request forwarded with the transfer).

`compare` runs a batch through several topologies and returns a `Comparison`, whose table
gives accuracy, calls, tokens, cost and latency per topology, each a sum of the calls
underneath. `sweep` repeats a comparison across task sizes, and `fit_polynomial` fits the curves.
"""

from __future__ import annotations

import functools
import html
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentlab.agents import world_team
from agentlab.attempt import pool_for
from agentlab.handoffs import handoff, world_desk
from agentlab.hierarchy import Call, Hierarchy
from agentlab.llm.base import LLM, Completion, ModelError, Usage
from agentlab.llm.usage import PRICES, cost
from agentlab.planners import LLMPlanner
from agentlab.prompts import chat_system
from agentlab.react import react
from agentlab.run import orchestrate
from agentlab.valid import number
from agentlab.world import ARCHIPELAGO, Task


@dataclass(frozen=True)
class Setup:
    """Everything a topology needs besides the task. Models are named by the simulator's tiers
    ("sim-large" strong, "sim-small" cheap), which Claude maps to its planner and executor
    models; `tool_seconds` is one tool call's virtual time; `workers` bounds parallel steps."""

    llm: LLM
    agent_model: str | None = "sim-large"
    planner_model: str | None = "sim-large"
    executor_model: str | None = "sim-large"
    tool_steps: bool = True
    tool_seconds: float = 0.1
    max_steps: int = 12
    workers: int = 16

    def __post_init__(self):
        number(self.tool_seconds, "tool_seconds", minimum=0, must_be="a number of seconds >= 0")
        number(self.workers, "workers", minimum=1, whole=True)


@dataclass(frozen=True)
class Outcome:
    """One task through one topology: the answer, every model call made, the virtual seconds
    from question to answer, how it ended ("done", "stopped" by a bound, or "failed"), and the
    run behind it (a `Run`, `ReactRun`, `HandoffRun` or hierarchy node) to read its trace."""

    task: Task
    answer: str | None
    calls: tuple[Call, ...]
    seconds: float
    status: str = "done"
    reason: str = ""
    run: Any = field(default=None, repr=False, compare=False)

    @functools.cached_property  # every table and paired test asks again; grading reads every name
    def right(self) -> bool:
        return self.task.check(self.answer)

    @property
    def usage(self) -> Usage:
        return sum((c.usage for _, _, c in self.calls), Usage())

    @property
    def cost(self) -> float:
        """USD for every call; a model without a price counts as $0 (the table names it)."""
        return sum(_dollars(c) for _, _, c in self.calls)


def _dollars(completion: Completion) -> float:
    return cost(completion.model, completion.usage) if completion.model in PRICES else 0.0


# --- the topologies ---------------------------------------------------------------------------

CHAT_SYSTEM = chat_system(ARCHIPELAGO)  # who it is, in the ReAct agent's words; then: answer


def chat(task: Task, setup: Setup) -> Outcome:
    """One call, no tools: what a plain chat turn costs (and knows)."""
    try:
        reply = setup.llm.complete(
            system=CHAT_SYSTEM, messages=[{"role": "user", "content": task.question}], model=setup.agent_model
        )
    except ModelError as error:
        return Outcome(task, None, (), 0.0, "failed", f"ModelError: {error}")
    return Outcome(task, reply.text.strip(), (("chat", "agent", reply),), reply.latency)


def one_agent(task: Task, setup: Setup) -> Outcome:
    """ReAct: one agent, one loop, one tool at a time, the whole history in every call."""
    bounds = {"max_steps": setup.max_steps, "tool_seconds": setup.tool_seconds}
    run = react(task.question, setup.llm, model=setup.agent_model, **bounds)
    return Outcome(task, run.answer, tuple(run.calls), run.elapsed, run.status, run.reason, run)


def planned(task: Task, setup: Setup, workers: int) -> Outcome:
    """A planner writes the plan; the world team runs it on `workers` workers. Latency is the
    planner's calls, then the run's makespan."""
    team = world_team(setup.llm, model=setup.executor_model, tool_seconds=setup.tool_seconds)
    planner = LLMPlanner(setup.llm, team, model=setup.planner_model, tool_steps=setup.tool_steps)
    pool = pool_for(setup.llm)  # the simulator's steps run in this thread (see pool_for)
    run = orchestrate(task.question, planner, team, workers=workers, pool=pool)  # a failed plan: a failed Run
    return Outcome(task, run.deliverable, tuple(run.calls), run.latency, run.status, run.reason, run)


def plan_execute(task: Task, setup: Setup) -> Outcome:
    """Plan, then run the steps one after another."""
    return planned(task, setup, workers=1)


def planner_workers(task: Task, setup: Setup) -> Outcome:
    """Plan, then run every step as soon as its inputs are ready, side by side."""
    return planned(task, setup, workers=setup.workers)


def hierarchical(task: Task, setup: Setup) -> Outcome:
    """A manager with two sub-teams at most; the planner's model plans at both levels. The calls
    are every team's own, each once; latency is the manager's planning, then its run."""
    planners = {"manager_model": setup.planner_model, "lead_model": setup.planner_model}
    steps = {"tool_steps": setup.tool_steps, "tool_seconds": setup.tool_seconds, "workers": setup.workers}
    team = Hierarchy(setup.llm, depth=2, branching=2, worker_model=setup.executor_model, **planners, **steps)
    node = team.solve(task.question)
    return Outcome(task, node.answer, tuple(node.calls()), node.seconds, node.status, node.run.reason, node)


def handoffs(task: Task, setup: Setup) -> Outcome:
    """Triage, then one specialist with the whole task; one call more than ReAct is allowed."""
    desk = world_desk(setup.tool_seconds)
    run = handoff(task.question, setup.llm, desk, model=setup.agent_model, max_turns=setup.max_steps + 1)
    return Outcome(task, run.answer, tuple(run.calls), run.elapsed, run.status, run.reason, run)


@dataclass(frozen=True)
class Topology:
    name: str
    summary: str
    solve: Callable[[Task, Setup], Outcome]


TOPOLOGIES: dict[str, Topology] = {
    t.name: t
    for t in (
        Topology("chat", "one call, no tools", chat),
        Topology("react", "one agent, one loop, a tool at a time", one_agent),
        Topology("plan-execute", "planner, then the steps in order", plan_execute),
        Topology("planner+workers", "planner, then the steps in parallel", planner_workers),
        Topology("hierarchical", "manager, sub-teams that plan their parts", hierarchical),
        Topology("handoff", "triage hands the task to one specialist", handoffs),
    )
}


# --- a comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One topology's totals over a batch (each the sum of its calls), and means per task."""

    topology: str
    tasks: int
    right: int
    calls: int
    usage: Usage
    cost: float
    seconds: float
    baseline_tokens: float | None = None  # per task, of the one-call baseline

    # per task: what the table shows
    accuracy = property(lambda self: self.right / self.tasks)
    mean_calls = property(lambda self: self.calls / self.tasks)
    mean_input = property(lambda self: self.usage.input_tokens / self.tasks)
    mean_output = property(lambda self: self.usage.output_tokens / self.tasks)
    mean_tokens = property(lambda self: self.usage.total_tokens / self.tasks)
    mean_cost = property(lambda self: self.cost / self.tasks)
    mean_seconds = property(lambda self: self.seconds / self.tasks)

    @property
    def multiplier(self) -> float | None:
        """Tokens per task over the one-call baseline's: the token multiplier."""
        return self.mean_tokens / self.baseline_tokens if self.baseline_tokens else None


def row(topology: str, outcomes: Sequence[Outcome], baseline_tokens: float | None = None) -> Row:
    """Add up a topology's outcomes: every total is a sum over every call of every task."""
    if not outcomes:
        raise ValueError(f"no outcomes for {topology!r}: a row needs at least one task")
    calls = [c for o in outcomes for _, _, c in o.calls]
    return Row(
        topology,
        len(outcomes),
        sum(o.right for o in outcomes),
        len(calls),
        sum((c.usage for c in calls), Usage()),
        sum(_dollars(c) for c in calls),
        round(sum(o.seconds for o in outcomes), 6),
        baseline_tokens,
    )


_COLUMNS = ("topology", "accuracy", "calls", "input tok", "output tok", "USD", "latency s", "× one call")
_WIDTHS = (16, 9, 7, 11, 11, 10, 10, 11)


def _text_line(cells: Sequence[str]) -> str:
    """The first cell left-aligned, the numbers right-aligned, in fixed columns."""
    name, *numbers = cells
    return f"{name:<{_WIDTHS[0]}}" + "".join(f"{c:>{w}}" for c, w in zip(numbers, _WIDTHS[1:], strict=True))


@dataclass
class Comparison:
    """The outcomes of one batch of tasks per topology, and the table that sums them up."""

    tasks: list[Task]
    outcomes: dict[str, list[Outcome]]
    baseline: str = "chat"

    def rows(self) -> list[Row]:
        base = self._baseline_tokens()
        return [row(name, outcomes, base) for name, outcomes in self.outcomes.items()]

    def __getitem__(self, topology: str) -> Row:
        """One topology's row, adding up its outcomes alone (and the baseline's)."""
        if topology not in self.outcomes:
            raise KeyError(f"no topology {topology!r} in this comparison; it has {', '.join(self.outcomes)}")
        return row(topology, self.outcomes[topology], self._baseline_tokens())

    def _baseline_tokens(self) -> float | None:
        """Tokens per task of the one-call baseline, if it was run."""
        if self.baseline not in self.outcomes:
            return None
        return row(self.baseline, self.outcomes[self.baseline]).mean_tokens

    def where(self, keep: Callable[[Task], bool]) -> Comparison:
        """The same comparison over the tasks `keep` accepts (e.g. one task family)."""
        picked = [i for i, t in enumerate(self.tasks) if keep(t)]
        if not picked:
            raise ValueError("no task of this comparison passes the filter")
        outcomes = {name: [runs[i] for i in picked] for name, runs in self.outcomes.items()}
        return Comparison([self.tasks[i] for i in picked], outcomes, self.baseline)

    def unpriced(self) -> list[str]:
        models = {c.model for runs in self.outcomes.values() for o in runs for _, _, c in o.calls}
        return sorted(m for m in models if m not in PRICES)

    def _cells(self, r: Row) -> list[str]:
        times = "-" if r.multiplier is None else f"{r.multiplier:.1f}×"
        return [
            r.topology,
            f"{r.accuracy:.0%}",
            f"{r.mean_calls:.1f}",
            f"{r.mean_input:,.0f}",
            f"{r.mean_output:,.0f}",
            f"{r.mean_cost:.5f}",
            f"{r.mean_seconds:.1f}",
            times,
        ]

    def _note(self) -> str:
        note = f"Means per task over {len(self.tasks)} tasks; latency on the virtual clock."
        if missing := self.unpriced():
            note += f" No price for {', '.join(missing)} (counted as $0)."
        return note

    def to_text(self) -> str:
        lines = [_text_line(_COLUMNS)] + [_text_line(self._cells(r)) for r in self.rows()]
        return "\n".join([*lines, self._note()])

    __str__ = to_text

    def __repr__(self) -> str:  # the outcomes are too many to print; the table is the summary
        return f"Comparison({len(self.tasks)} tasks, topologies: {', '.join(self.outcomes)})"

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in _COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
            for r in self.rows()
        )
        return (
            f'<table class="agentlab-comparison"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
            f"<p><small>{html.escape(self._note())}</small></p>"
        )


def compare(
    tasks: Iterable[Task], setup: Setup, topologies: Sequence[str | Topology] | None = None
) -> Comparison:
    """Run every task through every topology named, or given as a `Topology` (default: all of
    `TOPOLOGIES`)."""
    tasks = list(tasks)
    if not tasks:
        raise ValueError("compare needs at least one task")
    chosen = list(TOPOLOGIES) if topologies is None else list(topologies)
    if unknown := [n for n in chosen if not isinstance(n, Topology) and n not in TOPOLOGIES]:
        raise ValueError(f"unknown topology {unknown[0]!r}; known: {', '.join(TOPOLOGIES)}")
    chosen = [t if isinstance(t, Topology) else TOPOLOGIES[t] for t in chosen]
    return Comparison(tasks, {t.name: [t.solve(task, setup) for task in tasks] for t in chosen})


# --- sweeps and fits --------------------------------------------------------------------------


@dataclass
class Sweep:
    """One comparison per value of a task size (`xs`): hops of a chain, width of a fan-out."""

    label: str
    xs: list[int]
    comparisons: list[Comparison] = field(default_factory=list)

    def series(self, topology: str, metric: str = "mean_tokens") -> list[float]:
        """A `Row` metric (e.g. "mean_tokens", "mean_seconds", "accuracy") for each x."""
        return [getattr(c[topology], metric) for c in self.comparisons]


def sweep(
    label: str,
    make: Callable[[random.Random, int, str], Task],
    xs: Iterable[int],
    setup: Setup,
    topologies: Sequence[str],
    per_x: int = 3,
    seed: int = 0,
) -> Sweep:
    """Compare `topologies` on `per_x` tasks `make(rng, x, task_id)` for each size x."""
    rng = random.Random(seed)
    result = Sweep(label, list(xs))
    for x in result.xs:
        tasks = [make(rng, x, f"{label}{x}-{i + 1}") for i in range(per_x)]
        result.comparisons.append(compare(tasks, setup, topologies))
    return result


@dataclass(frozen=True)
class Fit:
    """A least-squares polynomial: `coefficients` highest power first (numpy's order), and R²."""

    coefficients: tuple[float, ...]
    r2: float

    @property
    def degree(self) -> int:
        return len(self.coefficients) - 1

    def __call__(self, x) -> np.ndarray:
        return np.polyval(self.coefficients, np.asarray(x, dtype=float))

    def __str__(self) -> str:
        powers = {0: "", 1: " n", 2: " n²", 3: " n³"}
        terms = [
            f"{c:,.1f}{powers.get(self.degree - i, f' n^{self.degree - i}')}"
            for i, c in enumerate(self.coefficients)
        ]
        return " + ".join(terms).replace("+ -", "- ") + f"   (R² = {self.r2:.4f})"


def fit_polynomial(xs: Sequence[float], ys: Sequence[float], degree: int) -> Fit:
    """Fit ys ≈ polynomial(xs) of `degree` by least squares."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(xs) != len(ys) or len(xs) <= degree:
        raise ValueError(f"a degree-{degree} fit needs more than {degree} points, with one y per x")
    coefficients = np.polyfit(xs, ys, degree)
    residual = float(np.sum((ys - np.polyval(coefficients, xs)) ** 2))
    spread = float(np.sum((ys - ys.mean()) ** 2))
    return Fit(tuple(float(c) for c in coefficients), 1.0 - residual / spread if spread else 1.0)
