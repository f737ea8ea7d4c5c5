"""`agentlab gateway` for a whole class: a learner's session recorded and replayed offline with the
same outputs (and no key in any recorded file), a stream cut cleanly when it would pass the budget,
and a class-wide daily budget. Over real HTTP, with the real `anthropic` SDK as the learners' client
and `agentlab serve` as the upstream. (Notebook 03 run end to end through the gateway, its spend in
the ledger, is in tests/test_notebooks_claude.py: that file's one run of 03 on the Claude path goes
through a gateway.)"""

from __future__ import annotations

import json
import pickle
import socket
import time

import anthropic
import pytest
from test_gateway import (
    HELLO,
    KEY,
    LOCAL,
    gateway,
    learner,
    ledger,
    lines,
    rows,
    upstream,
)

from agentlab import world
from agentlab.agents import world_team
from agentlab.course.cli import main
from agentlab.gateway.server import GatewayServer
from agentlab.gateway.store import Call, utc_day
from agentlab.gateway.upstream import Upstream
from agentlab.llm.anthropic import AnthropicLLM
from agentlab.llm.base import ModelError, Usage
from agentlab.llm.replay import ReplayLLM
from agentlab.llm.usage import cost, usage_report
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate

__all__ = ["gateway", "ledger", "lines", "upstream"]  # the fixtures, shared
pytestmark = pytest.mark.usefixtures("local_without_proxy")  # conftest.py: 127.0.0.1 past any proxy


def solve(llm, task: int = 1):
    team = world_team(llm)
    return orchestrate(world.sample_tasks()[task].question, LLMPlanner(llm, team), team)


# --- recordings ----------------------------------------------------------------------------------


def test_a_learners_session_through_the_gateway_replays_offline_with_the_same_outputs(
    gateway, ledger, upstream, tmp_path, capsys, monkeypatch
):
    token = ledger.add_learner("learner-01", dollars_per_day=2.0)
    llm = AnthropicLLM(base_url=gateway.url, api_key=token, max_retries=0)
    runs = [solve(llm, task) for task in (1, 2)]
    assert [run.status for run in runs] == ["done", "done"], [run.reason for run in runs]
    with learner(gateway, token).messages.stream(**HELLO) as stream:  # a raw SDK stream: recorded too
        stream.get_final_message()
    direct = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0).messages.with_raw_response
    whole = direct.create(**HELLO).http_response.json()  # the message that stream assembles to
    folder = tmp_path / "replays"
    assert main(["gateway", "recordings", "export", "learner-01", str(folder), "--db", ledger.path]) == 0
    said = capsys.readouterr().out
    calls = sum(usage_report(run).total.calls for run in runs) + 1
    assert calls == 5
    assert f"wrote {calls} call(s) of learner-01 to {folder / 'learner-01.jsonl'}" in said
    assert f"AGENTLAB_REPLAY={folder / 'learner-01.jsonl'}" in said
    recorded = [json.loads(line) for line in (folder / "learner-01.jsonl").read_text().splitlines()]
    assert len(recorded) == calls and recorded[-1]["message"] == whole
    assert all(not one["cut"] and one["request"]["model"].startswith("claude-") for one in recorded)
    later = ["gateway", "recordings", "export", "learner-01", str(tmp_path / "later"), "--db", ledger.path]
    assert main([*later, "--since", "2999-01-01"]) == 0  # one run of a lab: the calls in a window
    assert "wrote 0 call(s)" in capsys.readouterr().out
    assert main([*later, "--since", "2000-01-01T00:00", "--until", "2999-01-01T00:00+00:00"]) == 0
    assert f"wrote {calls} call(s)" in capsys.readouterr().out
    assert main([*later, "--until", "tomorrow"]) == 2
    assert "--until 'tomorrow': write a UTC time like 2026-11-30T14:00" in capsys.readouterr().err

    gateway.stop(), upstream.stop()

    def offline(*args):
        raise OSError("the network is off: a replay must need none")

    monkeypatch.setattr(socket.socket, "connect", offline)  # from here on, no connection can open
    replay = ReplayLLM(folder / "learner-01.jsonl")
    replayed = [solve(replay, task) for task in (1, 2)]
    assert [r.outputs for r in replayed] == [r.outputs for r in runs]
    assert [r.status for r in replayed] == ["done", "done"]
    assert [usage_report(r).total.cost for r in replayed] == pytest.approx(
        [usage_report(r).total.cost for r in runs]
    )
    assert replay.recorded_from == {"anthropic"}
    monkeypatch.setenv("AGENTLAB_PLANNER_MODEL", "claude-elsewhere-1")  # the replayer's own settings:
    monkeypatch.setenv("AGENTLAB_EXECUTOR_MODEL", "claude-elsewhere-2")  # the recording's models win
    again = pickle.loads(pickle.dumps(ReplayLLM(folder / "learner-01.jsonl")))  # as to a Dask worker
    assert solve(again, 1).outputs == runs[0].outputs
    marked = [{**recorded[0], "cut": "budget reached mid-stream: ..."}, *recorded[1:]]
    (folder / "cut.jsonl").write_text("".join(json.dumps(one) + "\n" for one in marked))
    cut = solve(ReplayLLM(folder / "cut.jsonl"), 1)  # its first call (the plan) was cut when recorded
    assert (
        cut.status == "failed" and "cut short when it was recorded (budget reached mid-stream" in cut.reason
    )
    with pytest.raises(
        ModelError, match=r"not in the recording .*learner-01.jsonl \(5 calls recorded\): model="
    ):
        replay.complete(system="x", messages=[{"role": "user", "content": "never asked"}])


