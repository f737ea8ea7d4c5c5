"""Scheduling: which step runs on which worker, and when, on a virtual clock.

The policy is *list scheduling*, the classic greedy rule:

    Whenever a worker is free and a step is ready (all its dependencies
    finished), the free worker with the lowest number takes the ready step
    written first in the plan. Steps finishing at the same moment all finish
    before anything new starts, and nobody waits for a whole "layer".

With as many workers as steps, every step starts the moment its last
dependency finishes, so the makespan equals the plan's critical path; with
fewer workers, steps queue for a free worker. `virtual_schedule` plays the
policy out from known durations, without running anything; `run.run_plan`
follows the same policy while it really runs the steps, so both agree.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentlab.plan import Plan, PlanError, Step, check_durations
from agentlab.valid import number


@dataclass(frozen=True, init=False)
class Slot:
    """Step `step_id` ran on worker `worker` (numbered from 0) from `start` to `end` seconds, in
    the process `where` ("host:pid", as `attempt.here` says; "" if unknown or not run yet).

    `where` is left out of `==` and of the repr: it is where a run happened to go, not part of
    the schedule, so a run's slots still equal `virtual_schedule`'s, and a run shows the same
    on every machine."""

    step_id: str
    worker: int
    start: float
    end: float
    where: str = field(default="", compare=False, repr=False)

    def __init__(self, step_id: str, worker: int, start: float, end: float, where: str = ""):
        # written out, not generated: one a step, and a frozen dataclass's sets each field with
        # an `object.__setattr__` call, which showed in a no-op step's cost (see `trace.Event`)
        fields = self.__dict__
        fields["step_id"], fields["worker"], fields["start"] = step_id, worker, start
        fields["end"], fields["where"] = end, where


def step_duration(step: Step, reported: float) -> float:
    """A step's time on the virtual clock: its declared `duration` wins over what its agent reports."""
    return reported if step.duration is None else step.duration


def step_durations(plan: Plan, team: Mapping) -> dict[str, float]:
    """The duration of every step: declared, else its agent's default `seconds` (see `agents.Agent`)."""
    missing = sorted({s.role for s in plan} - set(team))
    if missing:
        raise PlanError(f"no agent in the team for role(s) {missing}")
    return {s.id: step_duration(s, team[s.role].seconds) for s in plan}


class ListScheduler:
    """The bookkeeping behind the policy, kept incrementally so each step costs O(log n).

    It is Kahn's algorithm with workers: each step's count of `unmet` dependencies
    (so nothing re-scans the plan), the `ready` steps in a heap by written position,
    and the `free` workers in a heap by number. `take()` hands out work; `finish()`
    reports it back.
    """

    def __init__(self, plan: Plan, workers: int | None):
        workers = len(plan) if workers is None else workers
        unlimited = "a whole number >= 1 (or None for unlimited)"
        number(workers, "workers", minimum=1, whole=True, must_be=unlimited)
        self.steps = plan.steps
        self.index = {s.id: i for i, s in enumerate(plan.steps)}
        self.unmet = [len(s.depends_on) for s in plan.steps]
        self.needed_by: list[list[int]] = [[] for _ in plan.steps]
        for i, s in enumerate(plan.steps):
            for d in s.depends_on:
                self.needed_by[self.index[d]].append(i)
        self.ready = [i for i, n in enumerate(self.unmet) if n == 0]  # ascending: already a heap
        self.free = list(range(workers))  # ascending: already a heap
        self.busy = 0
        self.done: set[str] = set()

    def add(self, step: Step) -> None:
        """One more step, written after the others (a streamed plan's): ready once those of its
        dependencies not yet done are."""
        i = len(self.steps)
        self.steps, self.index[step.id] = (*self.steps, step), i
        waits = [d for d in step.depends_on if d not in self.done]
        self.unmet.append(len(waits))
        self.needed_by.append([])
        for d in waits:
            self.needed_by[self.index[d]].append(i)
        if not waits:
            heapq.heappush(self.ready, i)

    def take(self) -> list[tuple[Step, int]]:
        """Pair ready steps with free workers: (step, worker) pairs, first-written step first."""
        started = []
        while self.ready and self.free:
            step = self.steps[heapq.heappop(self.ready)]
            started.append((step, heapq.heappop(self.free)))
        self.busy += len(started)
        return started

    def finish(self, step_id: str, worker: int, ok: bool = True) -> None:
        """Free the worker; if the step succeeded, its dependants are one dependency closer to ready."""
        heapq.heappush(self.free, worker)
        self.busy -= 1
        if ok:  # every step waiting for it is one dependency closer to ready
            self.done.add(step_id)
            for after in self.needed_by[self.index[step_id]]:
                self.unmet[after] -= 1
                if not self.unmet[after]:
                    heapq.heappush(self.ready, after)


def virtual_schedule(plan: Plan, durations: Mapping[str, float], workers: int | None = None) -> list[Slot]:
    """Play the list-scheduling policy out on a virtual clock, in start order.

    `workers=None` means unlimited. Nothing runs: this is the schedule a run
    with these durations will follow.
    """
    check_durations(plan, durations, "virtual_schedule")
    scheduler = ListScheduler(plan, workers)
    now, slots = 0.0, []
    running: list[tuple[float, int, str, int]] = []  # heap of (end, written position, step id, worker)
    while True:
        for step, worker in scheduler.take():
            end = now + durations[step.id]
            slots.append(Slot(step.id, worker, now, end))
            heapq.heappush(running, (end, scheduler.index[step.id], step.id, worker))
        if not running:
            return slots
        now = running[0][0]  # jump the clock to the next finish, and finish everything due then
        while running and running[0][0] == now:
            _, _, step_id, worker = heapq.heappop(running)
            scheduler.finish(step_id, worker)


def makespan(slots: Sequence[Slot]) -> float:
    """When the last step ends: the schedule's total time."""
    return max((s.end for s in slots), default=0.0)


class Clock:
    """A run's clock, "virtual" or "real". Virtual time moves only when the run moves it (to the
    next step's end, or past a planner's seconds), so it is the same on every machine; real
    time is wall-clock seconds since the run began."""

    def __init__(self, kind: str, now: float = 0.0):
        self.kind, self.now, self.real = kind, now, kind == "real"
        self.began = time.perf_counter() - now  # a resumed run's wall clock carries on from `now`

    def read(self) -> float:
        if self.real:
            self.now = time.perf_counter() - self.began
        return self.now

    def spend(self, seconds: float) -> float:
        """Time passes while the run itself does something (a planner writes a new plan)."""
        if self.real:
            return self.read()
        self.now += seconds
        return self.now
