"""The orchestrator: decompose -> delegate -> monitor -> synthesize, with steps in parallel.

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

Each result is *monitored* before anything uses it (`monitor.py`): a step fails
if its agent raises, runs past `timeout`, answers with the FAILED sentinel, or
fails one of the `checks`. What happens then is up to `recovery` (`recovery.py`):
with no policy, the run stops cleanly (nothing new starts, running steps finish
and keep their outputs, the rest are marked skipped, `Run.reason` says why);
with `Retry`, `Reroute` or `Replan`, it tries again within each policy's bound.
A `budget` (`budget.py`) stops the run when a cap is reached, a `checkpoint`
file (`checkpoint.py`) lets a killed run resume, and `faults` (`faults.py`) make
chosen steps fail on purpose.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentlab import checkpoint as checkpoints
from agentlab.agents import STUB_TEAM, Agent
from agentlab.budget import Budget, Spent, spent
from agentlab.faults import Fault, InjectedFault, first_hit, sentinel_output, wrong_output
from agentlab.llm.base import ModelError
from agentlab.monitor import Check, Failure, inspect
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import stub_planner
from agentlab.recovery import Replan, Retry, bounds_reached, check_policies, next_attempt, remaining, renamed
from agentlab.schedule import ListScheduler, Slot, step_duration
from agentlab.trace import Event, Trace

CLOCKS = ("virtual", "real")


@dataclass
class Run:
    """What a run produced: outputs per step, the trace, who ran what when, and how it ended.

    `plan` is the plan as it stands (after any replans: the finished steps kept, then the
    new ones); `plans` every plan the run followed, the first one first. `plan` is None
    only when no plan was ever made (the planner failed). `failures` lists every failed
    attempt, including those a recovery policy made good."""

    task: str
    plan: Plan | None
    outputs: dict[str, str] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    status: str = "running"  # then "done", "failed" (a step or the planner failed) or "stopped" (budget)
    reason: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (step id, role, llm.Completion)
    slots: list[Slot] = field(default_factory=list)  # one per attempt at a step, in start order
    workers: int = 1
    clock: str = "virtual"
    plans: list[Plan] = field(default_factory=list, repr=False)
    failures: list[tuple[str, str, Failure]] = field(default_factory=list, repr=False)  # (step id, role, why)

    @property
    def deliverable(self) -> str | None:
        """The final step's output, or None if the run never reached it."""
        return None if self.plan is None else self.outputs.get(self.plan.final_step.id)

    @property
    def step_status(self) -> dict[str, str]:
        """Where each step ended up: "done", "failed", "skipped", or "pending" (not reached yet).
        Steps a replan replaced are listed too, after the current plan's."""
        status = {step_id: "pending" for step_id in (self.plan.ids if self.plan else ())}
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
        steps = f"{len(self.outputs)}/{len(self.plan)} steps" if self.plan else "no plan"
        head = f"{self.status}: {steps} in {self.elapsed:.1f} s ({clock}{on})"
        return head + (f" - {self.reason}" if self.reason else "")

    def __str__(self) -> str:
        plan = str(self.plan) if self.plan else "(no plan)"
        parts = [f"Task: {self.task}", plan, "", str(self.trace), "", self.summary()]
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

    `pool` runs the agents (default: a thread pool of `workers` threads; yours
    is not shut down). `clock` is "virtual" (deterministic) or "real" (wall clock).
    Monitoring: `checks` (validators, critics) and `timeout` (seconds per attempt).
    `recovery`: policies tried in order (`Retry`, `Reroute`, `Replan`). `budget`: caps.
    `faults`: failures injected on purpose. `checkpoint`: a file the state is saved to
    after every step; with `resume=True` an existing one is carried on from.
    `planning_calls`: the model calls that wrote `plan`, counted in the budget and
    listed first in `Run.calls` (under step "plan", role "planner").
    """
    engine = _Engine(
        team,
        task,
        workers=workers,
        clock=clock,
        checks=tuple(checks),
        timeout=timeout,
        recovery=tuple(recovery),
        budget=budget,
        faults=tuple(faults),
        checkpoint=None if checkpoint is None else Path(checkpoint),
        resume=resume,
    )
    engine.start(plan, list(planning_calls), resume)
    if pool is not None:
        engine.loop(pool)
    else:
        own = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="agentlab")
        try:
            engine.loop(own)
        finally:  # a step abandoned at its timeout may still be running: do not wait for it
            own.shutdown(wait=not engine.abandoned, cancel_futures=True)
    return engine.run


# --- one attempt at a step -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Attempt:
    """What one try at a step produced. The worker returns one of these and never raises."""

    output: str | None
    calls: tuple[Any, ...]
    seconds: float  # as reported; a declared duration still wins unless `forced`
    failure: Failure | None = None
    forced: bool = False  # set by a "slow" fault: these seconds stand


def _attempt(
    agent: Agent,
    step: Step,
    planned: Step,
    context: Mapping[str, str],
    checks: tuple[Check, ...],
    fault: Fault | None,
    attempt: int,
    real_clock: bool,
) -> _Attempt:
    """Try `step` (the plan's `planned` step, perhaps rerouted or with a retry note) once:
    inject the fault if one hits, run the agent, then look at what came back."""
    try:
        if fault is not None and fault.kind == "error":
            raise InjectedFault(fault.describe(planned.id, attempt))
        work = agent(step, context)
    except Exception as error:  # noqa: BLE001 - every failure becomes part of the run's story
        reported = getattr(error, "seconds", None)  # a StepFailed keeps the calls and time it used
        seconds = agent.seconds if reported is None else reported
        failure = Failure("error", f"{type(error).__name__}: {error}")
        return _Attempt(None, tuple(getattr(error, "calls", ())), seconds, failure)
    output, seconds, forced = work.output, work.seconds, False
    if fault is not None and fault.kind == "sentinel":
        output = sentinel_output(fault, planned.id, attempt)
    elif fault is not None and fault.kind == "wrong":
        output = wrong_output(output)
    elif fault is not None and fault.kind == "slow":
        seconds, forced = fault.seconds, True
        if real_clock:
            time.sleep(fault.seconds)
    return _Attempt(output, work.calls, seconds, inspect(planned, output, context, checks), forced)


@dataclass(eq=False)
class _Job:
    """An attempt handed to a worker: where and when it started, and the pool's future."""

    step: Step  # as tried: a reroute changes the role, a retry adds a note
    planned: Step  # as the plan has it
    order: int  # position in the schedule: ties are broken in written order
    worker: int
    start: float
    attempt: int
    future: futures.Future
    end: float | None = None  # known once the attempt has reported (virtual) or timed out
    timed_out: bool = False


# --- the engine ------------------------------------------------------------------------------------


class _Engine:
    """The state of one run while it runs: the scheduler, the jobs in flight, the clock, the
    recovery counters. `start` sets it up (fresh or from a checkpoint), `loop` runs it."""

    def __init__(
        self, team, task, *, workers, clock, checks, timeout, recovery, budget, faults, checkpoint, resume
    ):
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"timeout must be a number of seconds > 0 (or None), got {timeout!r}")
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget must be a Budget, got {type(budget).__name__}")
        for fault in faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"faults must be Fault objects, got {type(fault).__name__}")
        self.replan_policy = check_policies(recovery, team)
        if self.replan_policy is not None and self.replan_policy.planner is None:
            raise ValueError("Replan needs a planner here (orchestrate fills in its own)")
        if resume and checkpoint is None:
            raise ValueError("resume=True needs the checkpoint file to resume from: pass checkpoint=")
        if self.replan_policy is not None and not task.strip():
            raise ValueError("replanning needs the task: pass task= to run_plan")
        self.team, self.task, self.workers, self.clock = team, task, workers, clock
        self.checks, self.timeout, self.recovery = checks, timeout, recovery
        self.budget, self.faults, self.checkpoint = budget, faults, checkpoint
        self.now = 0.0
        self.began = time.perf_counter()
        self.running: list[_Job] = []
        self.abandoned = False  # a real-clock timeout left a thread running
        self.attempts: dict[str, int] = {}  # step id -> attempts made
        self.used: dict[str, dict[str, int]] = {}  # step id -> {"retry": n, "reroute": n}
        self.replans = 0
        self.unresolved: list[tuple[Step, Failure]] = []  # failures waiting for a replan
        self.calls: dict[str, list[tuple[str, Any]]] = {}  # key (step id, "plan", "replanN") -> (role, call)
        self.spent = Spent()  # the calls' running total, for the budget
        self.keys: list[str] = []  # the order calls are listed in: plan order, replans in between

    # --- setting up ------------------------------------------------------------------------------

    def start(self, plan: Plan, planning_calls: list[Any], resume: bool) -> None:
        if not isinstance(plan, Plan):
            raise PlanError(f"run_plan needs a Plan, got {type(plan).__name__}")
        Plan(plan.steps, roles=self.team)  # re-validate: every role must have an agent in this team
        self.plan0 = plan
        ListScheduler(plan, self.workers)  # checks the worker count before anything runs
        self.run = Run(task=self.task, plan=plan, workers=self.workers, clock=self.clock, plans=[plan])
        if resume and self.checkpoint is not None and self.checkpoint.exists():
            self._restore(checkpoints.load(self.checkpoint, self.task, plan))
        else:
            self.keys = (["plan"] if planning_calls else []) + plan.ids
            self._add_calls("plan", "planner", planning_calls)
            for step in plan:
                self._event("planned", step, step.instruction)
            if self.checkpoint is not None:
                self._save()
        self.scheduler = self._scheduler()
        self._check_budget()

    def _scheduler(self) -> ListScheduler | None:
        """A scheduler for the steps still to do (a resumed or replanned run has done some)."""
        left = remaining(self.run.plan, set(self.run.outputs))
        return None if left is None else ListScheduler(left, self.workers)

    # --- the loop ------------------------------------------------------------------------------

    def loop(self, pool: futures.Executor) -> None:
        """Start what is ready, wait for the next attempt(s) to end, record, recover, repeat."""
        run = self.run
        while True:
            if run.status == "running" and self.scheduler is not None:  # after a stop nothing new starts
                for step, worker in self.scheduler.take():
                    self._submit(pool, run.plan[step.id], run.plan[step.id], worker)
            if not self.running:
                if run.status == "running" and self.unresolved:
                    self._replan()
                    continue
                break
            finished = self._next_virtual() if self.clock == "virtual" else self._next_real()
            for job in finished:
                self.running.remove(job)
                self._finish(pool, job)
        self._end()

    def _submit(self, pool: futures.Executor, step: Step, planned: Step, worker: int) -> None:
        attempt = self.attempts.get(planned.id, 0) + 1
        self.attempts[planned.id] = attempt
        context = {dep: self.run.outputs[dep] for dep in planned.depends_on}
        fault = first_hit(self.faults, planned.id, step.role, attempt)
        args = (
            self.team[step.role],
            step,
            planned,
            context,
            self.checks,
            fault,
            attempt,
            self.clock == "real",
        )
        order = self.scheduler.index[planned.id]
        job = _Job(step, planned, order, worker, self.now, attempt, pool.submit(_attempt, *args))
        self.running.append(job)
        self._event("started", step, step.instruction)

    def _next_virtual(self) -> list[_Job]:
        """Virtual clock: wait until every running attempt has reported its duration, then jump
        to the earliest end. All attempts ending then finish together, in written order."""
        futures.wait([job.future for job in self.running])
        for job in self.running:
            if job.end is None:
                result: _Attempt = job.future.result()
                took = result.seconds if result.forced else step_duration(job.planned, result.seconds)
                if self.timeout is not None and took > self.timeout:
                    took, job.timed_out = self.timeout, True
                job.end = job.start + took
        self.now = min(job.end for job in self.running)
        return sorted((job for job in self.running if job.end == self.now), key=lambda job: job.order)

    def _next_real(self) -> list[_Job]:
        """Wall clock: wait for the first attempt(s) to finish, or the first to run out of time."""
        wait = None
        if self.timeout is not None:
            wait = max(0.0, min(job.start for job in self.running) + self.timeout - self._clock())
        done, _ = futures.wait([job.future for job in self.running], wait, futures.FIRST_COMPLETED)
        self.now = self._clock()
        for job in self.running:
            if job.future not in done and self.timeout is not None and self.now - job.start >= self.timeout:
                job.timed_out = self.abandoned = True  # its thread cannot be stopped: its result is ignored
        ended = [job for job in self.running if job.future in done or job.timed_out]
        return sorted(ended, key=lambda job: job.order)

    def _clock(self) -> float:
        return time.perf_counter() - self.began

    # --- recording an attempt ------------------------------------------------------------------------

    def _finish(self, pool: futures.Executor, job: _Job) -> None:
        run, step = self.run, job.planned
        self.run.slots.append(Slot(step.id, job.worker, job.start, self.now))
        result: _Attempt | None = job.future.result() if job.future.done() else None
        if result is not None:
            self._add_calls(step.id, job.step.role, result.calls)
        failure = result.failure if result is not None else None
        if job.timed_out:
            failure = Failure("timeout", f"no result within the {self.timeout:g} s limit")
        if failure is None:
            run.outputs[step.id] = result.output
            self._event("finished", job.step, result.output)
            self.scheduler.finish(step.id, job.worker, True)
        else:
            run.failures.append((step.id, job.step.role, failure))
            self._event("failed", job.step, failure.message)
            self._failed(pool, job, failure)
        self._save()
        self._check_budget()

    def _failed(self, pool: futures.Executor, job: _Job, failure: Failure) -> None:
        """A failed attempt: try the step-level policies, else wait for a replan, else stop."""
        run, step = self.run, job.planned
        if run.status != "running":  # the run is already stopping: the failure stands
            self.scheduler.finish(step.id, job.worker, False)
            return
        used = self.used.setdefault(step.id, {})
        again = next_attempt(self.recovery, job.step, failure, used)
        over = self._over_budget()
        if again is not None and over:  # recovery would cost more than is left: the budget decides
            self.scheduler.finish(step.id, job.worker, False)
            self._stop(over)
            return
        if again is not None:
            policy, tried = again
            how, kind = ("retry", "retried") if isinstance(policy, Retry) else ("reroute", "rerouted")
            used[how] = used.get(how, 0) + 1
            self._event(kind, tried, f"{policy.describe(used, tried)}: attempt {job.attempt + 1}")
            self._submit(pool, tried, step, job.worker)  # the same worker carries on with it
            return
        self.scheduler.finish(step.id, job.worker, False)
        if self.replan_policy is not None and self.replans < self.replan_policy.max_replans:
            self.unresolved.append((job.step, failure))  # replanned once the plan can go no further
            return
        reason = f"step {step.id!r} ({job.step.role}) failed: {failure.message}"
        if self.recovery:
            bounds = bounds_reached(self.recovery, used, self.replans)
            self._event("stopped", job.step, f"recovery exhausted: {bounds}")
            reason += f" (recovery exhausted: {bounds})"
        run.status, run.reason = "failed", reason

    # --- replanning ----------------------------------------------------------------------------------

    def _replan(self) -> None:
        """Ask the planner for the remaining work, keep every finished step, go on with the new plan."""
        run, policy = self.run, self.replan_policy
        if reason := self._over_budget():
            self._stop(reason)
            return
        self.replans += 1
        key = f"replan{self.replans}"
        failures = "; ".join(f"{s.id} ({s.role}) - {f.message}" for s, f in self.unresolved)
        first = self.unresolved[0][0]
        before = list(getattr(policy.planner, "calls", ()))
        try:
            new = policy.planner.replan(self.task, run.plan, dict(run.outputs), failures)
            if not isinstance(new, Plan):
                raise PlanError(f"the planner's replan returned {type(new).__name__}, not a Plan")
            steps = renamed(new, self._prefix())
            plan = Plan([s for s in run.plan if s.id in run.outputs] + steps, roles=self.team)
        except (PlanError, ModelError) as error:  # PlanningFailed is a PlanError
            self._take_planner_calls(key, before, policy.planner, error)
            problem = (
                f"replanning failed: {error}"
                if isinstance(error, PlanError)
                else f"replanning failed: {_named(error)}"
            )
            self._event("stopped", first, problem, role="planner")
            run.status, run.reason = "failed", f"{problem} (after: {failures})"
            self._save()
            return
        spent_seconds = self._take_planner_calls(key, before, policy.planner)
        if self.clock == "virtual":
            self.now += spent_seconds  # the planner's time is the run's time
        else:
            self.now = self._clock()
        failed = {s.id for s, _ in self.unresolved}
        detail = (
            f"replan {self.replans} of {policy.max_replans}: kept {len(plan) - len(steps)} finished step(s), "
            f"{len(steps)} new: {', '.join(s.id for s in steps)}"
        )
        self._event("replanned", first, detail, role="planner")
        for s in run.plan:
            if s.id not in run.outputs and s.id not in failed:
                self._event("skipped", s, f"not run: replaced by replan {self.replans}")
        for s in steps:
            self._event("planned", s, s.instruction)
        self.keys += [s.id for s in steps]
        run.plan = plan
        run.plans.append(plan)
        self.unresolved = []
        self.scheduler = self._scheduler()
        self._save()
        self._check_budget()

    def _prefix(self) -> str:
        """ "r1_" for the first replan's steps, unless some step already uses that prefix."""
        prefix = f"r{self.replans}_"
        taken = set(self.attempts) | set(self.run.plan.ids)
        while any(step_id.startswith(prefix) for step_id in taken):
            prefix = "r" + prefix
        return prefix

    def _take_planner_calls(
        self, key: str, before: list[Any], planner: Any, error: Exception | None = None
    ) -> float:
        """Record the calls the planner made just now (not those of earlier tasks); their seconds."""
        made = planner_calls(before, planner, error)
        self._add_calls(key, "planner", made)
        if key not in self.keys:
            self.keys.append(key)
        return sum(getattr(c, "latency", 0.0) for c in made)

    # --- budgets, the end, checkpoints -----------------------------------------------------------------

    def _add_calls(self, key: str, role: str, calls: Sequence[Any]) -> None:
        self.calls.setdefault(key, []).extend((role, c) for c in calls)
        if self.budget is not None:
            self.spent += spent((key, role, c) for c in calls)

    def _all_calls(self) -> list[tuple[str, str, Any]]:
        return [(key, role, call) for key in self.keys for role, call in self.calls.get(key, ())]

    def _over_budget(self) -> str | None:
        if self.budget is None:
            return None
        now = self.now if self.clock == "virtual" else self._clock()
        return self.budget.reached(replace(self.spent, seconds=now))

    def _check_budget(self) -> None:
        """Once a cap is reached, nothing new starts; the run says which cap. (A run whose
        last step has just finished is done, whatever it spent.)"""
        reason = self._over_budget()
        left = self.unresolved or len(self.run.outputs) < len(self.run.plan)
        if reason and left and self.run.status == "running":
            self._stop(reason)

    def _stop(self, reason: str) -> None:
        self.run.status, self.run.reason = "stopped", reason
        self.run.trace.add(Event(self.now, "stopped", "run", "-", (), reason))

    def _end(self) -> None:
        run = self.run
        run.calls = self._all_calls()
        order = {step_id: i for i, step_id in enumerate(self.keys)}
        run.slots.sort(key=lambda slot: (slot.start, order.get(slot.step_id, len(order))))
        if run.status == "running":
            run.status = "done"
        else:
            ran = {slot.step_id for slot in run.slots}
            for step in run.plan:
                if step.id not in ran:
                    self._event("skipped", step, "not run: " + run.reason)
        self._save()

    def _event(self, kind: str, step: Step, detail: str, role: str | None = None) -> None:
        self.run.trace.add(Event(self.now, kind, step.id, role or step.role, step.depends_on, detail))

    def _save(self) -> None:
        if self.checkpoint is None:
            return
        run = self.run
        state = {
            "task": self.task,
            "plan0": self.plan0.to_dict(),
            "plans": [p.to_dict() for p in run.plans],
            "outputs": run.outputs,
            "calls": [checkpoints.encode_call(c) for c in self._all_calls()],
            "keys": self.keys,
            "trace": [checkpoints.encode_event(e) for e in run.trace],
            "slots": [checkpoints.encode_slot(s) for s in run.slots],
            "now": self.now,
            "attempts": self.attempts,
            "used": self.used,
            "replans": self.replans,
            "failures": [[step_id, role, f.kind, f.message] for step_id, role, f in run.failures],
            "status": run.status,
            "reason": run.reason,
        }
        checkpoints.save(self.checkpoint, self.task, self.plan0, state)

    def _restore(self, state: dict[str, Any]) -> None:
        """Carry on from a checkpoint: finished steps keep their outputs and are not run again."""
        run = self.run
        try:
            run.plans = [Plan.from_dict(p, self.team) for p in state["plans"]]
            run.plan = run.plans[-1]
            run.outputs = dict(state["outputs"])
            for step_id, role, call in map(checkpoints.decode_call, state["calls"]):
                self._add_calls(step_id, role, [call])
            self.keys = list(state["keys"])
            run.trace.events = [checkpoints.decode_event(e) for e in state["trace"]]
            run.slots = [checkpoints.decode_slot(s) for s in state["slots"]]
            self.now = float(state["now"])
            self.attempts, self.used = dict(state["attempts"]), dict(state["used"])
            self.replans = int(state["replans"])
            run.failures = [(i, role, Failure(kind, message)) for i, role, kind, message in state["failures"]]
        except (KeyError, TypeError, ValueError) as e:
            name = self.checkpoint.name
            raise checkpoints.CheckpointError(f"checkpoint {name} cannot be resumed: {_named(e)}") from None
        left = [s.id for s in run.plan if s.id not in run.outputs]
        detail = (
            f"resumed from a checkpoint: {len(run.outputs)} step(s) done, to do: {', '.join(left) or 'none'}"
        )
        run.trace.add(Event(self.now, "resumed", "run", "-", (), detail))
        if self.clock == "real":
            self.began -= self.now  # the wall clock carries on from where the run was


