"""Streaming: `agentlab serve` sends the Messages API's server-sent events and the real SDK's
`messages.stream` reads them into the very message the non-streaming call returns."""

from __future__ import annotations

import json
import random
import time

import anthropic
import pytest

from agentlab import world
from agentlab.agents import STUB_TEAM, WORLD_ROLES, world_team
from agentlab.llm import Completion, SimulatedLLM, Usage
from agentlab.llm.anthropic import AnthropicLLM, api_schema
from agentlab.llm.serve import start_server
from agentlab.planners import LLMPlanner, plan_schema, planner_prompt
from agentlab.run import orchestrate
from agentlab.streaming import StepReader, StreamingPlanner, orchestrate_streaming
from agentlab.world.tools import TOOLS

TASK = world.sample_tasks()[1]


pytestmark = pytest.mark.usefixtures("local_without_proxy")  # conftest.py: 127.0.0.1 past any proxy


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
    # 1 modelled second = 250 ms: the stream then takes about a second, so that a worker starved
    # of CPU for a fifth of a second by a loaded machine (seen at 100 ms a second: 0.71 s against
    # 0.48) stays within the tolerance, which an unpaced or doubly paced stream does not
    pace = 0.25
    with start_server(pace=pace) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        client.messages.create(**request)  # the SDK's first-call setup is not the model's writing
        with client.messages.stream(**request) as stream:
            seen = [(time.perf_counter(), event.type) for event in stream]
            final = stream.get_final_message()
    deltas = [t for t, kind in seen if kind == "content_block_delta"]
    # sim-large: 1.2 s before the first token, then 40 tokens a second; timed from the first token,
    # so the wait before the reply starts (and any load on the machine) does not enter the figure
    writing = final.usage.output_tokens / 40 * pace
    assert len(deltas) > 3
    assert deltas[-1] - deltas[0] == pytest.approx(writing, rel=0.35)


# --- the streaming planner and the loop ---------------------------------------------------------


def test_the_step_reader_cuts_out_each_step_once_whatever_the_pieces_and_braces_in_strings():
    steps = [{"id": "s1", "role": "writer", "instruction": 'Say "{hi}" and [bye]', "depends_on": []},
             {"id": "s2", "role": "writer", "instruction": "Then \\ this}", "depends_on": ["s1"]}]
    text = json.dumps({"steps": steps})
    for size in (1, 2, 3, 7, 16, len(text)):  # the text arrives in pieces of `size` characters
        reader, found = StepReader(), []
        for begin in range(0, len(text), size):
            found += reader.feed(text[begin : begin + size])
        assert found == steps


@pytest.mark.parametrize("width", [2, 4, 8])
def test_a_streamed_run_starts_its_first_step_before_the_plans_last_token_with_the_same_outputs(width):
    llm = SimulatedLLM(seed=0)
    team = world_team(llm, tool_seconds=1.0)
    task = world.fanout_task(random.Random(width), width, "total", f"w{width}")
    whole = orchestrate(task.question, LLMPlanner(llm, team), team, workers=16)
    streamed = orchestrate_streaming(task.question, StreamingPlanner(llm, team), team, workers=16)
    assert streamed.status == whole.status == "done"
    assert streamed.plan == whole.plan and streamed.outputs == whole.outputs
    assert streamed.deliverable == whole.deliverable and task.check(streamed.deliverable)
    first = min(slot.start for slot in streamed.slots)
    assert 0 < first < streamed.writing[1] == whole.calls[0][2].latency  # before the plan's last token
    assert streamed.latency < whole.latency
    assert [c for c in streamed.calls if c[0] == "plan"] == [c for c in whole.calls if c[0] == "plan"]
    planned = [e.time for e in streamed.trace.of_kind("planned")]
    assert planned == sorted(planned) and planned[0] < planned[-1]  # each step as it was written


class Scripted:
    """A model that writes one fixed reply, in 2 seconds, all at once."""

    backend = "scripted"

    def __init__(self, text, stop="end_turn"):
        self.text, self.stop = text, stop

    def complete(self, **request):
        return Completion(self.text, "scripted", "scripted", Usage(100, 50), 2.0, None, (), self.stop)


def step(i, role="writer", depends=()):
    return {"id": f"s{i}", "role": role, "instruction": f"Part {i}.", "depends_on": list(depends)}


