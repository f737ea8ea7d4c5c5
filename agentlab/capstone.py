"""The capstone: design your own planner-executor team, and measure it against a reference.

The questions are the trade desk's (`agentlab.world.capstone`): conversions at the harbour
exchange after a chain of lookups, "which is highest, and by how much", and conditionals that
pick one of two entities and follow a chain from it. A team is a function

    def my_team(task: Task, setup: Setup) -> Outcome:   # or it returns the answer as a str

that answers one task with the model in `setup.llm`, making every call through it (so it is
metered and capped). These names are shared with the grader and the leaderboard:

- `capstone_tasks(count, seed)`, `dev_tasks(count)`: tasks with their gold answers; the dev set
  is public, the grader's held-out set comes from seeds you never see;
- `capstone_llm(seed)`: the simulated model the capstone runs on (it errs at `ERROR_RATE`);
- `capstone_setup(llm)`: the `Setup` a team is run with;
- `reference_team(task, setup)`: plan-execute with the large model, the team to beat;
- `BUDGET_PER_TASK`: the dollars a team may spend on one task: the grader stops it there.

Building blocks for your team: `capstone_team` (the roles and their tools, the new `convert`
among them), `planned` (plan, then run, with your choice of models, workers, recovery and
budget), `one_agent` (a single ReAct agent with the same tools), `joined` (several runs of one
task as one outcome, with every call counted), `handed_over` (the result a plan's report step was
given, before the writer retold it), `as_outcome` (what a team returned, as an `Outcome`).
`evaluate(my_team)` runs your team and the reference on the same dev tasks and prints the paired
comparison.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from agentlab.agents import WORLD_ROLES, Agent, ToolFunction, model_agent
from agentlab.attempt import pool_for
from agentlab.budget import Budget
from agentlab.compare import Outcome, Setup
from agentlab.evidence import PairedAccuracy, PairedCost, _p_text, paired_accuracy, paired_cost
from agentlab.intervals import wilson
from agentlab.llm.base import LLM
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import resolve
from agentlab.planners import LLMPlanner
from agentlab.prompts import reported
from agentlab.react import react
from agentlab.run import orchestrate
from agentlab.verdicts import NonInferiority, holm, non_inferior
from agentlab.world import FUNCTIONS, TOOLS, Task
from agentlab.world.capstone import CONVERT_TOOL, convert, make_capstone_tasks

BUDGET_PER_TASK = 0.05  # USD: over twice what the reference spends on its dearest dev task
DEV_SEED = 12
ERROR_RATE = 0.15  # the capstone's simulated model slips on this share of its calls (the large model)
# Non-inferiority: a team may lose at most 10 points of accuracy to the reference (or the best) and
# still count as "as good". Wide enough that two teams right on the same tasks can be shown level on
# a class-sized set (at 40 tasks their paired interval alone is about ±9 points, at 50 about ±7).
MARGIN = 0.10


def capstone_tasks(count: int, seed: int) -> list[Task]:
    """`count` tasks of the capstone family, the same for the same (count, seed)."""
    return list(make_capstone_tasks(count, seed))


def dev_tasks(count: int = 40) -> list[Task]:
    """The development set the notebook measures on."""
    return capstone_tasks(count, DEV_SEED)


def capstone_llm(seed: int = 0) -> SimulatedLLM:
    """The simulated model of the capstone: it slips on `ERROR_RATE` of its calls (the small model
    more, the more a request asks), in the ways of `world.mistakes` and `world.capstone`."""
    return SimulatedLLM(seed=seed, error_rate=ERROR_RATE)


def capstone_setup(llm: LLM) -> Setup:
    """The setup a capstone team runs with: the simulator's tiers, tool time, workers."""
    return Setup(llm=llm)


# --- the team's building blocks -------------------------------------------------------------------

TOOL_FUNCTIONS = {**FUNCTIONS, "convert": convert}
CAPSTONE_TOOLS = {**TOOLS, "convert": CONVERT_TOOL}
ROLES = {  # role -> (what it does, its tools, its system prompt): the world team, with the exchange
    "researcher": WORLD_ROLES["researcher"],
    "analyst": (
        "does arithmetic, compares numbers and converts units",
        ("calculate", "convert"),
        WORLD_ROLES["analyst"][2].replace("use the calculate tool", "use the calculate and convert tools"),
    ),
    "writer": WORLD_ROLES["writer"],
}