def test_a_streamed_tool_call_is_recorded_as_the_message_it_streams(gateway, ledger, upstream):
    """The recording assembles a stream as the SDK does: a tool call's JSON pieces become its input."""
    from test_serve import RESEARCHER, TOOL_SPECS

    ask = {**HELLO, "max_tokens": 500, "system": RESEARCHER, "tools": TOOL_SPECS}
    ask["messages"] = [{"role": "user", "content": "What is the capital of Kelloway?"}]
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    with learner(gateway, token).messages.stream(**ask) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "tool_use"
    direct = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0).messages.with_raw_response
    (kept,) = ledger.exchanges("ada")
    assert json.loads(kept.message) == direct.create(**ask).http_response.json()
    assert json.loads(kept.request) == {**ask, "stream": True} and not kept.cut


def test_no_key_and_no_token_is_in_any_recorded_file_even_one_a_learner_pasted(gateway, ledger, tmp_path):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    other = ledger.add_learner("bo", dollars_per_day=2.0)
    pasted = {"role": "user", "content": f"my keys: {KEY} and {token} and {other}, x-api-key: {KEY}"}
    learner(gateway, token).messages.create(**{**HELLO, "messages": [pasted]})
    with learner(gateway, token).messages.stream(**{**HELLO, "messages": [pasted]}) as stream:
        stream.get_final_message()
    assert main(["gateway", "recordings", "export", "ada", str(tmp_path / "out"), "--db", ledger.path]) == 0
    ledger.close()
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()).decode("latin-1")
    assert "my keys: [redacted] and [redacted] and [redacted]" in written
    for secret in (KEY, token, other):
        assert secret not in written


def test_a_recording_of_a_learner_nobody_has_is_one_line(ledger, tmp_path, capsys):
    assert main(["gateway", "recordings", "export", "nobody", str(tmp_path), "--db", ledger.path]) == 2
    assert (
        capsys.readouterr().err
        == "error: no learner named 'nobody' (`agentlab gateway learner list` lists them)\n"
    )


# --- a stream cut by the budget ------------------------------------------------------------------


