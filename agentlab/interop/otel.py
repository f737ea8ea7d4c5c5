"""A `Run` as OpenTelemetry spans, named as the GenAI semantic conventions say, sent over OTLP/HTTP.

One trace per run. Its root span is the whole run (`invoke_workflow`); under it the plan
(`plan`, the conventions' planning/task-decomposition operation) with the planner's model
calls (`chat`) under it, then one span per attempt at a step: `execute_tool {tool}` for a
direct tool step, `invoke_agent {role}` for a step an agent did, each with its model calls
(`chat`) as children, laid one after another from the attempt's start. Spans sit on the run's
own times: a virtual-clock run on its virtual seconds, counted from `start` (default: now).

A failed attempt has status ERROR and its reason; recovery (retried, rerouted, replanned,
stopped, resumed) is an event on the root span at the moment it happened; each replan's model
calls are a second `plan` span. Guard decisions from an `AuditLog` are events on the span of
the step that asked. Token usage goes in `gen_ai.usage.*`; the conventions have no cost
attribute, so the price in USD is `agentlab.cost_usd`. Phoenix-style `openinference.*` and
`input.value`/`output.value` attributes are added so that UI shows kinds and text too.

    from agentlab.interop.otel import export_runs
    export_runs([run], "http://127.0.0.1:6006/v1/traces")

`LiveTrace` sends the spans while a run is going on instead, on the wall clock: it wraps the
planner and each agent of the team, and each span leaves as soon as its part is done.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from agentlab.interop import require

require("opentelemetry.sdk", "trace")
require("opentelemetry.exporter.otlp.proto.http", "trace")

from opentelemetry import trace as otel  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, Status, StatusCode  # noqa: E402

from agentlab.agents import Agent  # noqa: E402
from agentlab.interop.otel_send import Sender  # noqa: E402
from agentlab.llm.usage import PRICES, cost  # noqa: E402
from agentlab.trace import Run  # noqa: E402

RECOVERY = ("retried", "rerouted", "replanned", "stopped", "resumed")
PROVIDERS = {"anthropic": "anthropic"}  # the kit's backend -> gen_ai.provider.name; others keep their own


def export_runs(
    runs: Iterable[Run],
    endpoint: str = "http://127.0.0.1:6006/v1/traces",
    *,
    audits: Sequence[Any] | None = None,
    service: str = "agentlab",
    project: str = "agentlab",
    start: float | None = None,
    exporter: SpanExporter | None = None,
    timeout: float = 10.0,
) -> list[str]:
    """Send each run as one trace to the OTLP/HTTP `endpoint` (or to `exporter`); returns the
    trace ids (hex). `audits[i]` is run i's `AuditLog` (or None); `start` the epoch seconds its
    clock's zero is placed at (default: now). `project` names the Phoenix project."""
    runs = list(runs)
    sender = Sender(exporter, endpoint, timeout)
    resource = Resource.create({"service.name": service, "openinference.project.name": project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(sender, max_queue_size=1 << 16))
    tracer = provider.get_tracer("agentlab.interop.otel")
    t0 = time.time() if start is None else start
    audits = list(audits) if audits is not None else [None] * len(runs)
    ids = [trace_run(run, tracer, audit=audit, start=t0) for run, audit in zip(runs, audits, strict=True)]
    try:
        if not provider.force_flush(timeout_millis=int(timeout * 1000)):
            raise TimeoutError(f"the spans did not reach {sender.where} within {timeout:g} s")
    finally:
        provider.shutdown()
    sender.check()
    return ids


def trace_run(run: Run, tracer: otel.Tracer, *, audit: Any = None, start: float | None = None) -> str:
    """Write `run` as spans with `tracer`; returns its trace id (hex). See the module docstring."""
    base = _ns(time.time() if start is None else start)

    def ns(seconds: float) -> int:  # a time on the run's clock, in epoch nanoseconds
        return base + _ns(seconds)

    planning = [c for step, role, c in run.calls if (step, role) == ("plan", "planner")]
    steps_at = sum(c.latency for c in planning)  # the steps' clock starts when the plan is written
    end = steps_at + run.elapsed
    root = tracer.start_span(
        "invoke_workflow planner-executor",
        kind=SpanKind.INTERNAL,
        start_time=ns(0),
        attributes={
            "gen_ai.operation.name": "invoke_workflow",
            "openinference.span.kind": "CHAIN",
            "input.value": run.task,
            "output.value": str(run.deliverable),
            "agentlab.status": run.status,
            "agentlab.clock": run.clock,
            "agentlab.workers": run.workers,
            "agentlab.steps": len(run.plan) if run.plan else 0,
        },
    )
    parent = otel.set_span_in_context(root)
    plan_end = _plan_span(tracer, ns, parent, "planner", planning, 0.0, run.plan)
    for i in range(1, run.replans + 1):
        calls = [c for step, _role, c in run.calls if step == f"replan{i}"]
        at = [e.time for e in run.trace if e.kind == "replanned"]
        when = steps_at + (at[i - 1] if i - 1 < len(at) else run.elapsed)
        new_plan = run.plans[i] if i < len(run.plans) else None
        end = max(end, _plan_span(tracer, ns, parent, f"replanner {i}", calls, when, new_plan))
    for event in run.trace:
        if event.kind in RECOVERY:
            root.add_event(
                f"agentlab.{event.kind}",
                {"agentlab.step.id": event.step_id, "agentlab.detail": event.detail},
                timestamp=ns(steps_at + event.time),
            )
    _step_spans(run, tracer, ns, parent, steps_at, _guard_entries(audit))
    if run.status != "done":
        root.set_status(Status(StatusCode.ERROR, run.reason or run.status))
    root.end(end_time=ns(max(end, plan_end)))
    return format(root.get_span_context().trace_id, "032x")


def _plan_span(tracer, ns, parent, who: str, calls: list, at: float, plan) -> float:
    """A `plan` span from `at` holding the model calls that wrote a plan; returns its end."""
    span = tracer.start_span(
        f"plan {who}",
        context=parent,
        start_time=ns(at),
        attributes={
            "gen_ai.operation.name": "plan",
            "gen_ai.agent.name": who,
            "openinference.span.kind": "CHAIN",
            "output.value": plan.to_json() if plan is not None and hasattr(plan, "to_json") else str(plan),
        },
    )
    end = _chat_spans(tracer, ns, otel.set_span_in_context(span), calls, at)
    span.end(end_time=ns(end))
    return end


def _step_spans(run: Run, tracer, ns, parent, offset: float, guard: dict[str, list]) -> None:
    """One span per attempt (per `Slot`), its model calls under it, its failure as its status."""
    steps = {s.id: s for plan in (run.plans or ([run.plan] if run.plan else [])) for s in plan}
    failed = {}  # (step id, end time) -> the failure's message, from the trace
    for event in run.trace.of_kind("failed"):
        failed[(event.step_id, round(event.time, 6))] = event.detail
    calls = {}
    for step_id, _role, c in run.calls:
        calls.setdefault(step_id, []).append(c)
    slots = sorted(run.slots, key=lambda s: (s.start, s.step_id))
    last = {slot.step_id: slot for slot in slots}
    for slot in slots:
        step = steps.get(slot.step_id)
        role = step.role if step else "?"
        tool = step.tool if step else None
        name = f"execute_tool {tool}" if tool else f"invoke_agent {role}"
        attributes = {
            "gen_ai.operation.name": "execute_tool" if tool else "invoke_agent",
            "openinference.span.kind": "TOOL" if tool else "AGENT",
            "agentlab.step.id": slot.step_id,
            "agentlab.worker": slot.worker,
            "agentlab.depends_on": list(step.depends_on) if step else [],
            "input.value": (json.dumps(dict(step.args)) if tool else step.instruction) if step else "",
        }
        if tool:
            attributes["gen_ai.tool.name"] = tool
        else:
            attributes["gen_ai.agent.name"] = role
        at = ns(offset + slot.start)
        span = tracer.start_span(name, context=parent, start_time=at, attributes=attributes)
        mine = _take(calls.get(slot.step_id, []), slot.end - slot.start, slot is last[slot.step_id])
        _chat_spans(tracer, ns, otel.set_span_in_context(span), mine, offset + slot.start)
        reason = failed.get((slot.step_id, round(slot.end, 6)))
        if reason is not None:
            span.set_status(Status(StatusCode.ERROR, reason))
            span.add_event("agentlab.failed", {"agentlab.detail": reason}, timestamp=ns(offset + slot.end))
        elif slot.step_id in run.outputs:
            span.set_attribute("output.value", run.outputs[slot.step_id])
        if slot is last[slot.step_id]:
            for entry in guard.get(slot.step_id, []):
                span.add_event("agentlab.guard.decision", _entry(entry), timestamp=ns(offset + slot.start))
        span.end(end_time=ns(offset + slot.end))


def _take(calls: list, seconds: float, everything: bool) -> list:
    """The calls one attempt made: those (in order) whose latencies fit in its `seconds`; the
    last attempt at a step takes whatever is left."""
    taken, used = [], 0.0
    while calls and (everything or used + calls[0].latency <= seconds + 1e-9):
        used += calls[0].latency
        taken.append(calls.pop(0))
    return taken


def _chat_spans(tracer, ns, parent, calls: list, at: float) -> float:
    """One `chat` span per model call, one after another from `at`; returns when the last ends."""
    for c in calls:
        provider = PROVIDERS.get(c.backend, c.backend)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": c.model,
            "gen_ai.response.model": c.model,
            "gen_ai.response.finish_reasons": [c.stop_reason],
            "gen_ai.usage.input_tokens": c.usage.input_tokens,
            "gen_ai.usage.output_tokens": c.usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": c.usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": c.usage.cache_write_tokens,
            "openinference.span.kind": "LLM",
            "llm.model_name": c.model,
            "llm.token_count.prompt": c.usage.input_tokens,
            "llm.token_count.completion": c.usage.output_tokens,
            "output.value": c.text,
        }
        if c.model in PRICES:
            attributes["agentlab.cost_usd"] = cost(c.model, c.usage)
        if c.tool_calls:
            attributes["agentlab.tool_calls"] = [call.name for call in c.tool_calls]
        span = tracer.start_span(f"chat {c.model}", context=parent, kind=SpanKind.CLIENT, start_time=ns(at))
        span.set_attributes(attributes)
        at += c.latency
        span.end(end_time=ns(at))
    return at


