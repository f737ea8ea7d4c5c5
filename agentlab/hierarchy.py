"""Hierarchical teams: a manager, sub-team leads and workers, and what each level costs.

A flat team has one planner for the whole task. On a large task that planner is the bottleneck:
it holds every step in one context and writes them all before anything starts. A hierarchy
shares the planning out. A *manager* cuts the task into a few large parts and hands each to a
*sub-team*, whose *lead* is a planner in its own right: it plans its part for its workers, or, a
level further down, cuts it again for sub-teams of its own. Each team joins its parts' answers
and reports up to the team above.

Nothing new runs underneath. A sub-team is an `Agent` whose work is a whole `orchestrate` run,
so the manager's plan names it as a role (`LEAD`) and `run_plan` runs it like any executor: side
by side with its siblings, monitored, retried. Its answer, its model calls and its seconds come
back in a `Work`. Recovery is notebook 04's: a sub-team retries and replans inside, with the
`recovery` policies every team is given; only when they are used up does its step fail in the
parent's run, where the parent's own policies take over. That is escalation, and it needs no
second mechanism.

`depth` counts the planning levels (1 is a flat team) and `branching` the most parts a manager
or lead may hand out, so the tree has a bound whatever the models write; a `budget` caps what
all its teams spend together (`meter.py`). Every team keeps its `Run`, and the result is a
tree of `Node`s: printing one draws who delegated to whom, and `rollup` sums the usage per
level, per role and per model, parts that must add up to the bill the manager's run recorded.
"""

from __future__ import annotations

import html
import textwrap
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentlab.agents import Agent, StepFailed, Work, step_prompt, world_team
from agentlab.attempt import pool_for
from agentlab.budget import Budget, Spent
from agentlab.faults import Fault
from agentlab.llm.base import LLM, Completion
from agentlab.llm.usage import Tally, usage_report
from agentlab.meter import Metered
from agentlab.monitor import Check
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import LLMPlanner
from agentlab.prompts import LEAD_DESCRIPTION  # what a manager's planner reads about LEAD
from agentlab.recovery import Replan
from agentlab.run import Run, orchestrate
from agentlab.valid import number

LEAD = "lead"  # the role a sub-team plays in its parent's plan
MANAGER = "manager: "  # how the top of a drawn tree is labelled

Call = tuple[str, str, Completion]  # (step id, role, completion), as in `Run.calls`


@dataclass
class ManagerPlanner(LLMPlanner):
    """An `LLMPlanner` for a team with sub-teams. A plan that hands out more than `parts`
    parts is rejected, and the model asked again with the reason (LLMPlanner's `_read` is
    where every plan is checked), so the tree stays as wide as it was allowed to be."""

    parts: int = 2

    def _read(self, reply: Completion) -> Plan:
        plan = super()._read(reply)
        handed = [s.id for s in plan if s.role == LEAD]
        if len(handed) > self.parts:
            raise PlanError(
                f"the plan hands {len(handed)} parts to sub-teams ({', '.join(handed)}); "
                f"at most {self.parts} are allowed"
            )
        return plan


# --- the tree ------------------------------------------------------------------------------------


@dataclass(repr=False)
class Node:
    """One team in the tree: where it sits, what it was asked, its run, and its sub-teams.

    `path` is "" for the manager and the parent's step ids below it ("s2", "s2/s1").
    `children` holds every sub-team that worked for this team, in the order they started;
    a part that was retried has one child per attempt (`attempt` counts from 1)."""

    path: str
    level: int
    task: str
    run: Run
    children: list[Node] = field(default_factory=list)
    attempt: int = 1

    answer = property(lambda self: self.run.deliverable)
    status = property(lambda self: self.run.status)

    @property
    def seconds(self) -> float:
        """The team's latency on the virtual clock: its planning, then its run."""
        return self.run.latency

    def walk(self) -> Iterator[Node]:
        """This team, then every team below it, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def own_calls(self) -> list[Call]:
        """The calls of this team's planner and workers; a sub-team's calls are its own."""
        return [(step_id, role, c) for step_id, role, c in self.run.calls if role != LEAD]

    def calls(self) -> list[Call]:
        """Every call in the tree, each once, from the team that made it: the step id with its
        team's path ("s2/plan"), and the role with planners named by level ("manager", "lead")."""
        return [call for _, call in _labelled(self)]

    def __str__(self) -> str:
        return "\n".join([MANAGER + _header(self), *_lines(self, "")])

    def __repr__(self) -> str:  # the run and the sub-teams are too much to print; str() draws the tree
        teams = sum(1 for _ in self.walk())
        return f"Node(path={self.path!r}, level={self.level}, status={self.status!r}, teams={teams})"

    def _repr_html_(self) -> str:
        return f'<ul class="agentlab-tree" style="list-style:none;padding-left:0">{_html(self, MANAGER)}</ul>'