def _named(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def new_calls(before: Sequence[Any], after: Sequence[Any]) -> list[Any]:
    """The calls in `after` that were not in `before` (by identity): what a planner that keeps
    a `calls` list made since `before` was read, whether it clears the list or appends to it."""
    seen = {id(c) for c in before}
    return [c for c in after if id(c) not in seen]


def planner_calls(before: Sequence[Any], planner: Any, error: Exception | None = None) -> list[Any]:
    """Every call a planner made since `before` was read, including those an error carries
    (a `ModelError` holds the API calls it paid for before giving up), each once."""
    made = new_calls(before, getattr(planner, "calls", ()))
    return made + new_calls(made, getattr(error, "calls", ()))


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

    A planner that keeps its model `calls` (like `planners.LLMPlanner`) has them counted
    under the role "planner". If planning fails (no valid plan, or a model error), the
    result is a failed Run with no plan, the reason and the calls it cost, not an exception.
    With `checkpoint=` and `resume=True`, a saved run is carried on without planning again.
    """
    options["recovery"] = [
        Replan(planner, p.max_replans) if isinstance(p, Replan) and p.planner is None else p
        for p in options.get("recovery", ())
    ]
    path, resume = options.get("checkpoint"), options.get("resume", False)
    if resume and path is not None and Path(path).exists():
        plan = checkpoints.load(path, task)["plan0"]  # the plan it started from; no new planning
        return run_plan(plan, team, task, workers=workers, **options)
    before = list(getattr(planner, "calls", ()))
    try:
        plan = planner(task)
    except (PlanError, ModelError) as error:  # PlanningFailed is a PlanError
        made = planner_calls(before, planner, error)
        run = Run(task=task, plan=None, workers=workers, status="failed")
        run.reason = (
            f"planning failed: {error}"
            if isinstance(error, PlanError)
            else f"planning failed: {_named(error)}"
        )
        run.calls = [("plan", "planner", c) for c in made]
        run.trace.add(Event(0.0, "failed", "plan", "planner", (), run.reason))
        return run
    if not isinstance(plan, Plan):
        raise PlanError(f"the planner returned {type(plan).__name__}, not a Plan")
    made = planner_calls(before, planner)
    return run_plan(plan, team, task, workers=workers, planning_calls=made, **options)
