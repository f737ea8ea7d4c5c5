"""The orchestrator: decompose -> delegate -> synthesize, with steps in parallel.

`run_plan` starts every step whose dependencies are done, as soon as they are
done, on a bounded number of workers (the policy is in `schedule.py`). Each
step goes to the agent for its role, with the outputs of the steps it depends
on (its context). The final step's output is the deliverable. The agents run in
a `concurrent.futures` pool, threads by default; any Executor will do.

Every state change lands in the trace, timed on one of two clocks:

- "virtual" (the default): a step takes its declared `duration`, else the
  seconds its agent reports (see `agents.Work`). The run waits for every
  running step to report before moving the clock on, so the trace, the slots
  and the outputs are the same whatever the threads do, and the schedule is
  exactly `schedule.virtual_schedule`'s.
- "real": wall-clock seconds since the run began (a step starts when it is
  handed to the pool), for real models and tools, where the point is to
  measure. Outputs are still the same; the times are not.

If a step fails (its agent raises, or returns something that is not text), the
run stops cleanly: nothing new starts, steps already running finish and keep
their outputs, the steps that never ran are marked skipped, and `Run.reason`
says what went wrong.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from agentlab.agents import STUB_TEAM, Agent
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import stub_planner
from agentlab.schedule import ListScheduler, Slot, step_duration
from agentlab.trace import Event, Trace

CLOCKS = ("virtual", "real")


@dataclass
class Run:
    """What a run produced: outputs per step, the trace, who ran what when, and how it ended."""

    task: str
    plan: Plan
    outputs: dict[str, str] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    status: str = "running"  # then "done" or "failed"
    reason: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (step id, role, llm.Completion)
    slots: list[Slot] = field(default_factory=list)  # one per step that ran, in start order
    workers: int = 1
    clock: str = "virtual"

    @property
    def deliverable(self) -> str | None:
        """The final step's output, or None if the run never reached it."""
        return self.outputs.get(self.plan.final_step.id)

    @property
    def step_status(self) -> dict[str, str]:
        """Where each step ended up: "done", "failed", "skipped", or "pending" (not reached yet)."""
        status = {step_id: "pending" for step_id in self.plan.ids}
        for event in self.trace:
            if event.kind in ("finished", "failed", "skipped"):
                status[event.step_id] = "done" if event.kind == "finished" else event.kind
        return status

    @property
    def elapsed(self) -> float:
        """Seconds (on the run's clock) from the start of the run to its last event: the makespan."""
        return max((e.time for e in self.trace), default=0.0)

    def summary(self) -> str:
        clock = "virtual" if self.clock == "virtual" else "wall clock"
        on = f", {self.workers} workers" if self.workers != 1 else ""
        head = (
            f"{self.status}: {len(self.outputs)}/{len(self.plan)} steps in {self.elapsed:.1f} s ({clock}{on})"
        )
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


def run_plan(
    plan: Plan,
    team: Mapping[str, Agent] = STUB_TEAM,
    task: str = "",
    *,
    workers: int = 1,
    pool: futures.Executor | None = None,
    clock: str = "virtual",
) -> Run:
    """Run `plan` on `workers` workers, each step as soon as its dependencies are done.

    `pool` runs the agents (default: a thread pool of `workers` threads; yours
    is not shut down). `clock` is "virtual" (deterministic) or "real" (wall clock).
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
    Plan(plan.steps, roles=team)  # re-validate: every role must have an agent in this team
    scheduler = ListScheduler(plan, workers)
    run = Run(task=task, plan=plan, workers=workers, clock=clock)
    for step in plan:
        run.trace.add(Event(0.0, "planned", step.id, step.role, step.depends_on, step.instruction))
    if pool is None:
        with futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentlab") as own:
            _execute(run, team, scheduler, own)
    else:
        _execute(run, team, scheduler, pool)
    return run


@dataclass(eq=False)
class _Job:
    """A step handed to a worker: where and when it started, and the pool's future for its Work."""

    step: Step
    order: int  # position in the plan: ties are broken in written order
    worker: int
    start: float
    future: futures.Future
    end: float | None = None  # virtual clock only: known once the agent has reported


