"""Record a model's calls once, replay them offline: same answers, clear misses, no secrets."""

import json
from dataclasses import replace

import httpx2
import pytest

from agentlab import world
from agentlab.llm import (
    AnthropicLLM,
    Completion,
    ModelError,
    SimulatedLLM,
    Tool,
    ToolCall,
    Usage,
    assistant_message,
    tool_results_message,
)
from agentlab.llm.replay import RecordingLLM, ReplayLLM, request_key, request_of

LOOKUP = Tool("lookup", "Look up an entity.", {"type": "object", "properties": {"name": {"type": "string"}}})
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


class CountingLLM:
    """A stand-in model whose answers change from call to call, so a replay that re-asked
    it (instead of reading the file) would be caught."""

    backend = "counting"

    def __init__(self):
        self.calls = 0

    def complete(self, *, system, messages, tools=(), schema=None, model=None, max_tokens=1024):
        self.calls += 1
        calls = (ToolCall(f"t{self.calls}", "lookup", {"name": "Osk"}),) if tools else ()
        data = {"answer": f"answer {self.calls}"} if schema else None
        return Completion(
            f"reply {self.calls}",
            model or "count-1",
            self.backend,
            Usage(10 * self.calls, 3),
            0.5,
            data,
            calls,
        )


def ask(llm, text, **kwargs):
    return llm.complete(system="You help.", messages=[{"role": "user", "content": text}], **kwargs)


def test_a_replay_gives_back_exactly_what_was_recorded(tmp_path):
    path = tmp_path / "class.jsonl"
    recorder = RecordingLLM(CountingLLM(), path)
    live = [
        ask(recorder, "plan it", schema=SCHEMA, model="m-large"),
        ask(recorder, "look it up", tools=[LOOKUP]),
        ask(recorder, "write it", max_tokens=200),
    ]
    assert recorder.backend == "counting" and len(path.read_text().splitlines()) == 3

    replay = ReplayLLM(path)
    again = [
        ask(replay, "write it", max_tokens=200),  # order does not matter: requests are found by content
        ask(replay, "plan it", schema=SCHEMA, model="m-large"),
        ask(replay, "look it up", tools=[LOOKUP]),
    ]
    assert [again[1], again[2], again[0]] == [replace(c, backend="replay of counting") for c in live]
    assert replay.backend == "replay" and len(replay) == 3 and replay.recorded_from == {"counting"}


def test_a_simulated_tool_loop_replays_identically(tmp_path):
    """The instructor's workflow on the simulator: record a whole tool-use loop, replay it."""
    path = tmp_path / "sim.jsonl"

    def solve(llm):
        tools = [world.TOOLS[name] for name in ("lookup", "search", "calculate")]
        history, completions = (
            [{"role": "user", "content": "What is the age of the mentor of Wren Tally?"}],
            [],
        )
        for _ in range(8):
            completion = llm.complete(system="Answer with your tools.", messages=history, tools=tools)
            completions.append(completion)
            if not completion.tool_calls:
                return completions
            results = {c.id: world.FUNCTIONS[c.name](**c.args) for c in completion.tool_calls}
            history += [assistant_message(completion), tool_results_message(results)]
        raise AssertionError("the loop did not finish")

    live = solve(RecordingLLM(SimulatedLLM(seed=7), path))
    assert len(live) >= 2 and live[-1].tool_calls == ()  # it used tools, then answered
    replayed = solve(ReplayLLM(path))
    assert replayed == [replace(c, backend="replay of simulated") for c in live]


def test_a_repeated_request_gets_the_first_recorded_answer_every_time(tmp_path):
    path = tmp_path / "rec.jsonl"
    recorder = RecordingLLM(CountingLLM(), path)
    ask(recorder, "same")
    ask(recorder, "same")
    replay = ReplayLLM(path)
    assert [ask(replay, "same").text for _ in range(3)] == ["reply 1", "reply 1", "reply 1"]
    assert len(replay) == 2  # both calls are in the recording


def test_a_request_not_in_the_recording_is_a_clear_error_naming_it(tmp_path):
    path = tmp_path / "rec.jsonl"
    ask(RecordingLLM(CountingLLM(), path), "plan it")
    replay = ReplayLLM(path)
    with pytest.raises(ModelError) as caught:
        ask(replay, "plan something else entirely", tools=[LOOKUP])
    message = str(caught.value)
    assert f"not in the recording {path} (1 calls recorded)" in message
    assert "system='You help.'" in message and "last user message='plan something else entirely'" in message
    assert "tools=lookup" in message
    with pytest.raises(ModelError, match="not in the recording"):
        ask(replay, "plan it", max_tokens=99)  # any difference that could change the answer is a miss


