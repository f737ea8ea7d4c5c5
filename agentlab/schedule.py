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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentlab.plan import Plan, PlanError, Step, check_durations


@dataclass(frozen=True)
class Slot:
    """Step `step_id` ran on worker `worker` (numbered from 0) from `start` to `end` seconds."""

    step_id: str
    worker: int
    start: float
    end: float


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

    It counts each step's unfinished dependencies (instead of re-scanning the
    plan), keeps ready steps in a heap by written order, and free workers in a
    heap by number. `take()` hands out work; `finish()` reports it back.
    """

    def __init__(self, plan: Plan, workers: int | None):
        if workers is None:
            workers = len(plan)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a whole number >= 1 (or None for unlimited), got {workers!r}")
        self.steps = plan.steps
        self.index = {s.id: i for i, s in enumerate(plan.steps)}
        self.waiting_on = {s.id: len(s.depends_on) for s in plan.steps}
        self.dependants: dict[str, list[str]] = {s.id: [] for s in plan.steps}
        for s in plan.steps:
            for d in s.depends_on:
                self.dependants[d].append(s.id)
        self.ready = [i for i, s in enumerate(plan.steps) if not s.depends_on]  # already a valid heap
        self.free = list(range(workers))  # likewise
        self.busy = 0

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
        if not ok:
            return
        for after in self.dependants[step_id]:
            self.waiting_on[after] -= 1
            if self.waiting_on[after] == 0:
                heapq.heappush(self.ready, self.index[after])


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