def _execute(run: Run, team: Mapping[str, Agent], scheduler: ListScheduler, pool: futures.Executor) -> None:
    """The loop: start what is ready, wait for the next step(s) to finish, record, repeat."""
    began = time.perf_counter()
    now = 0.0
    running: list[_Job] = []
    calls: dict[str, tuple[Any, ...]] = {}
    while True:
        if run.status == "running":  # after a failure nothing new starts
            for step, worker in scheduler.take():
                context = {dep: run.outputs[dep] for dep in step.depends_on}
                future = pool.submit(team[step.role], step, context)
                running.append(_Job(step, scheduler.index[step.id], worker, now, future))
                run.trace.add(Event(now, "started", step.id, step.role, step.depends_on, step.instruction))
        if not running:
            break
        if run.clock == "virtual":
            now, finished = _next_virtual(running, team)
        else:
            now, finished = _next_real(running, began)
        for job in finished:
            running.remove(job)
            ok = _record(run, job, now, calls)
            scheduler.finish(job.step.id, job.worker, ok)

    run.calls = [(s.id, s.role, call) for s in run.plan for call in calls.get(s.id, ())]  # plan order
    run.slots.sort(key=lambda slot: (slot.start, scheduler.index[slot.step_id]))
    if run.status == "running":
        run.status = "done"
    else:
        _skip_the_rest(run, now)


def _next_virtual(running: list[_Job], team: Mapping[str, Agent]) -> tuple[float, list[_Job]]:
    """Virtual clock: wait until every running step has reported its duration, then jump
    to the earliest end. All steps ending then finish together, in written order."""
    futures.wait([job.future for job in running])
    for job in running:
        if job.end is None:
            error = job.future.exception()
            reported = team[job.step.role].seconds if error else job.future.result().seconds
            job.end = job.start + step_duration(job.step, reported)
    now = min(job.end for job in running)
    return now, sorted((job for job in running if job.end == now), key=lambda job: job.order)


def _next_real(running: list[_Job], began: float) -> tuple[float, list[_Job]]:
    """Wall clock: wait for the first step(s) to finish, whenever that is."""
    done, _ = futures.wait([job.future for job in running], return_when=futures.FIRST_COMPLETED)
    now = time.perf_counter() - began
    return now, sorted((job for job in running if job.future in done), key=lambda job: job.order)


def _record(run: Run, job: _Job, now: float, calls: dict[str, tuple[Any, ...]]) -> bool:
    """Log a finished job in the run; return whether it succeeded."""
    step = job.step
    run.slots.append(Slot(step.id, job.worker, job.start, now))
    error = job.future.exception()
    if error is None:
        work = job.future.result()
        run.outputs[step.id] = work.output
        calls[step.id] = work.calls
        run.trace.add(Event(now, "finished", step.id, step.role, step.depends_on, work.output))
        return True
    problem = f"{type(error).__name__}: {error}"  # the run keeps going until the running steps are done
    run.trace.add(Event(now, "failed", step.id, step.role, step.depends_on, problem))
    if run.status == "running":
        run.status, run.reason = "failed", f"step {step.id!r} ({step.role}) failed: {problem}"
    return False


def _skip_the_rest(run: Run, now: float) -> None:
    """After a failure: every step that never ran is marked skipped, with the reason."""
    ran = {slot.step_id for slot in run.slots}
    for step in run.plan:
        if step.id not in ran:
            run.trace.add(
                Event(now, "skipped", step.id, step.role, step.depends_on, "not run: " + run.reason)
            )


def orchestrate(
    task: str,
    planner: Callable[[str], Plan] = stub_planner,
    team: Mapping[str, Agent] = STUB_TEAM,
    *,
    workers: int = 1,
) -> Run:
    """Plan the task, then run the plan: the whole pattern in one call. A planner that keeps
    its model `calls` (like `planners.LLMPlanner`) has them counted under the role "planner"."""
    plan = planner(task)
    if not isinstance(plan, Plan):
        raise PlanError(f"the planner returned {type(plan).__name__}, not a Plan")
    run = run_plan(plan, team, task, workers=workers)
    run.calls[:0] = [("plan", "planner", call) for call in getattr(planner, "calls", ())]
    return run
