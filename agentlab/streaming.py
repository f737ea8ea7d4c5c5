"""A planner that streams its plan into the running loop: LLMCompiler's mechanism.

`orchestrate(task, LLMPlanner(...))` waits for the whole plan before the first step starts.
LLMCompiler (Kim et al., 2024) does not: its planner emits tasks one by one and each starts as
soon as its inputs exist, while the planner is still writing. `orchestrate_streaming` does the
same with the kit's parts:

    The planner's reply arrives a piece at a time (`text_stream`: the SDK's `messages.stream`
    on Claude and on `agentlab serve`; on the simulator, at its modelled writing speed on the
    virtual clock). `StepReader` cuts each step's JSON object out of the text the moment it is
    complete; the step is checked at once (its role exists, it depends only on steps already
    seen, its `$id` references are declared) and handed to the loop of `run.py`, which starts
    it as soon as its dependencies are done. When the reply ends, the whole plan is checked as
    `LLMPlanner` checks one. A step or a plan that fails a check stops the run with the reason:
    steps already run stay in the trace, and every model call is counted.

The plan's writing is kept as `Run.writing` (start, end), which `viz.timeline` draws as its own
row; a streamed run's latency is its makespan, since planning is in it.
"""

from __future__ import annotations

import json
import math
import queue
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from agentlab.agents import Agent
from agentlab.attempt import InPlace
from agentlab.llm.base import Completion, ModelError, paid, redact
from agentlab.llm.simulated import PROFILES
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import LLMPlanner, check_plan, plan_schema, planner_prompt
from agentlab.prompts import task_request
from agentlab.run import _Loop
from agentlab.schedule import Clock, ListScheduler
from agentlab.trace import Event, Run

CHUNK = 16  # characters the simulator's stream hands over at a time (about four tokens)
STALL = 600.0  # real seconds the loop waits for the next piece of a plan before giving up


def text_stream(llm: Any, **request: Any) -> Iterator[tuple[float, str] | Completion]:
    """The reply to `request` as it is written: (seconds since the call began, the text so far)
    pairs, then the Completion. Claude and `agentlab serve` stream through the SDK (real
    seconds); the simulator's reply comes at its profile's speed (virtual seconds); any other
    LLM's all at once, when it has answered."""
    if getattr(llm, "backend", "") == "anthropic":
        yield from _sdk_stream(llm, **request)
        return
    reply = llm.complete(**request)
    speed = PROFILES.get(reply.model) if getattr(llm, "backend", "") == "simulated" else None
    for end in range(CHUNK, len(reply.text) + CHUNK, CHUNK):
        end = min(end, len(reply.text))
        due = reply.latency
        if speed is not None:  # the profile writes after its overhead, at tokens_per_second
            due = min(due, speed.overhead + math.ceil(end / 4) / speed.tokens_per_second)
        yield round(due, 6), reply.text[:end]
    yield reply


def _sdk_stream(llm: Any, **request: Any) -> Iterator[tuple[float, str] | Completion]:
    """Claude's reply through the SDK's `messages.stream` (the kit's request, cache breakpoints
    and all), read back as `AnthropicLLM` reads a whole reply."""
    import anthropic

    model = llm._pick_model(request.pop("model", None), request.get("schema"))
    body = llm._request(request["system"], request["messages"], (), request.get("schema"), model,
                        request["max_tokens"])
    began = time.perf_counter()
    try:
        with llm.client.messages.stream(**body) as stream:
            for event in stream:
                if event.type == "text":
                    yield time.perf_counter() - began, event.snapshot
            final = stream.get_final_message()
    except anthropic.APIError as e:
        raise ModelError(f"{model}: the stream from {llm.server} failed: {e}") from None
    yield llm._read(final.to_dict(), model, time.perf_counter() - began)


