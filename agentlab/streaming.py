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
    `LLMPlanner` checks one. A step or a plan that fails a check, or a stream or planner call
    that fails, stops the run with the reason: steps already run stay in the trace, and every
    model call is counted, a broken stream's as far as it was billed. Ctrl-C stops it, kept.

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
from dataclasses import dataclass, field
from typing import Any

from agentlab.agents import Agent
from agentlab.llm.base import Completion, ModelError, brief, paid, redact
from agentlab.llm.simulated import PROFILES
from agentlab.plan import Plan, PlanError, Step, references
from agentlab.planners import LLMPlanner, check_plan, plan_schema, planner_prompt, planning_failure
from agentlab.prompts import task_request
from agentlab.run import Loop, drive
from agentlab.schedule import Clock, ListScheduler
from agentlab.trace import Event, Run

CHUNK = 16  # characters the simulator's stream hands over at a time (about four tokens)
STALL = 600.0  # real seconds the loop waits for the next piece of a plan before giving up


def text_stream(llm: Any, **request: Any) -> Iterator[tuple[float, str] | Completion]:
    """The reply to `request` as it is written: (seconds since the call began, the next piece of
    text) pairs, then the Completion. Claude and `agentlab serve` stream through the SDK (real
    seconds); the simulator's reply comes at its profile's speed (virtual seconds); any other
    LLM's all at once, when it has answered. A failure is a ModelError with what was paid."""
    if getattr(llm, "backend", "") == "anthropic":
        yield from _sdk_stream(llm, **request)
        return
    reply = llm.complete(**request)
    if not isinstance(reply, Completion) or not isinstance(reply.text, str):
        raise ModelError(f"the planner's model returned {type(reply).__name__}, not a Completion")
    speed = PROFILES.get(reply.model) if getattr(llm, "backend", "") == "simulated" else None
    for begin in range(0, len(reply.text), CHUNK):
        end = min(begin + CHUNK, len(reply.text))
        due = reply.latency
        if speed is not None:  # the profile writes after its overhead, at tokens_per_second
            due = min(due, speed.overhead + math.ceil(end / 4) / speed.tokens_per_second)
        yield round(due, 6), reply.text[begin:end]
    yield reply


def _sdk_stream(llm: Any, **request: Any) -> Iterator[tuple[float, str] | Completion]:
    """Claude's reply through the SDK's `messages.stream` (the kit's request, cache breakpoints
    and all), read back as `AnthropicLLM` reads a whole reply. Whatever breaks it (an API error,
    a cut connection, a stall past the client's timeout, an event that is not JSON, a usage the
    kit refuses) is a ModelError that carries the call as far as it was billed: the server
    bills a stream from its start (`message_start` carries the input tokens)."""
    model = llm._pick_model(request.pop("model", None), request.get("schema"))
    body = llm._request(request["system"], request["messages"], (), request.get("schema"), model,
                        request["max_tokens"])
    began, stream = time.perf_counter(), None
    try:
        with llm.client.messages.stream(**body) as stream:
            for event in stream:
                if event.type == "text":
                    yield time.perf_counter() - began, event.text
            final = stream.get_final_message()
        reply = llm._read(final.to_dict(), model, time.perf_counter() - began)
    except Exception as e:  # noqa: BLE001 - the HTTP library's errors are not the SDK's: each is a failed call
        said = f"{type(e).__name__}: {brief(str(e))}" if str(e).strip() else type(e).__name__
        billed = _billed(llm, stream, model, time.perf_counter() - began)
        raise ModelError(f"{model}: the stream from {llm.server} failed: {said}", billed) from None
    yield reply


def _billed(llm: Any, stream: Any, model: str, latency: float) -> tuple[Completion, ...]:
    """The message a broken stream had got to, as a Completion (its usage as the server sent it);
    none if it never started, or its usage is one the kit refuses."""
    try:
        return (llm._read(stream.current_message_snapshot.to_dict(), model, latency),)
    except Exception:  # noqa: BLE001 - no snapshot, or nothing countable in it
        return ()