def _labelled(root: Node) -> Iterator[tuple[Node, Call]]:
    """Each team's own calls, labelled with the team's path and the planners' rank."""
    for node in root.walk():
        where = f"{node.path}/" if node.path else ""
        for step_id, role, c in node.own_calls():
            if role == "planner":
                role = "manager" if node.level == 1 else "lead"
            yield node, (where + step_id, role, c)


# --- building and running the tree -------------------------------------------------------------


class _SubTeams:
    """The sub-teams one team delegated to. They report from worker threads; `in_order` puts
    them in the order their attempts started, which the run's slots record."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_step: dict[str, list[Node]] = {}

    def add(self, step_id: str, node: Node) -> None:
        with self.lock:  # attempts at one step never overlap, so each list is in attempt order
            attempts = self.by_step.setdefault(step_id, [])
            node.attempt = len(attempts) + 1
            attempts.append(node)

    def in_order(self, run: Run) -> list[Node]:
        waiting = {step_id: list(nodes) for step_id, nodes in self.by_step.items()}
        # a slot per attempt at a step, in start order (a part rerouted to a worker has no sub-team)
        return [waiting[slot.step_id].pop(0) for slot in run.slots if waiting.get(slot.step_id)]


@dataclass(frozen=True)
class Hierarchy:
    """A team of teams for the task world.

    `depth` planning levels (1 is a flat team: one planner and its workers); every manager
    or lead hands out at most `branching` parts. Models by rank: `manager_model` plans at the
    top, `lead_model` below it, `worker_model` for the researcher, analyst and writer (None:
    the backend's default). `checks` and `recovery` are given to every team: a `Replan()`
    replans with that team's own planner. `faults` maps a team's path ("" for the manager,
    "s2", "s2/s1") to the faults injected into its run, so one sub-team can be broken on purpose.
    `budget` caps the whole tree: calls, tokens and cost of all teams together, counted as they
    are paid; seconds on each team's own clock (the manager's is the tree's latency). Once a cap
    is reached no team starts anything new; steps in flight finish, so a tree ends a little over.
    """

    llm: LLM
    depth: int = 2
    branching: int = 2
    manager_model: str | None = None
    lead_model: str | None = None
    worker_model: str | None = None
    tool_steps: bool = True
    tool_seconds: float = 0.1
    workers: int = 16
    checks: Sequence[Check] = ()
    recovery: Sequence[Any] = ()
    faults: Mapping[str, Sequence[Fault]] = field(default_factory=dict)
    budget: Budget | None = None

    def __post_init__(self):
        for name in ("depth", "branching"):
            number(getattr(self, name), f"a hierarchy's {name}", minimum=1, whole=True)
        if any(isinstance(policy, Replan) and policy.planner is not None for policy in self.recovery):
            raise ValueError("give Replan() without a planner: each team replans with its own planner")
        for path, faults in self.faults.items():
            if not isinstance(path, str) or not all(isinstance(f, Fault) for f in faults):
                raise TypeError(
                    f"faults maps a team's path (text) to Fault objects; got {path!r}: {faults!r}"
                )
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(self.budget).__name__}")

    def solve(self, task: str) -> Node:
        """Run `task` through the whole tree; the manager's node holds the rest."""
        tree = self
        if self.budget is not None:  # every team calls one metered model and checks what it counted
            meter = Metered(self.llm)
            tree = replace(self, llm=meter, budget=meter.budget(self.budget, "all teams together"))
        return tree._team(task, 1, "")

    def _team(self, task: str, level: int, path: str) -> Node:
        """One team: plan `task`, run the plan, and keep the sub-teams it delegated to."""
        workers = world_team(self.llm, model=self.worker_model, tool_seconds=self.tool_seconds)
        model = self.manager_model if level == 1 else self.lead_model
        below = _SubTeams()
        planning = {"model": model, "tool_steps": self.tool_steps}
        if level == self.depth:  # the bottom: a lead plans for workers
            team = workers
            planner = LLMPlanner(self.llm, team, **planning)
        else:  # sub-teams take the parts; an analyst and a writer join their answers
            team = {LEAD: self._sub_team(level, path, below)} | {r: workers[r] for r in ("analyst", "writer")}
            planner = ManagerPlanner(self.llm, team, parts=self.branching, **planning)
        watching = {"checks": self.checks, "recovery": self.recovery, "faults": self.faults.get(path, ())}
        watching |= {"budget": self.budget, "pool": pool_for(self.llm)}  # the simulator's: in this thread
        run = orchestrate(task, planner, team, workers=self.workers, **watching)
        return Node(path, level, task, run, below.in_order(run))

    def _sub_team(self, level: int, path: str, below: _SubTeams) -> Agent:
        """The `LEAD` role of a team at `level`: each step it is given is a part, run by a team
        one level down. A part it cannot finish fails the step, with its calls and seconds; with
        the tree's budget spent, no sub-team is formed (its planning would cost calls)."""

        def act(step: Step, context: Mapping[str, str]) -> Work:
            if self.budget is not None and (reason := self.budget.reached(Spent())):
                raise StepFailed(f"no sub-team was formed: {reason}", (), 0.0)
            child = self._team(step_prompt(step, context), level + 1, f"{path}/{step.id}".lstrip("/"))
            below.add(step.id, child)
            calls = tuple(c for _, _, c in child.run.calls)
            if child.status == "done":
                return Work(child.answer, child.seconds, calls)
            raise StepFailed(
                f"the sub-team could not finish its part: {child.run.reason}", calls, child.seconds
            )

        return Agent(LEAD, act, description=LEAD_DESCRIPTION.format(parts=self.branching))


# --- usage, rolled up through every level ---------------------------------------------------


@dataclass(frozen=True)
class Rollup:
    """A tree's usage per level, per role and per model. `parts` is the sum of every team's own
    calls; `total` is the bill the manager's run recorded, where each sub-team's calls arrived
    inside its answer. Nothing lost and nothing counted twice means the two are equal."""

    by_level: dict[str, Tally]
    by_role: dict[str, Tally]
    by_model: dict[str, Tally]
    parts: Tally
    total: Tally

    def sections(self) -> list[tuple[str, dict[str, Tally]]]:
        return [("by level", self.by_level), ("by role", self.by_role), ("by model", self.by_model)]

    def to_text(self) -> str:
        lines = [f"{'':<20}{'calls':>6}{'input tok':>11}{'output tok':>12}{'cost (USD)':>12}"]
        for title, groups in self.sections():
            lines.append(title)
            lines += [_row(f"  {name}", tally) for name, tally in groups.items()]
        lines += [_row("sum of the parts", self.parts), _row("manager's bill", self.total)]
        return "\n".join(lines)

    __str__ = to_text

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("", "calls", "input tokens", "output tokens", "cost (USD)"))
        rows = []
        for title, groups in self.sections():
            rows.append(f'<tr><th colspan="5" style="text-align:left">{title}</th></tr>')
            rows += [_html_row(name, tally) for name, tally in groups.items()]
        totals = {"sum of the parts": self.parts, "manager's bill": self.total}
        rows += [_html_row(name, tally, bold=True) for name, tally in totals.items()]
        body = "".join(rows)
        return f'<table class="agentlab-usage"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def rollup(root: Node) -> Rollup:
    """Roll a tree's usage up per level, per role and per model, with `llm.usage_report`."""
    labelled = list(_labelled(root))
    by_level = usage_report([(s, f"level {node.level}", c) for node, (s, _, c) in labelled]).by_role
    report = usage_report([call for _, call in labelled])
    by_role = dict(sorted(report.by_role.items(), key=lambda item: _rank(item[0])))
    parts, bill = sum(by_level.values(), Tally()), usage_report(root.run.calls).total
    return Rollup(dict(sorted(by_level.items())), by_role, report.by_model, parts, bill)