class StepReader:
    """Cuts the step objects out of a plan's JSON text as it grows: `feed(text so far)` returns
    the steps completed since the last call, as dicts (or raises PlanError for one that is not
    JSON). It tracks strings and nesting, so a brace inside an instruction does not fool it."""

    def __init__(self):
        self.seen, self.depth, self.start = 0, 0, -1  # characters read; nesting; where a step began
        self.in_string = self.escaped = self.in_steps = False

    def feed(self, text: str) -> list[dict[str, Any]]:
        found = []
        if not self.in_steps:
            key = text.find('"steps"')
            bracket = text.find("[", key) if key >= 0 else -1
            if bracket < 0:
                return found
            self.in_steps, self.seen = True, bracket + 1
        for i in range(self.seen, len(text)):
            char = text[i]
            if self.in_string:
                self.escaped = not self.escaped and char == "\\"
                self.in_string = self.escaped or char != '"'
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.start = i if self.depth == 0 else self.start
                self.depth += 1
            elif char in "}]" and self.depth:
                self.depth -= 1
                if self.depth == 0:
                    found.append(_object(text[self.start : i + 1]))
        self.seen = len(text)
        return found


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise PlanError(f"a step is not valid JSON ({e}): {text[:80]}") from None
    if not isinstance(value, dict):
        raise PlanError(f"a step must be a JSON object, got {text[:80]}")
    return value


@dataclass(frozen=True)
class Arrival:
    """What the stream said at `time`: a checked `step`, or a `problem` that stops the run, or
    (neither) the end of the plan."""

    time: float
    step: Step | None = None
    problem: str = ""


class StreamingPlanner(LLMPlanner):
    """An `LLMPlanner` whose plan can be read while it is written (`stream`). It sends the same
    request, so it writes the same plan; one attempt, since steps may already have run when a
    problem shows. Called with a task, it waits for the whole plan, like any planner."""

    def __call__(self, task: str) -> Plan:
        for arrival in self.stream(task):
            if arrival.problem:
                raise PlanError(arrival.problem)
        return self.plan

    def stream(self, task: str) -> Iterator[Arrival]:
        """The checked steps as they are completed; the plan and its call, after, in `plan` and
        `calls`. A problem is one Arrival (the stream is still read to its end, to count it)."""
        if not isinstance(task, str) or not task.strip():
            raise ValueError("the task must be a non-empty string")
        self.calls, self.rejected, self.plan = [], [], None
        request = {
            "system": planner_prompt(self.team, self.tool_steps),
            "messages": [{"role": "user", "content": task_request(task)}],
            "schema": plan_schema(self.team, self.tool_steps),
            "model": self.model,
            "max_tokens": self.max_tokens,
        }
        reader, steps, problem, last = StepReader(), [], "", 0.0
        try:
            for piece in text_stream(self.llm, **request):
                if isinstance(piece, Completion):
                    self.calls.append(piece)
                    continue
                last, text = piece
                if problem:
                    continue
                try:
                    for raw in reader.feed(text):
                        steps.append(raw)
                        prefix = Plan.from_dict({"steps": steps}, self.team)
                        check_plan(prefix, self.team)
                        yield Arrival(last, prefix.steps[-1])
                except PlanError as e:
                    problem = f"step {len(steps)} of the streamed plan: {e}"
                    yield Arrival(last, problem=problem)
        except ModelError as e:
            self.calls += paid(e)
            problem = f"the planner's call failed: {e}"
            yield Arrival(last, problem=problem)
        if not problem:
            try:
                checked = self._read(self.calls[-1])
                self.plan = Plan(checked.steps, checked.roles, calls=self.calls)
            except PlanError as e:
                yield Arrival(self.calls[-1].latency, problem=f"the whole plan: {e}")
        yield Arrival(self.calls[-1].latency if self.calls else last)


def orchestrate_streaming(
    task: str,
    planner: StreamingPlanner,
    team: Mapping[str, Agent],
    *,
    workers: int = 16,
    clock: str = "virtual",
    checks: tuple = (),
    timeout: float | None = None,
) -> Run:
    """Plan and run at once: each step starts as soon as it has been written and its
    dependencies are done. Time 0 is when the planner starts writing."""
    if clock not in ("virtual", "real"):
        raise ValueError(f"clock must be 'virtual' or 'real', got {clock!r}")
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    run = Run(task, None, workers=workers, clock=clock, writing=(0.0, 0.0))
    loop = _Streamed(run, team, Clock(clock), None, tuple(checks), timeout)
    loop.planner, loop.stream, loop.workers = planner, planner.stream(task), workers
    if clock == "real":
        loop.arrived = queue.SimpleQueue()
        threading.Thread(target=loop.read, daemon=True).start()
    from concurrent import futures

    if workers == 1 and timeout is None:
        return loop.go(InPlace())
    with futures.ThreadPoolExecutor(workers, "agentlab-streamed") as pool:
        return loop.go(pool)