def test_the_key_is_stable_and_sensitive_to_every_field():
    base = request_of("sys", [{"role": "user", "content": "hi"}], [LOOKUP], SCHEMA, None, 1024)
    assert request_key(base) == request_key(json.loads(json.dumps(base)))  # survives a round trip
    # Pinned: a change to the key scheme would orphan every recording already made.
    assert request_key(base) == "e953cd36209f2ccd55bc071e"
    for field, other in [
        ("system", "sys2"),
        ("model", "x"),
        ("max_tokens", 1),
        ("schema", None),
        ("tools", []),
    ]:
        assert request_key({**base, field: other}) != request_key(base), field


def test_no_key_or_auth_header_ends_up_in_the_recording(tmp_path, monkeypatch):
    secret = "sk-ant-api03-THIS-IS-A-SECRET-KEY-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)

    def api(request):
        assert request.headers["authorization"] == f"Bearer {secret}"  # the key did go to the server
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-haiku-5-5",
            "content": [{"type": "text", "text": "Osk"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 2},
        }
        return httpx2.Response(200, json=body)

    http = httpx2.Client(transport=httpx2.MockTransport(api))
    claude = AnthropicLLM(base_url="http://test.local", http_client=http, max_retries=0)
    path = tmp_path / "claude.jsonl"
    ask(RecordingLLM(claude, path), "capital of Veldra?")
    ask(RecordingLLM(CountingLLM(), path), f"my key is {secret}, keep it safe")  # even if a prompt leaks one

    text = path.read_text()
    assert secret not in text and "Bearer" not in text and "authorization" not in text.lower()
    assert "[redacted]" in text
    assert ask(ReplayLLM(path), "capital of Veldra?").text == "Osk"


def test_a_damaged_recording_or_a_missing_file_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no recording at"):
        ReplayLLM(tmp_path / "nothing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "abc"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 1: not a recorded call"):
        ReplayLLM(bad)


@pytest.mark.parametrize(
    "count, field",
    [(-5, "input_tokens"), (10**30, "input_tokens"), ("7", "output_tokens"), (True, "cache_read_tokens")],
)
def test_a_recording_whose_usage_no_real_reply_carries_is_refused_naming_the_field(tmp_path, count, field):
    path = tmp_path / "calls.jsonl"
    recorder = RecordingLLM(SimulatedLLM(seed=0), path)
    recorder.complete(system="s", messages=[{"role": "user", "content": "What is the population of Varra?"}])
    entry = json.loads(path.read_text())
    entry["completion"]["usage"][field] = count
    path.write_text(json.dumps(entry) + "\n")
    with pytest.raises(ValueError, match=rf"calls.jsonl, line 1: not a recorded call .*usage.{field}"):
        ReplayLLM(path)


def test_identical_requests_in_parallel_steps_replay_the_same_way_every_time(tmp_path):
    """Two parallel steps that send the same request must not get the answers in whatever order
    their threads happen to arrive: a replay is the same run every time, at any number of workers."""
    import random
    import time

    from agentlab.agents import Agent, tool_loop
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    def writer(llm, jitter):
        def act(step, context):
            time.sleep(jitter.uniform(0, 0.002))  # real work takes a little longer one time than the next
            return tool_loop(llm, "You write.", step.instruction)

        return {"writer": Agent("writer", act)}

    plan = Plan([Step(s, "writer", "Name a colour.") for s in "ab"])  # the same request, twice at once
    path = tmp_path / "parallel.jsonl"
    run_plan(plan, writer(RecordingLLM(CountingLLM(), path), random.Random(0)))  # "reply 1", "reply 2"
    jitter = random.Random(1)
    runs = [run_plan(plan, writer(ReplayLLM(path), jitter), workers=8) for _ in range(40)]
    assert len({tuple(sorted(run.outputs.items())) for run in runs}) == 1


def test_text_utf8_cannot_hold_is_recorded_and_replayed_and_the_call_kept(tmp_path):
    """A lone surrogate (a filename read with surrogateescape, say) used to raise
    UnicodeEncodeError from the recorder after the call was paid: the call was lost."""
    path = tmp_path / "calls.jsonl"
    name = b"report-\xff.txt".decode("utf-8", "surrogateescape")  # '\udcff' inside
    recorder = RecordingLLM(CountingLLM(), path)
    said = ask(recorder, f"Summarise {name}")
    assert said.text == "reply 1"
    assert ask(ReplayLLM(path), f"Summarise {name}") == replace(said, backend="replay of counting")
    path.read_bytes().decode("utf-8")  # the file is UTF-8 text all the same


def test_a_recorder_that_cannot_write_raises_a_model_error_that_keeps_the_paid_call(tmp_path):
    recorder = RecordingLLM(CountingLLM(), tmp_path / "no such folder" / "calls.jsonl")
    with pytest.raises(ModelError, match="could not record the call") as raised:
        ask(recorder, "hello")
    assert [c.text for c in raised.value.calls] == ["reply 1"]  # paid, so counted
