"""Streaming: `agentlab serve` sends the Messages API's server-sent events and the real SDK's
`messages.stream` reads them into the very message the non-streaming call returns."""

from __future__ import annotations

import os
import time

import anthropic
import pytest

from agentlab import world
from agentlab.agents import WORLD_ROLES, world_team
from agentlab.llm import SimulatedLLM
from agentlab.llm.anthropic import api_schema
from agentlab.llm.serve import start_server
from agentlab.planners import plan_schema, planner_prompt
from agentlab.world.tools import TOOLS

TASK = world.sample_tasks()[1]


@pytest.fixture(autouse=True)
def local_without_proxy(monkeypatch):
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, ",".join(filter(None, ("127.0.0.1", os.environ.get(name)))))


def requests():
    """A plan request (structured output) and an executor's first turn (tools)."""
    team = world_team(SimulatedLLM())
    plan = {
        "model": "claude-opus-5-5",
        "max_tokens": 2048,
        "system": planner_prompt(team),
        "messages": [{"role": "user", "content": f"Task: {TASK.question}"}],
        "output_config": {"format": {"type": "json_schema", "schema": api_schema(plan_schema(team))}},
    }
    tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
             for t in (TOOLS["lookup"], TOOLS["search"])]
    turn = {
        "model": "claude-haiku-5-5",
        "max_tokens": 512,
        "system": WORLD_ROLES["researcher"][2],
        "tools": tools,
        "messages": [{"role": "user", "content": TASK.question}],
    }
    return {"plan": plan, "tool turn": turn}


@pytest.mark.parametrize("kind", ["plan", "tool turn"])
def test_the_sdks_stream_against_serve_returns_the_same_message_as_the_non_streaming_call(kind):
    request = requests()[kind]
    with start_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        whole = client.messages.create(**request)
        with client.messages.stream(**request) as stream:
            kinds = [event.type for event in stream]
            streamed = stream.get_final_message()
    assert streamed.model_dump(exclude_none=True) == whole.model_dump(exclude_none=True)
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert "content_block_start" in kinds and "content_block_delta" in kinds and "message_delta" in kinds
    assert (kind == "tool turn") == any(b.type == "tool_use" for b in whole.content)


def test_a_paced_stream_arrives_at_the_models_writing_speed():
    request = requests()["plan"]
    with start_server(pace=0.02) as server:  # 1 modelled second = 20 ms
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        began = time.perf_counter()
        with client.messages.stream(**request) as stream:
            seen = [(time.perf_counter() - began, event.type) for event in stream]
            final = stream.get_final_message()
    first_text = next(t for t, kind in seen if kind == "content_block_delta")
    # sim-large: 1.2 s before the first token, then 40 tokens a second
    modelled = 1.2 + final.usage.output_tokens / 40
    assert first_text < 0.5 * seen[-1][0]
    assert seen[-1][0] == pytest.approx(modelled * 0.02, rel=0.5, abs=0.15)
