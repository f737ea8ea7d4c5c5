"""A streamed plan that goes wrong ends as `orchestrate` ends: a Run that keeps the steps already
run and every call paid, whatever broke (the connection, the stream's content, the planner's model,
a Ctrl-C). And a streamed plan costs time in proportion to its steps."""

from __future__ import annotations

import ast
import json
import signal
import threading
import time

import httpx2
import pytest
from fake_api import FakeAPI, claude

import agentlab.plan
import agentlab.streaming as streaming
from agentlab.agents import STUB_TEAM, Agent
from agentlab.llm import Completion, Usage
from agentlab.streaming import StepReader, StreamingPlanner, orchestrate_streaming


def step(i, depends=(), instruction=None):
    return {"id": f"s{i}", "role": "writer", "instruction": instruction or f"Part {i}.",
            "depends_on": list(depends)}


def event(kind, **data):
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def sse(pieces, end=None, usage=None):
    """A Messages API stream (server-sent events) writing `pieces`, then ending as `end` says: a
    clean end (None), an exception the HTTP library raises mid-body, or a line that is not JSON."""
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": "planner-model", "content": [],
             "stop_reason": None, "stop_sequence": None,
             "usage": usage or {"input_tokens": 900, "output_tokens": 1}}

    def body():
        yield event("message_start", message=start)
        yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        for piece in pieces:
            yield event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
        if isinstance(end, BaseException):
            raise end
        if end == "garbled":
            yield b"event: content_block_delta\ndata: {not json\n\n"
        yield event("content_block_stop", index=0)
        yield event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                    usage={"output_tokens": 40})
        yield event("message_stop")

    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())


TWO = json.dumps({"steps": [step(1), step(2, ["s1"])]})
CUT = TWO[: TWO.index('{"id": "s2"') + 8]  # step 1 whole, step 2 begun


@pytest.mark.parametrize("end, said", [
    (httpx2.RemoteProtocolError("peer closed connection without sending complete message body"),
     "RemoteProtocolError"),
    (httpx2.ReadTimeout("timed out"), "ReadTimeout"),  # a stream that stalls past the client's timeout
    ("garbled", "JSONDecodeError"),
])
def test_a_stream_that_breaks_off_is_a_failed_run_keeping_the_step_run_and_the_call_paid(end, said):
    planner = StreamingPlanner(claude(FakeAPI(sse([CUT[:20], CUT[20:]], end))), STUB_TEAM)
    run = orchestrate_streaming("Write a report.", planner, STUB_TEAM)
    assert run.status == "failed" and "planning failed" in run.reason and said in run.reason
    assert run.step_status == {"s1": "done"} and run.outputs["s1"]
    assert [(s, r) for s, r, _ in run.calls] == [("plan", "planner")]
    assert run.calls[0][2].usage.input_tokens == 900  # billed when the stream started: counted


def test_a_streamed_reply_whose_usage_is_refused_is_a_failed_run_not_a_traceback():
    usage = {"input_tokens": -5, "output_tokens": 1}
    planner = StreamingPlanner(claude(FakeAPI(sse([TWO], usage=usage))), STUB_TEAM)
    run = orchestrate_streaming("Write a report.", planner, STUB_TEAM)
    assert run.status == "failed" and "planning failed" in run.reason
    assert set(run.outputs) <= {"s1", "s2"}  # what ran is kept


class Broken:
    backend = "broken"

    def __init__(self, answer):
        self.answer = answer

    def complete(self, **request):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("answer, said", [(RuntimeError("the model's server fell over"), "RuntimeError"),
                                          ("just a string", "str")])
def test_a_planner_model_that_raises_or_returns_no_completion_is_a_failed_run(answer, said):
    run = orchestrate_streaming("Write a report.", StreamingPlanner(Broken(answer), STUB_TEAM), STUB_TEAM)
    assert run.status == "failed" and run.reason.startswith("planning failed") and said in run.reason
    assert run.plan is None and run.calls == []


def test_only_elements_of_the_steps_array_are_steps():
    text = json.dumps({"steps": [step(1)], "note": step(2), "more": [step(3)]})
    reader = StepReader()
    found = [s for i in range(0, len(text), 7) for s in reader.feed(text[i:i + 7])]
    assert found == [step(1)]
    late = json.dumps({"note": {"steps": [step(9)]}, "steps": [step(1, instruction='say "steps": [')]})
    reader = StepReader()
    assert [s for c in late for s in reader.feed(c)] == [step(1, instruction='say "steps": [')]


class Scripted:
    backend = "scripted"

    def __init__(self, text):
        self.text = text

    def complete(self, **request):
        return Completion(self.text, "scripted", "scripted", Usage(100, 50), 2.0, None, (), "end_turn")


def test_a_plan_with_a_step_after_the_steps_array_never_runs_that_step():
    text = json.dumps({"steps": [step(1)], "note": step(2)})
    run = orchestrate_streaming("Write a report.", StreamingPlanner(Scripted(text), STUB_TEAM), STUB_TEAM)
    assert run.status == "failed" and "s2" not in run.outputs and list(run.outputs) == ["s1"]


def test_a_streamed_plan_is_checked_in_time_proportional_to_its_steps(monkeypatch):
    checked = []  # the steps each plan validation looked at
    validate = agentlab.plan._validate
    monkeypatch.setattr(agentlab.plan, "_validate", lambda steps, roles: checked.append(len(steps))
                        or validate(steps, roles))
    n = 300
    text = json.dumps({"steps": [step(i, [f"s{i - 1}"] if i > 1 else []) for i in range(1, n + 1)]})
    run = orchestrate_streaming("Write a report.", StreamingPlanner(Scripted(text), STUB_TEAM), STUB_TEAM)
    assert run.status == "done" and len(run.outputs) == n
    assert sum(checked) <= 10 * n, f"{sum(checked):,} step checks for {n} steps"  # was about n^2


def test_the_streamed_loop_uses_no_private_name_of_run_py():
    tree = ast.parse(open(streaming.__file__).read())
    taken = [a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and node.module == "agentlab.run" for a in node.names]
    assert taken and not [name for name in taken if name.startswith("_")], taken


@pytest.mark.parametrize("clock, workers", [("virtual", 1), ("virtual", 4), ("real", 4)])
def test_ctrl_c_during_a_streamed_run_returns_a_stopped_run_at_once_keeping_what_is_done(clock, workers):
    import _thread

    started = threading.Event()

    def act(step, context):
        if step.id == "s2":
            started.set()
            time.sleep(4 if workers > 1 else 0.5)  # one worker: the step runs on the interrupted thread
        return f"done {step.id}"

    team = {"writer": Agent("writer", act)}
    text = json.dumps({"steps": [step(1), step(2, ["s1"]), step(3, ["s2"])]})
    threading.Thread(target=lambda: started.wait(10) and (time.sleep(0.2), _thread.interrupt_main()),
                     daemon=True).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores SIGINT
    began = time.monotonic()
    try:
        run = orchestrate_streaming("Write.", StreamingPlanner(Scripted(text), team), team, clock=clock,
                                    workers=workers)
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped orchestrate_streaming, and the run with it")
    finally:
        signal.signal(signal.SIGINT, previous)
    if workers > 1:
        assert time.monotonic() - began < 3  # not after the running step's 4 s
    assert run.status == "stopped" and run.reason.startswith("interrupted")
    assert run.outputs == {"s1": "done s1"} and run.step_status["s3"] == "skipped"
    assert [(s, r) for s, r, _ in run.calls] == [("plan", "planner")]
