"""The orchestrator: decompose -> delegate -> synthesize.

`run_plan` walks a plan in dependency order. Each step goes to the agent for
its role, together with the outputs of the steps it depends on (its context).
The final step's output is the deliverable. Every state change lands in the
trace, timed on a virtual clock: a step takes its declared `duration`, else
the seconds its agent reports (see `agents.Work`), else the agent's default.

If a step fails (its agent raises, or returns something that is not text), the
run stops cleanly: the outputs finished so far are kept, the steps that never
ran are marked skipped, and `Run.reason` says what went wrong.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentlab.agents import STUB_TEAM, Agent
from agentlab.plan import Plan, PlanError
from agentlab.planners import stub_planner
from agentlab.trace import Event, Trace


@dataclass
class Run:
    """What a run produced: outputs per step, the trace, and how it ended."""

    task: str
    plan: Plan
    outputs: dict[str, str] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    status: str = "running"  # then "done" or "failed"
    reason: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (step id, role, llm.Completion)

    @property
    def deliverable(self) -> str | None:
        """The final step's output, or None if the run never reached it."""
        return self.outputs.get(self.plan.final_step.id)

    @property
    def elapsed(self) -> float:
        """Virtual seconds from the start of the run to its last event."""
        return max((e.time for e in self.trace), default=0.0)

    def summary(self) -> str:
        head = f"{self.status}: {len(self.outputs)}/{len(self.plan)} steps in {self.elapsed:.1f} s (virtual)"
        return head + (f" - {self.reason}" if self.reason else "")

    def __str__(self) -> str:
        parts = [f"Task: {self.task}", str(self.plan), "", str(self.trace), "", self.summary()]
        return "\n".join(parts) + f"\nDeliverable: {self.deliverable}"

    def _repr_html_(self) -> str:
        deliverable = html.escape(str(self.deliverable)).replace("\n", "<br>")
        return (
            f"<p><b>Task:</b> {html.escape(self.task)}<br>"
            f"<b>Run:</b> {html.escape(self.summary())}</p>"
            f"{self.trace._repr_html_()}"
            f"<p><b>Deliverable:</b><br><code>{deliverable}</code></p>"
        )


def run_plan(plan: Plan, team: Mapping[str, Agent] = STUB_TEAM, task: str = "") -> Run:
    """Run every step of `plan` in dependency order, one at a time."""
    Plan(plan.steps, roles=team)  # re-validate: every role must have an agent in this team
    run = Run(task=task, plan=plan)
    for step in plan:
        run.trace.add(Event(0.0, "planned", step.id, step.role, step.depends_on, step.instruction))

    clock = 0.0
    while ready := plan.ready(run.outputs):
        step = ready[0]
        agent = team[step.role]
        context = {dep: run.outputs[dep] for dep in step.depends_on}
        run.trace.add(Event(clock, "started", step.id, step.role, step.depends_on, step.instruction))
        try:
            work = agent(step, context)
        except Exception as e:  # a failing agent must not lose the run's partial results
            problem = f"{type(e).__name__}: {e}"
            clock += agent.seconds if step.duration is None else step.duration
            run.trace.add(Event(clock, "failed", step.id, step.role, step.depends_on, problem))
            return _stop(run, clock, f"step {step.id!r} ({step.role}) failed: {problem}")
        clock += work.seconds if step.duration is None else step.duration
        run.outputs[step.id] = work.output
        run.calls.extend((step.id, step.role, call) for call in work.calls)
        run.trace.add(Event(clock, "finished", step.id, step.role, step.depends_on, work.output))

    run.status = "done"
    return run


def _stop(run: Run, clock: float, reason: str) -> Run:
    """End a run early: every step that has not finished or failed is skipped."""
    failed = {e.step_id for e in run.trace.of_kind("failed")}
    for step in run.plan:
        if step.id not in run.outputs and step.id not in failed:
            run.trace.add(Event(clock, "skipped", step.id, step.role, step.depends_on, "not run: " + reason))
    run.status, run.reason = "failed", reason
    return run


def orchestrate(
    task: str,
    planner: Callable[[str], Plan] = stub_planner,
    team: Mapping[str, Agent] = STUB_TEAM,
) -> Run:
    """Plan the task, then run the plan: the whole pattern in one call."""
    plan = planner(task)
    if not isinstance(plan, Plan):
        raise PlanError(f"the planner returned {type(plan).__name__}, not a Plan")
    return run_plan(plan, team, task)