def _rank(role: str) -> int:
    """Manager, lead, then the workers in the order they work; any other role after them."""
    order = ("manager", "lead", "researcher", "analyst", "writer")
    return order.index(role) if role in order else len(order)


def _row(name: str, t: Tally) -> str:
    return f"{name:<20}{t.calls:>6}{t.usage.input_tokens:>11,}{t.usage.output_tokens:>12,}{t.cost:>12.4f}"


def _html_row(name: str, t: Tally, bold: bool = False) -> str:
    cells = (html.escape(name), str(t.calls), f"{t.usage.input_tokens:,}", f"{t.usage.output_tokens:,}")
    style = ' style="font-weight:bold"' if bold else ""
    return f"<tr{style}>" + "".join(f"<td>{c}</td>" for c in (*cells, f"{t.cost:.4f}")) + "</tr>"


# --- drawing the tree ------------------------------------------------------------------------


def _short(text: str, width: int = 60) -> str:
    return textwrap.shorten(" ".join(str(text).split()), width, placeholder="…")


def _header(node: Node) -> str:
    """What a team was asked, what it answered, and what it cost on its own."""
    own = node.own_calls()
    tokens = sum(c.usage.total_tokens for _, _, c in own)
    answer = node.answer if node.status == "done" else f"{node.status}: {node.run.reason}"
    replans = len(node.run.trace.of_kind("replanned"))
    again = f", replanned {replans}x" if replans else ""
    return (
        f"{_short(node.task.splitlines()[0])} = {_short(answer, 48)}   "
        f"[{len(own)} calls, {tokens:,} tokens, {node.seconds:.1f} s{again}]"
    )


