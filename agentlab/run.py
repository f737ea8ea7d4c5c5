"""The orchestrator: decompose -> delegate -> monitor -> synthesize, with steps in parallel.

`orchestrate(task)` is the whole pattern in one call: a planner turns the task into a
`Plan`, and `run_plan` runs it. The loop that runs a plan (`Loop`), in words:

    Start every step whose dependencies are done, on a free worker (the policy is `schedule.py`'s).
    Wait for the next attempt(s) to end. Keep a good result (`monitor.py` looks at each); hand a
    failed one to recovery if the run has any, else stop. Repeat until nothing runs and nothing
    is ready. The final step's output is the deliverable.

Each step goes to the agent for its role, with the outputs of the steps it depends on (its
context), in a `concurrent.futures` pool (threads by default, any Executor will do). Every state
change lands in the trace, on one of two clocks. "virtual" (the default): a step takes its
declared `duration`, else the seconds its agent reports, and the clock moves only once every
running step has reported, so the trace, the slots and the outputs are the same whatever the
threads do (exactly `schedule.virtual_schedule`'s schedule). "real": wall-clock seconds.

A `timeout` bounds every wait. On the real clock, an attempt still running `timeout` s after it
started fails as a timeout; on the virtual clock, one that *reports* more than `timeout` s, or,
so that an agent that blocks cannot hang the run, has not reported after `WALL_FACTOR` x `timeout`
s of real time (real time is far below virtual time for a step that reports). A thread cannot be
stopped: such an attempt is abandoned on its daemon thread, which does not keep the process
alive, and what it pays after the run returns is not in `Run.calls`.

Notebook 04's parts (`recovery`, a `budget`, a `checkpoint`, `faults`) are used only when
asked for. An interrupt (Ctrl-C, a kernel's stop button) stops the run at once, kept.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlab import checkpoint as checkpoints
from agentlab import recovery as recoveries
from agentlab.agents import STUB_TEAM, Agent
from agentlab.attempt import Attempt, Job, attempt, outcome, submit
from agentlab.budget import Budget, planning_within, spent
from agentlab.checkpoint_lock import claimed
from agentlab.faults import Fault, first_hit
from agentlab.llm.base import paid, redact
from agentlab.monitor import Check, Failure
from agentlab.plan import Plan, PlanError, Step, remaining
from agentlab.planners import planning_failure, stub_planner
from agentlab.recovery import Replan
from agentlab.schedule import Clock, ListScheduler, Slot, step_duration
from agentlab.settings import check_settings, check_task, check_team
from agentlab.threads import Daemons, InPlace, Ticket, share, wait_all
from agentlab.trace import Event, Run

WALL_FACTOR = 10  # virtual clock: real seconds waited for a report, in units of `timeout`


def orchestrate(
    task: str,
    planner: Callable[[str], Plan] = stub_planner,
    team: Mapping[str, Agent] = STUB_TEAM,
    *,
    workers: int = 1,
    **options: Any,
) -> Run:
    """Plan the task, then run the plan: the whole pattern in one call. `options` go to
    `run_plan` (checks, recovery, budget, ...); a `Replan()` without a planner uses this one.

    The model calls that wrote the plan travel with it (`plan.calls`), counted under the role
    "planner". If planning fails (no valid plan, a model error, any exception), the result is a
    failed Run with no plan, the reason and the calls it cost; with `checkpoint=` and
    `resume=True`, a saved run is carried on without planning again."""
    if options.get("recovery"):
        options["recovery"] = [Replan(planner, p.max_replans) if isinstance(p, Replan) and p.planner is None
                               else p for p in options["recovery"]]
    check_task(task)
    check_team(team)
    path = options.get("checkpoint")
    if options.get("resume") and path is not None and Path(path).exists():
        plan = checkpoints.first_plan(path, task)  # the plan it started from; no new planning
        return run_plan(plan, team, task, workers=workers, **options)
    try:
        with planning_within(options.get("budget")):
            plan = planner(task)
    except Exception as error:  # noqa: BLE001 - as in a step: any planner's fault is a failed run
        reason = redact(f"planning failed: {planning_failure(error)}")
        run = Run(task, None, workers=workers, status="failed", reason=reason)
        run.calls = [("plan", "planner", c) for c in paid(error)]
        run.trace.add(Event(0.0, "failed", "plan", "planner", (), run.reason))
        return run
    if not isinstance(plan, Plan):
        raise PlanError(f"the planner returned {type(plan).__name__}, not a Plan")
    return run_plan(plan, team, task, workers=workers, planning_calls=plan.calls, **options)


def run_plan(
    plan: Plan,
    team: Mapping[str, Agent] = STUB_TEAM,
    task: str = "",
    *,
    workers: int = 1,
    pool: futures.Executor | None = None,
    clock: str = "virtual",
    checks: Sequence[Check] = (),
    timeout: float | None = None,
    recovery: Sequence[Any] = (),
    budget: Budget | None = None,
    faults: Sequence[Fault] = (),
    checkpoint: str | Path | None = None,
    resume: bool = False,
    planning_calls: Sequence[Any] = (),
) -> Run:
    """Run `plan` on `workers` workers, each step as soon as its dependencies are done.

    `pool` runs the agents (default: see `drive`; yours is not shut down). `clock` is "virtual"
    (deterministic) or "real" (wall clock). Monitoring: `checks` (validators, critics) and `timeout`
    (seconds per attempt). `recovery`: policies tried in order (`Retry`, `Reroute`, `Replan`).
    `budget`: caps. `faults`: failures injected on purpose. `checkpoint`: a file the state is saved
    to after every step; with `resume=True` an existing one is carried on from. `planning_calls`:
    the model calls that wrote `plan`, counted in the budget and listed first in `Run.calls`.
    """
    check_settings(team, clock, timeout, budget, faults, checkpoint, resume)
    replan = recoveries.check_policies(recovery, team, task) if recovery else None
    if not isinstance(plan, Plan):
        raise PlanError(f"run_plan needs a Plan, got {type(plan).__name__}")
    for step in plan:  # the plan is valid; here it meets this team
        if step.role not in team:
            raise PlanError(f"step {step.id!r} has unknown role {step.role!r}; known roles: {sorted(team)}")
    run = Run(task=task, plan=plan, workers=workers, clock=clock, plans=[plan])
    with claimed(checkpoint):  # no other run writes this checkpoint meanwhile
        now = _begin(run, team, checkpoint, resume, planning_calls)
        loop = Loop(run, team, Clock(clock, now), _scheduler(run, workers), tuple(checks), timeout,
                    tuple(recovery), replan, budget, tuple(faults), checkpoint)
        return drive(loop, workers, timeout, pool)


def drive(loop: Loop, workers: int, timeout: float | None, pool: futures.Executor | None = None) -> Run:
    """Run `loop` in `pool`, else in its own: the caller's thread for one worker and no time limit,
    else threads (`Daemons`: kept from run to run, never waited for). On the virtual clock with no
    time limit, a step started alone runs on the loop's thread (it would only wait), and the steps
    started together go to threads together (`threads.share`)."""
    if pool is not None or (workers == 1 and timeout is None):  # one at a time: no thread needed
        return loop.go(pool or InPlace())
    loop.inline = timeout is None and not loop.clock.real
    return loop.go(Daemons())


def _begin(run: Run, team, checkpoint, resume: bool, planning_calls) -> float:
    """Carry on from the checkpoint, or start afresh: the clock time to start at."""
    if resume and checkpoint is not None and Path(checkpoint).exists():
        return checkpoints.restore(checkpoint, run, team)
    run.calls = [("plan", "planner", c) for c in planning_calls]
    for step in run.plan:
        run.record(0.0, "planned", step, step.instruction)
    return 0.0


def _scheduler(run: Run, workers: int) -> ListScheduler | None:
    """A scheduler for the steps still to do (a resumed or replanned run has done some)."""
    left = run.plan if not run.outputs else remaining(run.plan, set(run.outputs))
    return None if left is None else ListScheduler(left, workers)


@dataclass(eq=False)
class Loop:
    """One run while it runs: its settings, the clock, the jobs in flight, the failures to replan.
    `run_plan` builds one and `drive`s it; `streaming` extends it with steps that arrive late."""

    run: Run
    team: Mapping[str, Agent]
    clock: Clock
    scheduler: ListScheduler | None
    checks: tuple[Check, ...] = ()
    timeout: float | None = None
    recovery: tuple[Any, ...] = ()
    replan_policy: Replan | None = None
    budget: Budget | None = None
    faults: tuple[Fault, ...] = ()
    checkpoint: Path | None = None
    running: list[Job] = field(default_factory=list)
    unresolved: list[tuple[Step, Failure]] = field(default_factory=list)
    ended: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)  # attempts that ended (wall clock)
    inline: bool = False  # a step started alone runs on the loop's thread (see `drive`)

    def go(self, pool: futures.Executor) -> Run:
        """Start what is ready, wait for the next attempt(s) to end, record, recover, repeat."""
        run, self.pool = self.run, pool
        self.saved()  # the start (a resumed run: all it has, in a file of its own)
        self.check_budget()
        try:
            while True:
                taken = self.scheduler.take() if run.status == "running" and self.scheduler else []
                shared: list | None = [] if self.inline else None  # see `drive`
                for step, worker in taken:  # after a stop nothing new starts
                    self.start(planned := run.plan[step.id], planned, worker, shared)
                share(shared or [])
                if not self.running:
                    if run.status == "running" and self.unresolved:
                        self.replan()
                        continue
                    break
                for job in self.next_real() if self.clock.real else self.next_virtual():
                    self.running.remove(job)
                    self.finish(job)
        except KeyboardInterrupt:  # a learner's interrupt: stop at once, keep what is done
            self.stop("interrupted (KeyboardInterrupt): the steps still running were abandoned")
        run.close(self.clock.now)  # done, or what never ran is marked skipped
        self.saved()
        return run

    def start(self, step: Step, planned: Step, worker: int, shared: list | None = None) -> None:
        """Hand one attempt at `planned` (tried as `step`) to the pool, or to this moment's `shared`."""
        run = self.run
        n = run.attempts[planned.id] = run.attempts.get(planned.id, 0) + 1
        context = {dep: run.outputs[dep] for dep in planned.depends_on}
        fault = first_hit(self.faults, planned.id, step.role, n) if self.faults else None
        args = (self.team[step.role], step, planned, context, self.checks, fault, n, self.clock.real)
        future = submit(self.pool, *args) if shared is None else Ticket()
        if shared is not None:  # run once all of this moment's have started (`threads.share`)
            shared.append((future, attempt, args))
        if self.clock.real:
            future.add_done_callback(self.ended.put)
        order = self.scheduler.index[planned.id]
        wall = None if self.timeout is None else time.monotonic() + WALL_FACTOR * self.timeout
        self.running.append(Job(step, planned, order, worker, self.clock.now, n, future, wall))
        run.record(self.clock.now, "started", step, step.instruction)

    def next_virtual(self) -> list[Job]:
        """Virtual clock: wait until every running attempt has reported its duration, then jump
        to the earliest end. All attempts ending then finish together, in written order."""
        timeout, waiting = self.timeout, [j.future for j in self.running if not j.future.done()]
        while timeout is None and waiting and not wait_all(waiting, 0.2):  # one wait for all, in
            pass  # short ones, so that an interrupt (Ctrl-C) is seen at once, not when they end
        for job in self.running:
            if job.end is None:
                try:  # wait for it to report (with a time limit, not for ever: see the docstring)
                    result = job.result = outcome(job.future, job.wait())
                except futures.TimeoutError:  # it is abandoned
                    real = f" (no report after {WALL_FACTOR * timeout:g} s of real time)"
                    job.end, job.late = job.start + timeout, real
                    continue
                took = result.seconds if result.forced else step_duration(job.planned, result.seconds)
                if timeout is not None and took > timeout:
                    took, job.late = timeout, ""
                job.end = job.start + took
        self.clock.now = min(job.end for job in self.running)
        return sorted((job for job in self.running if job.end == self.clock.now), key=lambda job: job.order)

    def next_real(self) -> list[Job]:
        """Wall clock: wait for the first attempt(s) to finish, or the first to run out of time."""
        timeout, wait = self.timeout, None
        if timeout is not None:
            wait = max(0.0, min(job.start for job in self.running) + timeout - self.clock.read())
        with contextlib.suppress(queue.Empty):  # each attempt that ends reports on `self.ended`
            self.ended.get(timeout=0.2 if wait is None else wait)  # one (briefly: see `outcome`)
            while True:
                self.ended.get_nowait()
        now = self.clock.read()
        for job in self.running:
            if not job.future.done() and timeout is not None and now - job.start >= timeout:
                job.late = ""  # abandoned: whatever it returns is ignored
        ended = (j for j in self.running if j.future.done() or j.late is not None)
        return sorted(ended, key=lambda j: j.order)

    def finish(self, job: Job) -> None:
        """Record an attempt that ended: keep a good output, or hand a failure on."""
        run, step, now = self.run, job.planned, self.clock.now
        result: Attempt | None = job.result or (outcome(job.future) if job.future.done() else None)
        run.slots.append(Slot(step.id, job.worker, job.start, now, result.where if result else ""))
        if result is not None:  # even an attempt that ran out of time has paid for its calls
            run.calls += [(step.id, job.step.role, c) for c in result.calls]
        if job.late is not None:  # it took too long, or never came back in time
            failure = Failure("timeout", f"no result within the {self.timeout:g} s limit{job.late}")
        else:
            failure = result.failure
        if failure is None:
            run.outputs[step.id] = result.output
            run.record(now, "finished", job.step, result.output)
            self.scheduler.finish(step.id, job.worker, True)
        else:
            run.failures.append((step.id, job.step.role, failure))
            run.record(now, "failed", job.step, failure.message)
            self.failed(job, failure)
        self.saved()
        self.check_budget()

    def failed(self, job: Job, failure: Failure) -> None:
        """A failed attempt: try the step-level policies, else wait for a replan, else stop."""
        run, step = self.run, job.planned
        if run.status == "running" and self.recovery:
            used = run.used.setdefault(step.id, {})
            again = recoveries.next_attempt(self.recovery, job.step, failure, used)
            over = self.over_budget() if again is not None else None
            if over:  # recovery would cost more than is left: the budget decides
                self.scheduler.finish(step.id, job.worker, False)
                self.stop(over)
                return
            if again is not None:
                policy, tried = again
                said = policy.use(used, tried)
                run.record(self.clock.now, policy.event, tried, f"{said}: attempt {job.attempt + 1}")
                self.start(tried, step, job.worker)  # the same worker carries on with it
                return
        self.scheduler.finish(step.id, job.worker, False)
        if run.status != "running":  # the run is already stopping: the failure stands
            return
        if self.replan_policy is not None and run.replans < self.replan_policy.max_replans:
            self.unresolved.append((job.step, failure))  # replanned once the plan can go no further
            return
        run.status, run.reason = "failed", f"step {step.id!r} ({job.step.role}) failed: {failure.message}"
        if self.recovery:
            bounds = recoveries.bounds_reached(self.recovery, run.used.get(step.id, {}), run.replans)
            run.record(self.clock.now, "stopped", job.step, f"recovery exhausted: {bounds}")
            run.reason += f" (recovery exhausted: {bounds})"

    def replan(self) -> None:
        """The plan can go no further: ask for a new one (recovery.py), and go on with it."""
        if reason := self.over_budget():
            self.stop(reason)
            return
        with planning_within(self.budget, self.run.calls):  # its re-asks are held to the budget too
            if recoveries.replan(self.run, self.replan_policy, self.unresolved, self.team, self.clock):
                self.unresolved = []
                self.scheduler = _scheduler(self.run, self.run.workers)
        self.saved()
        self.check_budget()

    def over_budget(self) -> str | None:
        """The cap the run has reached, if it has a budget and has reached one."""
        return None if self.budget is None else self.budget.reached(spent(self.run.calls, self.clock.read()))

    def check_budget(self) -> None:
        """Once a cap is reached, nothing new starts, saying which (a run just finished is done)."""
        reason = self.over_budget()
        left = reason and (self.unresolved or len(self.run.outputs) < len(self.run.plan))  # no cap: not read
        if left and self.run.status == "running":
            self.stop(reason)

    def stop(self, reason: str) -> None:
        self.run.status, self.run.reason = "stopped", reason
        self.run.trace.add(Event(self.clock.now, "stopped", "run", "-", (), reason))

    def saved(self) -> None:
        try:
            if self.checkpoint is not None:
                checkpoints.save(self.checkpoint, self.run, self.clock.now)
        except (OSError, checkpoints.UnsavedCall) as error:  # a full disk, a call no file holds:
            self.checkpoint, said = None, getattr(error, "strerror", None) or str(error)  # it stops, kept
            if self.run.status == "running":
                self.stop(f"the checkpoint could not be saved ({said}); the outputs so far are in this Run")
