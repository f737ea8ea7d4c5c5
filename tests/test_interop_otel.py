"""A Run as OpenTelemetry spans in the GenAI conventions: the tree, the times, failures and
retries, guard decisions. (The same spans over OTLP/HTTP into a real tracing UI:
tests/test_interop_phoenix.py.)"""

from dataclasses import replace

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentlab.agents import WORLD_ROLES, ToolFunction, world_team
from agentlab.faults import Fault
from agentlab.guardrails import Guard, Policy, guarded_team
from agentlab.interop.otel import LiveTrace, export_runs
from agentlab.llm.simulated import SimulatedLLM
from agentlab.planners import LLMPlanner
from agentlab.recovery import Replan, Retry
from agentlab.run import orchestrate
from agentlab.world import FUNCTIONS, TOOLS
from agentlab.world.tasks import make_tasks

T0 = 1_800_000_000  # where the virtual clock's zero is placed, in epoch seconds


def spans_of(runs, **options):
    exporter = InMemorySpanExporter()
    ids = export_runs(runs, exporter=exporter, start=T0, **options)
    return ids, exporter.get_finished_spans()


def seconds(ns: int) -> float:
    return round(ns / 1e9 - T0, 6)


def a_run(**options):
    llm = SimulatedLLM(seed=0)
    team = world_team(llm)
    task = make_tasks(3, seed=1)[2]
    return orchestrate(task.question, LLMPlanner(llm, team), team, workers=2, **options)