def _entries(node: Node) -> list[tuple[str, Node | None]]:
    """One line per step of every plan the team followed (and per sub-team attempt)."""
    run, entries, seen = node.run, [], set()
    if run.plan is None:
        return [(f"x planning failed: {_short(run.reason, 80)}", None)]
    status = run.step_status
    failures = {step_id: f.message for step_id, _, f in run.failures}
    children = {}
    for child in node.children:
        children.setdefault(child.path.rsplit("/", 1)[-1], []).append(child)
    for plan in run.plans:
        for step in plan:
            if step.id in seen:
                continue
            seen.add(step.id)
            if step.id in children:
                for child in children[step.id]:
                    tried = f" (attempt {child.attempt})" if len(children[step.id]) > 1 else ""
                    entries.append((f"{step.id} {LEAD}, level {child.level}{tried}: ", child))
                if status.get(step.id) == "done":  # a part finished by a stand-in after its sub-team failed
                    if step.id in run.outputs and all(c.status != "done" for c in children[step.id]):
                        entries.append((f"{step.id} done by a stand-in = {run.outputs[step.id]}", None))
                continue
            args = ", ".join(map(str, step.args.values()))
            what = f"{step.tool}({args})" if step.tool else step.instruction
            line = f"{step.id} {step.role}: {_short(what, 48)}"
            if status.get(step.id) == "done":
                line += f" = {_short(run.outputs[step.id], 40)}"
            elif status.get(step.id) == "failed":
                line = f"x {line}: {_short(failures.get(step.id, 'failed'), 60)}"
            else:
                line += f" ({status.get(step.id, 'pending')})"
            entries.append((line, None))
    return entries


def _lines(node: Node, prefix: str) -> list[str]:
    """The tree below `node` as text, each line drawn under `prefix`."""
    lines, entries = [], _entries(node)
    for i, (text, child) in enumerate(entries):
        branch, below = ("└─ ", "   ") if i == len(entries) - 1 else ("├─ ", "│  ")
        if child is None:
            lines.append(prefix + branch + text)
        else:
            lines += [prefix + branch + text + _header(child), *_lines(child, prefix + below)]
    return lines


_COLOURS = {"done": "#2ca02c", "failed": "#d62728", "stopped": "#d62728"}


def _html(node: Node, label: str) -> str:
    """The same tree as nested lists: a team's line, then its steps and sub-teams below it."""
    dot = f'<span style="color:{_COLOURS.get(node.status, "#888888")}">●</span>'
    head = f"{dot} <b>{html.escape(label)}</b>{html.escape(_header(node))}"
    items = []
    for text, child in _entries(node):
        if child is None:
            mark = "color:#d62728" if text.startswith("x ") else "color:inherit"
            items.append(f'<li style="{mark}">{html.escape(text)}</li>')
        else:
            items.append(_html(child, text))
    inner = f'<ul style="list-style:none;border-left:1px solid #ccc;margin-left:0.4em">{"".join(items)}</ul>'
    return f"<li>{head}{inner}</li>"