def test_a_stream_that_would_pass_the_budget_ends_with_an_api_error_and_is_charged_what_it_delivered(
    ledger, upstream, tmp_path
):
    probe = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0).messages.create(**HELLO)
    model, asked = probe.model, Usage(probe.usage.input_tokens, 0)
    assert probe.usage.output_tokens > 8  # long enough to be cut after its first piece
    budget = cost(model, Usage(asked.input_tokens, 6))  # the input and 6 output tokens: 4 fit, 8 do not
    token = ledger.add_learner("ada", dollars_per_day=budget, concurrent=1)
    with GatewayServer(ledger, Upstream(upstream.url, KEY, timeout=5)) as gateway:
        client, pieces = learner(gateway, token), []
        with pytest.raises(anthropic.APIStatusError, match="budget reached mid-stream") as e:
            with client.messages.stream(**HELLO) as stream:
                for event in stream:
                    pieces += [event.delta.text] if event.type == "content_block_delta" else []
        assert e.value.body["error"]["type"] == "rate_limit_error"
        assert (
            "the daily budget of ada had $" in e.value.message
            and "cut after 4 output tokens" in e.value.message
        )
        assert "".join(pieces) == probe.content[0].text[:16]  # the one piece that fitted, delivered
        deadline = time.monotonic() + 10
        while gateway.gate.running(ledger.find(token)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gateway.gate.running(ledger.find(token)) == 0  # the slot is free again
    row = rows(ledger)["ada"]
    assert (row["calls"], row["input_tokens"], row["output_tokens"]) == (1, asked.input_tokens, 4)
    assert (
        row["dollars"] == pytest.approx(cost(model, Usage(asked.input_tokens, 4)))
        and row["dollars"] <= budget
    )
    (cut,) = ledger.exchanges("ada")
    assert cut.cut.startswith("budget reached mid-stream")  # the recording is marked
    assert json.loads(cut.message)["content"] == [{"type": "text", "text": probe.content[0].text[:16]}]
    assert main(["gateway", "recordings", "export", "ada", str(tmp_path), "--db", ledger.path]) == 0
    assert json.loads((tmp_path / "ada.jsonl").read_text())["cut"] == cut.cut


# --- the class's budget --------------------------------------------------------------------------


def test_a_class_budget_refuses_everyone_once_the_class_has_spent_it_naming_the_class_limit(
    gateway, ledger, upstream, capsys
):
    db = ledger.path
    assert main(["gateway", "budget", "--db", db]) == 0
    assert "the class has no budget of its own" in capsys.readouterr().out
    assert main(["gateway", "budget", "5/day", "--db", db]) == 0
    assert (
        capsys.readouterr().out
        == "the class's budget: $5.00/day, all learners together (resets at 00:00 UTC)\n"
    )
    assert main(["gateway", "budget", "lots", "--db", db]) == 2
    assert (
        "budget 'lots': write the class's dollars per day, like 40/day (or none)" in capsys.readouterr().err
    )
    ada, bo = (ledger.add_learner(name, dollars_per_day=None) for name in ("ada", "bo"))
    learner(gateway, bo).messages.create(**HELLO)  # well within the class's budget
    ledger.record(Call(ledger.find(ada).id, "claude-opus-5-5", "ok", 200, Usage(10**6, 10**5), 5.0))
    with pytest.raises(anthropic.RateLimitError) as e:  # bo has no limit of their own: the class's stops them
        learner(gateway, bo).messages.create(**HELLO)
    said = e.value.body["error"]["message"]
    assert (
        said.startswith("class budget reached: the class has spent $5.0")
        and "of its $5.00/day, $0.00 left" in said
    )
    assert "it resets at 00:00 UTC (in " in said and e.value.response.headers["x-should-retry"] == "false"
    assert int(e.value.response.headers["retry-after"]) <= 86_400
    assert upstream.counts["requests"] == 1  # refused before it was forwarded
    report = ledger.report()
    assert report[-1]["learner"] == "(class)" and report[-1]["budget_per_day"] == 5.0
    assert report[-1]["dollars_today"] == pytest.approx(sum(r["dollars_today"] for r in report[:-1]))
    assert report[-1]["dollars_today"] > 5
    assert main(["gateway", "budget", "none", "--db", db]) == 0
    learner(gateway, bo).messages.create(**HELLO)  # no class budget: bo goes on


def test_the_dashboard_shows_the_class_total_against_the_class_budget(ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    ledger.set_class_budget(1.5)
    with GatewayServer(ledger, Upstream(upstream.url, KEY), dashboard_token="board") as gateway:
        learner(gateway, token).messages.create(**HELLO)
        spent = ledger.spent_by_class(utc_day(time.time()))
        with LOCAL.open(f"{gateway.url}/dashboard?token=board", timeout=10) as response:
            shown = response.read().decode()
    assert f"Against the class&#x27;s budget of $1.50/day: ${1.5 - spent:.4f} left." in shown
    assert "<td>(class)</td><td>(all)</td>" in shown