def test_a_step_that_fails_its_check_stops_the_run_keeping_what_ran_and_the_planners_call():
    text = json.dumps({"steps": [step(1), step(2, "poet", ["s1"]), step(3, depends=["s2"])]})
    run = orchestrate_streaming("Write a report.", StreamingPlanner(Scripted(text), STUB_TEAM), STUB_TEAM)
    assert run.status == "failed" and "step 2 of the streamed plan" in run.reason and "poet" in run.reason
    assert run.step_status["s1"] == "done" and "s2" not in run.step_status  # s1 ran; s2 never joined
    assert [(s, r, c.usage) for s, r, c in run.calls] == [("plan", "planner", Usage(100, 50))]


def test_a_plan_that_turns_out_invalid_as_a_whole_stops_the_run_with_the_reason_and_every_call():
    text = json.dumps({"steps": [step(1), step(2, depends=["s1"])]})[:-30]  # cut off in step 2
    planner = StreamingPlanner(Scripted(text, stop="max_tokens"), STUB_TEAM)
    run = orchestrate_streaming("Write a report.", planner, STUB_TEAM, workers=2)
    assert run.status == "failed" and "the whole plan" in run.reason and "max_tokens" in run.reason
    assert run.step_status == {"s1": "done"} and run.outputs["s1"]
    assert len(run.calls) == 1 and run.calls[0][:2] == ("plan", "planner")
    with pytest.raises(Exception, match="cut off"):
        StreamingPlanner(Scripted(text, stop="max_tokens"), STUB_TEAM)("Write a report.")


@pytest.mark.parametrize("width, pace", [(2, 0.05), (4, 0.05)])
def test_a_streamed_run_on_the_real_clock_against_serve_starts_before_the_plan_ends(width, pace):
    with start_server(pace=pace) as server:
        llm = AnthropicLLM(base_url=server.url, api_key="test", max_retries=0)  # opus plans, haiku does
        team = world_team(llm)
        task = world.fanout_task(random.Random(width), width, "total", f"w{width}")
        streamed = orchestrate_streaming(task.question, StreamingPlanner(llm, team), team, clock="real")
        whole = orchestrate(task.question, LLMPlanner(llm, team), team, workers=16)
    assert streamed.status == whole.status == "done" and streamed.outputs == whole.outputs
    assert len(streamed.outputs) == len(streamed.plan)  # every step ran, the last ones too
    assert min(slot.start for slot in streamed.slots) < streamed.writing[1]
    first, again = streamed.calls[0][2].usage, whole.calls[0][2].usage  # one plan call, streamed then not
    assert (first.prompt_tokens, first.output_tokens) == (again.prompt_tokens, again.output_tokens)
    assert again.cache_read_tokens == first.cache_read_tokens + first.cache_write_tokens  # serve remembers


def test_the_timeline_of_a_streamed_run_has_the_plans_writing_as_its_own_row_with_steps_under_it():
    import matplotlib

    matplotlib.use("Agg")
    from agentlab.viz import draw_timeline

    llm = SimulatedLLM(seed=0)
    team = world_team(llm, tool_seconds=1.0)
    task = world.fanout_task(random.Random(4), 4, "total", "w4")
    run = orchestrate_streaming(task.question, StreamingPlanner(llm, team), team)
    ax = draw_timeline(run, by="step")
    writing = next(p for p in ax.patches if p.get_gid() == "plan-writing")
    assert writing.get_x() == 0 and writing.get_width() == pytest.approx(run.writing[1])
    assert [t.get_text() for t in ax.get_yticklabels()][:2] == ["plan (writing)", run.plan.ids[0]]
    first = next(p for p in ax.patches if p.get_gid() == run.plan.ids[0])
    assert first.get_x() < writing.get_width()  # the first step starts under the writing


def test_on_the_real_clock_steps_still_waiting_when_the_plan_has_ended_all_run():
    # A model that answers at once: the whole plan, and its end, arrive before any step starts.
    text = json.dumps({"steps": [step(1), step(2, depends=["s1"]), step(3, depends=["s2"])]})
    run = orchestrate_streaming("Write a report.", StreamingPlanner(Scripted(text), STUB_TEAM), STUB_TEAM,
                                clock="real")
    assert run.status == "done" and list(run.outputs) == ["s1", "s2", "s3"]