def capstone_team(
    llm: LLM,
    *,
    model: str | None = None,
    models: Mapping[str, str] | None = None,
    roles: Mapping[str, tuple[str, Sequence[str], str]] | None = None,
    tool_seconds: float = 0.1,
) -> dict[str, Agent]:
    """The executors: `roles` (default `ROLES`: role -> description, tool names, system prompt),
    each a `model_agent` on `llm` with `model`, or its own from `models`."""
    models, team = dict(models or {}), {}
    for role, (description, tool_names, system) in (roles or ROLES).items():
        unknown = [t for t in tool_names if t not in CAPSTONE_TOOLS]
        if unknown:
            raise ValueError(
                f"role {role!r} has unknown tool(s) {unknown}; tools: {', '.join(CAPSTONE_TOOLS)}"
            )
        tools = [ToolFunction(CAPSTONE_TOOLS[t], TOOL_FUNCTIONS[t], tool_seconds) for t in tool_names]
        agent_model = models.get(role, model)
        team[role] = model_agent(role, system, llm, tools, model=agent_model, description=description)
    return team


def planned(
    task: Task,
    setup: Setup,
    *,
    workers: int = 1,
    recovery: Sequence[object] = (),
    budget: Budget | None = None,
    models: Mapping[str, str] | None = None,
    roles: Mapping[str, tuple[str, Sequence[str], str]] | None = None,
) -> Outcome:
    """A planner (`setup.planner_model`) writes the plan; the capstone team (`setup.executor_model`,
    or per role from `models`) runs it on `workers` workers, with `recovery` policies and a
    `budget`. Latency is the planning, then the run's makespan, on the virtual clock."""
    team = capstone_team(
        setup.llm, model=setup.executor_model, models=models, roles=roles, tool_seconds=setup.tool_seconds
    )
    planner = LLMPlanner(setup.llm, team, model=setup.planner_model, tool_steps=setup.tool_steps)
    options = {"recovery": list(recovery)} if recovery else {}
    run = orchestrate(
        task.question, planner, team, workers=workers, pool=pool_for(setup.llm), budget=budget, **options
    )
    return Outcome(task, run.deliverable, tuple(run.calls), run.latency, run.status, run.reason, run)


def reference_team(task: Task, setup: Setup) -> Outcome:
    """The reference: plan with the large model, then run the steps in order. Sound, unremarkable:
    no checks, no recovery, one worker, the large model everywhere."""
    return planned(task, setup)


def one_agent(task: Task, setup: Setup, model: str | None = None) -> Outcome:
    """One ReAct agent with every capstone tool (`model`, default `setup.agent_model`)."""
    tools = [ToolFunction(CAPSTONE_TOOLS[t], TOOL_FUNCTIONS[t], setup.tool_seconds) for t in CAPSTONE_TOOLS]
    run = react(
        task.question, setup.llm, model=model or setup.agent_model, max_steps=setup.max_steps, tools=tools
    )
    return Outcome(task, run.answer, tuple(run.calls), run.elapsed, run.status, run.reason, run)


def joined(task: Task, answer: str | None, parts: Sequence[Outcome], parallel: bool = False) -> Outcome:
    """Several runs of one task as one outcome with `answer`: every call of every part counted; the
    latency the parts' sum, or their longest when they ran side by side (`parallel`)."""
    seconds = [p.seconds for p in parts]
    total = (max(seconds) if parallel else sum(seconds)) if seconds else 0.0
    calls = tuple(c for p in parts for c in p.calls)
    return Outcome(task, answer, calls, round(total, 6), "done" if answer is not None else "failed")


def as_outcome(task: Task, result: Outcome | str | None) -> Outcome:
    """What a team returned, as an Outcome (a bare answer counts no calls: call the model through
    `setup.llm` and return an Outcome to have your costs counted)."""
    if isinstance(result, Outcome):
        return result
    if result is None or isinstance(result, str):
        return Outcome(task, result, (), 0.0)
    raise TypeError(f"a team returns an Outcome or the answer as a str, not {type(result).__name__}")