class LiveTrace:
    """One run's trace, sent span by span as the run goes (wall-clock times):

        live = LiveTrace(task, "http://127.0.0.1:6006/v1/traces")
        run = orchestrate(task, live.planner(planner), live.team(team))
        live.close(run)

    The root span opens now; a `plan` span is sent when the planner returns, an `execute_tool`
    or `invoke_agent` span (with its `chat` spans) when each agent returns, one that raised with
    status ERROR; `close` adds the failures and recovery events (an attempt can fail before its
    agent runs: an injected fault, a timeout) and the run's status, and ends the root."""

    def __init__(self, task: str, endpoint: str = "http://127.0.0.1:6006/v1/traces", *,
                 exporter: SpanExporter | None = None, service: str = "agentlab", project: str = "agentlab",
                 timeout: float = 10.0):
        resource = Resource.create({"service.name": service, "openinference.project.name": project})
        self.provider, self.timeout = TracerProvider(resource=resource), timeout
        self.sender = Sender(exporter, endpoint, timeout)  # on a thread of its own, never the step's:
        self.sending = BatchSpanProcessor(self.sender, schedule_delay_millis=50)  # a span leaves when it ends
        self.provider.add_span_processor(self.sending)
        self.tracer = self.provider.get_tracer("agentlab.interop.otel")
        self.start = time.time()
        attributes = {"gen_ai.operation.name": "invoke_workflow", "openinference.span.kind": "CHAIN",
                      "input.value": task}
        self.root = self.tracer.start_span("invoke_workflow planner-executor", attributes=attributes)
        self.parent = otel.set_span_in_context(self.root)

    def _ns(self, seconds: float) -> int:  # seconds since this trace began -> epoch nanoseconds
        return _ns(self.start) + _ns(seconds)

    def planner(self, planner):
        """`planner`, with a `plan` span (and its model calls) sent when it returns."""

        def plan(task: str):
            began = time.time() - self.start
            result = planner(task)
            calls = list(getattr(result, "calls", ()))
            _plan_span(self.tracer, self._ns, self.parent, "planner", calls, began, result)
            return result

        return plan

    def team(self, team: Mapping[str, Agent]) -> dict[str, Agent]:
        """The same agents, each attempt at a step sent as a span when it ends."""
        return {role: replace(agent, act=self._traced(agent)) for role, agent in team.items()}

    def _traced(self, agent: Agent):
        def act(step, context):
            began = time.time() - self.start
            tool = step.tool
            attributes = {
                "gen_ai.operation.name": "execute_tool" if tool else "invoke_agent",
                "openinference.span.kind": "TOOL" if tool else "AGENT",
                "agentlab.step.id": step.id,
                ("gen_ai.tool.name" if tool else "gen_ai.agent.name"): tool or agent.role,
            }
            name = f"execute_tool {tool}" if tool else f"invoke_agent {agent.role}"
            span = self.tracer.start_span(name, context=self.parent, start_time=self._ns(began),
                                          attributes=attributes)
            try:
                result = agent.act(step, context)
            except Exception as error:
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
                span.end()
                raise
            calls = list(getattr(result, "calls", ()))
            _chat_spans(self.tracer, self._ns, otel.set_span_in_context(span), calls, began)
            span.set_attribute("output.value", getattr(result, "output", result))
            span.end()
            return result

        return act

    def close(self, run: Run) -> str:
        """Add the run's recovery events and status, end the root span, flush; returns the trace id."""
        for event in run.trace:  # failures too: an attempt can fail before its agent runs (a fault)
            if event.kind in RECOVERY or event.kind == "failed":
                attributes = {"agentlab.step.id": event.step_id, "agentlab.detail": event.detail}
                self.root.add_event(f"agentlab.{event.kind}", attributes)
        self.root.set_attribute("agentlab.status", run.status)
        self.root.set_attribute("output.value", str(run.deliverable))
        if run.status != "done":
            self.root.set_status(Status(StatusCode.ERROR, run.reason or run.status))
        self.root.end()
        self.sending.force_flush(timeout_millis=int(self.timeout * 1000))  # what is left, within the limit
        self.provider.shutdown()
        self.sender.check()
        return format(self.root.get_span_context().trace_id, "032x")


def _guard_entries(audit: Any) -> dict[str, list]:
    by_step: dict[str, list] = {}
    for entry in audit or ():
        by_step.setdefault(entry.step, []).append(entry)
    return by_step


def _entry(entry: Any) -> dict[str, Any]:
    return {
        "agentlab.guard.tool": entry.tool,
        "agentlab.guard.args": json.dumps(dict(entry.args), ensure_ascii=False),
        "agentlab.guard.effects": list(entry.effects),
        "agentlab.guard.decision": entry.decision,
        "agentlab.guard.reason": entry.reason,
        "agentlab.guard.outcome": entry.outcome,
        "agentlab.guard.role": entry.role,
    }


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))