def test_one_trace_per_run_with_the_plan_steps_and_model_calls_as_children():
    run = a_run()
    ids, spans = spans_of([run])
    assert {format(s.context.trace_id, "032x") for s in spans} == set(ids)
    by_id = {s.context.span_id: s for s in spans}
    root = next(s for s in spans if s.parent is None)
    assert root.name == "invoke_workflow planner-executor"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    children = [s for s in spans if s.parent and s.parent.span_id == root.context.span_id]
    operations = [s.attributes["gen_ai.operation.name"] for s in sorted(children, key=lambda s: s.start_time)]
    assert operations[0] == "plan"
    assert len(children) == 1 + len(run.slots)  # the plan, then one span per attempt at a step
    chats = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"]
    assert len(chats) == len(run.calls)
    for chat, (step, _role, call) in zip(sorted(chats, key=lambda s: s.start_time), run.calls, strict=True):
        parent = by_id[chat.parent.span_id]
        expected = "plan" if step == "plan" else parent.attributes["agentlab.step.id"]
        assert (parent.attributes["gen_ai.operation.name"] == "plan") == (expected == "plan")
        assert chat.attributes["gen_ai.usage.input_tokens"] == call.usage.input_tokens
        assert chat.attributes["gen_ai.usage.output_tokens"] == call.usage.output_tokens
        assert chat.attributes["gen_ai.request.model"] == call.model
        assert chat.end_time - chat.start_time == round(call.latency * 1e9)
    # steps sit on the run's virtual clock, after the planning time
    planning = sum(c.latency for s, r, c in run.calls if s == "plan")
    for slot in run.slots:
        span = next(s for s in children if s.attributes.get("agentlab.step.id") == slot.step_id)
        assert seconds(span.start_time) == round(planning + slot.start, 6)
        assert seconds(span.end_time) == round(planning + slot.end, 6)
    assert seconds(root.end_time) == round(run.latency, 6)
    tool_steps = [s for s in children if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert tool_steps
    assert all(s.name == f"execute_tool {s.attributes['gen_ai.tool.name']}" for s in tool_steps)


def test_a_failed_attempt_is_an_error_span_and_the_retry_an_event():
    run = a_run(recovery=[Retry(2)], faults=[Fault(step="s1", times=1)])
    assert run.status == "done" and len(run.failures) == 1
    _, spans = spans_of([run])
    attempts = [s for s in spans if s.attributes.get("agentlab.step.id") == "s1"]
    statuses = [s.status.status_code.name for s in sorted(attempts, key=lambda s: s.start_time)]
    assert statuses == ["ERROR", "UNSET"]
    root = next(s for s in spans if s.parent is None)
    assert [e.name for e in root.events] == ["agentlab.retried"]


def test_guard_decisions_from_the_audit_log_are_events_on_the_step_that_asked():
    llm = SimulatedLLM(seed=0)
    guard = Guard(Policy())
    tools = {name: ToolFunction(TOOLS[name], FUNCTIONS[name]) for name in TOOLS}
    team = guarded_team(llm, guard, WORLD_ROLES, tools)
    task = make_tasks(3, seed=1)[2]
    run = orchestrate(task.question, LLMPlanner(llm, team), team)
    assert len(guard.log) > 0
    _, spans = spans_of([run], audits=[guard.log])
    decision = "agentlab.guard.decision"
    events = [(s.attributes["agentlab.step.id"], e) for s in spans for e in s.events if e.name == decision]
    assert len(events) == len(guard.log)
    assert {step for step, _ in events} == {e.step for e in guard.log}
    assert all(e.attributes["agentlab.guard.decision"] == "allowed" for _, e in events)


def test_a_batch_is_one_trace_per_run():
    llm = SimulatedLLM(seed=0)
    team = world_team(llm)
    runs = [orchestrate(t.question, LLMPlanner(llm, team), team) for t in make_tasks(10, seed=4)]
    ids, spans = spans_of(runs)
    assert len(set(ids)) == 10
    assert len(spans) == sum(2 + len(r.slots) + len(r.calls) for r in runs)


def test_a_replan_is_an_event_and_a_second_plan_span_with_its_model_calls():
    run = a_run(recovery=[Replan()], faults=[Fault(step="s2")])
    assert run.replans == 1 and run.status == "done"
    _, spans = spans_of([run])
    root = next(s for s in spans if s.parent is None)
    assert "agentlab.replanned" in [e.name for e in root.events]
    [replan] = [s for s in spans if s.name == "plan replanner 1"]
    assert replan.attributes["gen_ai.operation.name"] == "plan"
    under = [s for s in spans if s.parent and s.parent.span_id == replan.context.span_id]
    assert len(under) == sum(step == "replan1" for step, _, _ in run.calls) > 0
    event = next(e for e in root.events if e.name == "agentlab.replanned")
    assert replan.start_time == event.timestamp  # the replan's calls start when the run replanned


def test_a_live_trace_sends_each_span_as_its_part_of_the_run_ends():
    llm = SimulatedLLM(seed=0)
    team = world_team(llm)
    task = make_tasks(3, seed=1)[2].question
    exporter = InMemorySpanExporter()
    live = LiveTrace(task, exporter=exporter)
    seen = []  # what had left when each step began

    def watch(agent):
        def act(step, context):
            live.provider.force_flush()  # spans leave on a thread of their own: what had ended by now
            seen.append(len(exporter.get_finished_spans()))
            return agent.act(step, context)

        return replace(agent, act=act)

    watched = {role: watch(agent) for role, agent in live.team(team).items()}
    run = orchestrate(task, live.planner(LLMPlanner(llm, team)), watched, recovery=[Retry(2)],
                      faults=[Fault(step="s1", times=1)])
    assert seen[0] == 2 and seen == sorted(seen) and seen[-1] > seen[0]  # the plan (and its call) first
    live.provider.force_flush()
    before_close = exporter.get_finished_spans()
    assert all(s.parent is not None for s in before_close)  # everything but the root had left
    trace_id = live.close(run)
    spans = exporter.get_finished_spans()
    attempts = len(run.slots) - 1  # the injected fault stops the first attempt before its agent runs
    assert len(spans) == len(before_close) + 1 == 2 + attempts + len(run.calls)
    assert {format(s.context.trace_id, "032x") for s in spans} == {trace_id}
    root = next(s for s in spans if s.parent is None)
    assert [(e.name, e.attributes["agentlab.step.id"]) for e in root.events] == [
        ("agentlab.failed", "s1"), ("agentlab.retried", "s1")
    ]
    faults = [Fault(step="s1", times=1)]
    plain = orchestrate(task, LLMPlanner(llm, team), team, recovery=[Retry(2)], faults=faults)
    assert (plain.outputs, plain.status) == (run.outputs, run.status)  # tracing changes nothing


# --- what reaches the collector: no key, no traceback, no slowdown, no false success -----------------


KEY = "sk-ant-api03-classroom-secret-0123456789"


def echoing_run(monkeypatch):
    """A run whose task, step output, model reply and failure all carry the configured API key."""
    from agentlab.agents import Agent, Work
    from agentlab.llm import Completion, Usage
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    said = Completion(f"the key is {KEY}", "claude-haiku-5-5", "anthropic", Usage(2**63, 5), 0.5)

    def act(step, context):
        if step.id == "s2":
            raise RuntimeError(f"the server said: bad key {KEY}")
        return Work(f"echo {KEY}", calls=(said,))

    plan = Plan([Step("s1", "w", f"use {KEY}"), Step("s2", "w", "fail", depends_on=("s1",))])
    return run_plan(plan, {"w": Agent("w", act)}, f"Task with {KEY}")


def texts(spans):
    """Every text a span carries: name, attributes, events, status."""
    found = []
    for span in spans:
        found += [span.name, span.status.description or ""]
        for attributes in [span.attributes, *(e.attributes for e in span.events)]:
            for value in attributes.values():
                found += [str(v) for v in (value if isinstance(value, tuple | list) else [value])]
    return found


def test_no_span_carries_the_api_key_whatever_echoed_it(monkeypatch):
    run = echoing_run(monkeypatch)
    assert run.status == "failed" and KEY not in str(run)  # the run itself shows "[redacted]"
    _, spans = spans_of([run])
    shown = texts(spans)
    assert not [t for t in shown if KEY in t] and any("[redacted]" in t for t in shown)
    exporter = InMemorySpanExporter()
    live = LiveTrace(f"Task with {KEY}", exporter=exporter)
    from agentlab.agents import Agent

    def act(step, context):
        raise RuntimeError(f"echo {KEY}")

    team = live.team({"w": Agent("w", act)})
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    live.close(run_plan(Plan([Step("s1", "w", "x")]), team, "t"))
    assert not [t for t in texts(exporter.get_finished_spans()) if KEY in t]


def test_a_token_count_past_what_otlp_holds_is_sent_as_text_without_a_traceback(monkeypatch, caplog):
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Encoding(SpanExporter):  # what the OTLP exporter does first with every batch
        def __init__(self):
            self.spans = []

        def export(self, spans):
            encode_spans(spans).SerializeToString()
            self.spans += spans
            return SpanExportResult.SUCCESS

    exporter = Encoding()
    with caplog.at_level("WARNING"):
        export_runs([echoing_run(monkeypatch)], exporter=exporter, start=T0)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text[:500]
    chat = next(s for s in exporter.spans if s.name.startswith("chat"))
    assert chat.attributes["gen_ai.usage.input_tokens"] == str(2**63)


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # free once closed: nothing listens there


def test_with_no_collector_a_live_trace_neither_slows_nor_fails_the_run_and_says_so_at_the_end():
    import time

    import pytest

    from agentlab.agents import Agent
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    endpoint = f"http://127.0.0.1:{closed_port()}/v1/traces"
    plan = Plan([Step(f"s{i}", "w", "x", depends_on=(f"s{i - 1}",) if i > 1 else ()) for i in range(1, 9)])
    live = LiveTrace("t", endpoint)
    began = time.monotonic()
    team = live.team({"w": Agent("w", lambda step, context: "ok")})
    run = run_plan(plan, team, "t", clock="real", timeout=1.0)
    took = time.monotonic() - began
    assert run.status == "done" and took < 1.0  # 8 spans, none waited for (each waited ~10 s before)
    with pytest.raises(ConnectionError, match="nothing is listening"):
        live.close(run)
    began = time.monotonic()
    with pytest.raises(ConnectionError, match="did not reach"):
        export_runs([run], endpoint)  # not trace ids, as if the spans had been sent
    assert time.monotonic() - began < 3