# --- measuring a team against the reference ---------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """A team and the reference on the same tasks: accuracy (with its Wilson 95% interval), cost
    and latency, the three paired comparisons judged as a family (Holm), whether the team is
    non-inferior in accuracy with `margin`, and how many tasks stayed within the budget (a task
    over it counts as wrong, as the grader stops it there)."""

    name: str
    mine: tuple[Outcome, ...]
    reference: tuple[Outcome, ...]
    accuracy: PairedAccuracy
    cost: PairedCost
    latency: PairedCost
    kept: NonInferiority
    budget: float

    @property
    def within_budget(self) -> int:
        return sum(o.cost <= self.budget for o in self.mine)

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        rows = []
        for label, runs in ((self.name, self.mine), ("reference", self.reference)):
            right = sum(self._scored(runs))
            low, high = wilson(right, len(runs))
            over = sum(o.cost > self.budget for o in runs)
            rows.append(
                (
                    label,
                    f"{right / len(runs):.0%} [{low:.0%}, {high:.0%}]",
                    f"${sum(o.cost for o in runs) / len(runs):.5f}",
                    f"{sum(o.seconds for o in runs) / len(runs):.1f} s",
                    f"{len(runs) - over}/{len(runs)}",
                )
            )
        return rows

    def _scored(self, runs: Sequence[Outcome]) -> list[bool]:
        return [o.right and o.cost <= self.budget for o in runs]

    def lines(self) -> list[str]:
        acc, holm_p = self.accuracy, self._holm
        return [
            f"accuracy: {acc}",
            f"  verdict: {acc.verdict}",
            f"  {self.kept.verdict}",
            f"cost: {self.cost}",
            f"  {self._said(self.cost, holm_p[1], 'cheaper', 'dearer', 'cost')}",
            f"latency: {self.latency}",
            f"  {self._said(self.latency, holm_p[2], 'faster', 'slower', 'latency')}",
        ]

    def _said(self, paired: PairedCost, p: float, less: str, more: str, what: str) -> str:
        adjusted = f"Holm-adjusted {_p_text(p)} over 3 tests"
        if p >= 0.05:
            return f"no measurable difference in {what} at n = {paired.tasks} ({adjusted})"
        return f"{self.name} is {less if paired.difference < 0 else more} per task ({adjusted})"

    @property
    def _holm(self) -> list[float]:
        return holm([self.accuracy.p_value, self.cost.p_value, self.latency.p_value])

    def __str__(self) -> str:
        head = ("team", "accuracy [95% CI]", "USD per task", "latency", "within budget")
        table = [f"{head[0]:<12}{head[1]:>20}{head[2]:>14}{head[3]:>10}{head[4]:>15}"]
        table += [f"{a:<12}{b:>20}{c:>14}{d:>10}{e:>15}" for a, b, c, d, e in self.rows()]
        note = f"{len(self.mine)} tasks; budget ${self.budget:.2f} a task; latency on the virtual clock."
        return "\n".join([*table, note, *self.lines()])

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{h}</th>" for h in ("team", "accuracy [95% CI]", "USD/task", "latency", "in budget")
        )
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows()
        )
        said = "<br>".join(html.escape(line) for line in self.lines())
        return (
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table><p><small>{said}</small></p>"
        )


def evaluate(
    team: Callable[[Task, Setup], Outcome | str],
    tasks: Sequence[Task] | None = None,
    setup: Setup | None = None,
    *,
    name: str = "my_team",
    margin: float = MARGIN,
    reference: Callable[[Task, Setup], Outcome] = reference_team,
) -> Evaluation:
    """Run `team` and `reference` on the same tasks (default: the dev set, on `capstone_llm()`)
    and compare them pair by pair."""
    tasks = list(dev_tasks() if tasks is None else tasks)
    if not tasks:
        raise ValueError("evaluate needs at least one task")
    setup = setup or capstone_setup(capstone_llm())
    mine = tuple(as_outcome(t, team(t, setup)) for t in tasks)
    ref = tuple(as_outcome(t, reference(t, setup)) for t in tasks)
    names = (name, "reference")
    scored = [[o.right and o.cost <= BUDGET_PER_TASK for o in runs] for runs in (mine, ref)]
    accuracy = paired_accuracy(*scored, names)
    cost = paired_cost([o.cost for o in mine], [o.cost for o in ref], names)
    latency = paired_cost([o.seconds for o in mine], [o.seconds for o in ref], names, unit="s")
    adjusted = holm([accuracy.p_value, cost.p_value, latency.p_value])
    accuracy = replace(accuracy, family=3, holm_p=adjusted[0])
    return Evaluation(
        name, mine, ref, accuracy, cost, latency, non_inferior(accuracy, margin), BUDGET_PER_TASK
    )


def handed_over(outcome: Outcome) -> str | None:
    """The result a plan's report step was handed ("The result to report is ..."), as the run found
    it, before the writer retold it; None when the run has no such step or did not get that far."""
    run = outcome.run
    plan = getattr(run, "plan", None)
    if plan is None or not len(plan):
        return None
    last = list(plan)[-1]
    outputs = getattr(run, "outputs", {})
    if any(dep not in outputs for dep in last.depends_on):
        return None
    return reported(resolve(last.instruction, outputs, last.id))