class _Streamed(_Loop):
    """`run._Loop` with steps that arrive while it runs."""

    planner: StreamingPlanner
    stream: Iterator[Arrival]
    workers: int
    arrived: queue.SimpleQueue | None = None
    waiting: Arrival | None = None
    ended_stream: bool = False

    def go(self, pool: Any) -> Run:
        run, self.pool = self.run, pool
        while True:
            if run.status == "running" and self.scheduler is not None:
                for step, worker in self.scheduler.take():
                    self.start(run.plan[step.id], run.plan[step.id], worker)
            if self.clock.real:
                if not self.real_turn():
                    break
            elif not self.virtual_turn():
                break
        if run.plan is None:  # not one step arrived: a failed run with no plan
            run.trace.add(Event(self.clock.now, "failed", "plan", "planner", (), run.reason))
            return run
        run.close(self.clock.now)
        return run

    def virtual_turn(self) -> bool:
        """Take the earlier of the next arrival and the next end(s) of running steps."""
        arrival = self.next_arrival()
        if self.running:
            before, due = self.clock.now, self.next_virtual()
            if arrival is None or arrival.time > self.clock.now:
                for job in due:
                    self.running.remove(job)
                    self.finish(job)
                return True
            self.clock.now = max(before, arrival.time)
        if arrival is None:
            return False
        self.clock.now = max(self.clock.now, arrival.time)
        self.accept(arrival)
        return True

    def real_turn(self) -> bool:
        """Wait for running steps or the next arrival (each wakes the wait), then take both."""
        if self.running:
            for job in self.next_real():
                self.running.remove(job)
                self.finish(job)
        elif not self.ended_stream:
            try:
                self.accept(self.arrived.get(timeout=STALL))
            except queue.Empty:
                self.stop_with(f"the planner's stream stalled: nothing for {STALL:g} s")
                self.ended_stream = True
        while not self.ended_stream:
            try:
                self.accept(self.arrived.get_nowait())
            except queue.Empty:
                break
        ready = self.run.status == "running" and self.scheduler is not None and self.scheduler.ready
        return bool(self.running or ready) or not self.ended_stream

    def read(self) -> None:
        """Real clock: read the stream on this thread; wake the loop with each arrival."""
        try:
            for arrival in self.stream:
                self.arrived.put(Arrival(self.clock.read(), arrival.step, arrival.problem))
                self.ended.put(None)
        except Exception as e:  # whatever went wrong, the loop hears of it and ends
            self.arrived.put(Arrival(self.clock.read(), problem=f"{type(e).__name__}: {e}"))
            self.arrived.put(Arrival(self.clock.read()))
            self.ended.put(None)

    def next_arrival(self) -> Arrival | None:
        if self.waiting is None and not self.ended_stream:
            self.waiting = next(self.stream, None)
            self.ended_stream = self.waiting is None
        return self.waiting

    def accept(self, arrival: Arrival) -> None:
        """A step joins the plan and the scheduler; a problem stops the run; the end is noted."""
        self.waiting, run, now = None, self.run, self.clock.read()
        if arrival.problem:
            self.stop_with(f"planning failed: {arrival.problem}")
        elif arrival.step is not None and run.status == "running":
            step = arrival.step
            run.plan = Plan([*(run.plan or ()), step])
            run.plans = [run.plan]
            run.record(now, "planned", step, step.instruction)
            if self.scheduler is None:
                self.scheduler = ListScheduler(run.plan, self.workers)
            else:
                self.scheduler.add(step)
        elif arrival.step is None:  # the end of the plan: its writing and its calls
            run.writing = (0.0, now)
            run.calls += [("plan", "planner", c) for c in self.planner.calls]
            if self.planner.plan is not None and run.plan is not None:  # the same steps, checked whole
                run.plan = run.plans[0] = self.planner.plan
            if self.clock.real:
                self.ended_stream = True

    def stop_with(self, reason: str) -> None:
        if self.run.status == "running":
            self.run.status, self.run.reason = "failed", redact(reason)
            self.run.trace.add(Event(self.clock.read(), "stopped", "run", "-", (), self.run.reason))