class StepReader:
    """Cuts the steps out of a plan's JSON text as it arrives: `feed(piece)` takes the next piece
    and returns the steps completed in it, as dicts (or raises PlanError for one that is not JSON).
    Only elements of the top object's "steps" array are steps. It tracks strings and nesting, so a
    brace or a quote inside an instruction does not fool it, and it looks at each character once."""

    def __init__(self):
        self.depth = 0  # 1: in the top object; 2: in its steps array; 3 and more: in a step
        self.in_string = self.escaped = False
        self.key: list[str] | None = None  # a string being read in the top object (a key, maybe)
        self.last_key = ""  # the top object's last string: the key of the value that follows
        self.array = "before"  # the steps array: "before", "in", "after"
        self.step: list[str] = []  # the pieces of the step being read

    def feed(self, piece: str) -> list[dict[str, Any]]:
        found, begin = [], 0  # where the step being read starts in this piece
        for i, char in enumerate(piece):
            if self.in_string:
                self.escaped = not self.escaped and char == "\\"
                self.in_string = self.escaped or char != '"'
                if self.key is not None:
                    self.key.append(char)
                    if not self.in_string:
                        self.last_key, self.key = "".join(self.key)[:-1], None
            elif char == '"':
                self.in_string = True
                self.key = [] if self.depth == 1 else None
            elif char == "," and self.depth == 1:
                self.last_key = ""
            elif char in "{[":
                if self.depth == 1 and char == "[" and self.last_key == "steps" and self.array == "before":
                    self.array = "in"
                elif self.depth == 2 and self.array == "in":
                    self.step, begin = [], i
                self.depth += 1
            elif char in "}]" and self.depth:
                self.depth -= 1
                if self.depth == 2 and self.array == "in":
                    found.append(_object("".join(self.step) + piece[begin : i + 1]))
                elif self.depth == 1 and self.array == "in":
                    self.array = "after"
        if self.depth >= 3 and self.array == "in":
            self.step.append(piece[begin:])
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
        `calls`. A problem is one Arrival (the stream is still read to its end, to count it).
        Each step is checked once, against the steps before it: a plan costs O(steps)."""
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
        reader, steps, problem, last = StepReader(), {}, "", 0.0
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
                        step = self._check(raw, steps)
                        steps[step.id] = step
                        yield Arrival(last, step)
                except PlanError as e:
                    problem = f"step {len(steps) + 1} of the streamed plan: {e}"
                    yield Arrival(last, problem=problem)
        except Exception as e:  # noqa: BLE001 - as `orchestrate` does: any planner fault is a failed run
            self.calls += paid(e)
            problem = f"the planner's call failed: {planning_failure(e)}"
            yield Arrival(last, problem=problem)
        if not problem:
            try:
                checked = self._read(self.calls[-1])
                if list(checked.steps) != list(steps.values()):
                    raise PlanError("its steps are not the ones streamed (a second 'steps' list?)")
                self.plan = Plan(checked.steps, checked.roles, calls=self.calls)
            except PlanError as e:
                yield Arrival(self.calls[-1].latency, problem=f"the whole plan: {e}")
        yield Arrival(self.calls[-1].latency if self.calls else last)

    def _check(self, raw: dict[str, Any], before: Mapping[str, Step]) -> Step:
        """One streamed step, checked as `LLMPlanner` checks a plan but against the steps `before`
        it only: a plan of the step and a stand-in for each earlier step it names (so the cost is
        the step's, not the plan's). It may depend only on steps already written."""
        named = raw.get("depends_on") if isinstance(raw.get("depends_on"), list) else []
        named = {*(d for d in named if isinstance(d, str)), *references(raw.get("instruction")),
                 *references(raw.get("args"))}
        stand_ins = [{"id": i, "role": before[i].role, "instruction": "-", "depends_on": []}
                     for i in sorted(named) if i in before]
        plan = Plan.from_dict({"steps": [*stand_ins, raw]}, self.team)
        check_plan(plan, self.team)
        step = plan.steps[-1]
        if step.id in before:
            raise PlanError(f"duplicate step id {step.id!r}: every step needs its own id")
        return step


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
    dependencies are done. Time 0 is when the planner starts writing. Whatever goes wrong
    ends as `orchestrate` ends: a failed Run (or a stopped one, on Ctrl-C) with every call."""
    if clock not in ("virtual", "real"):
        raise ValueError(f"clock must be 'virtual' or 'real', got {clock!r}")
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    run = Run(task, None, workers=workers, clock=clock, writing=(0.0, 0.0))
    loop = _Streamed(run, team, Clock(clock), None, tuple(checks), timeout, planner=planner,
                     stream=planner.stream(task), workers=workers)
    if clock == "real":
        loop.arrived = queue.SimpleQueue()
        threading.Thread(target=loop.read, daemon=True).start()
    return drive(loop, workers, timeout)


@dataclass(eq=False)
class _Streamed(Loop):
    """`run.Loop` with steps that arrive while it runs."""

    planner: StreamingPlanner | None = None
    stream: Iterator[Arrival] | None = None
    workers: int = 1
    arrived: queue.SimpleQueue | None = None
    waiting: Arrival | None = None
    ended_stream: bool = False
    counted: bool = False  # the planner's calls are in the run
    steps: list[Step] = field(default_factory=list)  # the plan so far, as written

    def go(self, pool: Any) -> Run:
        run, self.pool = self.run, pool
        try:
            while True:
                if run.status == "running" and self.scheduler is not None:
                    for step, worker in self.scheduler.take():
                        self.start(step, step, worker)
                if not (self.real_turn() if self.clock.real else self.virtual_turn()):
                    break
        except KeyboardInterrupt:  # a learner's interrupt: stop at once, keep what is done
            self.stop("interrupted (KeyboardInterrupt): the steps still running were abandoned")
        if not self.counted:  # the plan's end never came: count what it cost so far
            run.calls += [("plan", "planner", c) for c in self.planner.calls]
        if not self.steps:  # not one step arrived: a failed run with no plan
            run.trace.add(Event(self.clock.now, "failed", "plan", "planner", (), run.reason))
            return run
        whole = self.planner.plan  # the same steps, checked whole (with the roles and calls)
        run.plan = whole if whole is not None and list(whole.steps) == self.steps else Plan(self.steps)
        run.plans = [run.plan]
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
            self.steps.append(step)
            run.record(now, "planned", step, step.instruction)
            if self.scheduler is None:
                self.scheduler = ListScheduler(Plan([step]), self.workers)
            else:
                self.scheduler.add(step)
        elif arrival.step is None:  # the end of the plan: its writing and its calls
            run.writing = (0.0, now)
            run.calls += [("plan", "planner", c) for c in self.planner.calls]
            self.counted = True
            if self.clock.real:
                self.ended_stream = True

    def stop_with(self, reason: str) -> None:
        if self.run.status == "running":
            self.run.status, self.run.reason = "failed", redact(reason)
            self.run.trace.add(Event(self.clock.read(), "stopped", "run", "-", (), self.run.reason))
