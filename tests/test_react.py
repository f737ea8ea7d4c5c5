"""The ReAct baseline: one loop, the whole history in every call, one tool at a time, bounded,
and a record of every turn whose numbers add up."""

import random
from itertools import pairwise

import pytest

from agentlab import world
from agentlab.llm import ModelError, SimulatedLLM, usage_report
from agentlab.llm.base import Completion, ToolCall, Usage
from agentlab.react import ONE_AT_A_TIME, REACT_SYSTEM, react, world_tools


class Recording:
    """Passes calls to the simulator and keeps each request's messages (copied)."""

    backend = "simulated"

    def __init__(self, llm):
        self.llm, self.sent = llm, []

    def complete(self, **request):
        self.sent.append([dict(m) for m in request["messages"]])
        return self.llm.complete(**request)


def chain(hops, seed=0):
    return world.chain_task(random.Random(seed), hops)


def test_it_answers_a_chain_with_one_lookup_per_turn_then_the_answer():
    task = chain(4)
    run = react(task.question, SimulatedLLM())
    assert run.status == "done" and task.check(run.answer)
    assert len(run.turns) == 5  # four lookups, one answer
    assert [len(t.actions) for t in run.turns] == [1, 1, 1, 1, 0]
    assert all(t.actions[0].tool == "lookup" and t.actions[0].ok for t in run.turns[:-1])
    assert run.turns[-1].thought == run.answer


def test_every_call_re_sends_the_whole_history_so_each_reads_more_than_the_last():
    llm = Recording(SimulatedLLM())
    run = react(chain(5).question, llm)
    sent = llm.sent
    assert [len(m) for m in sent] == [1, 3, 5, 7, 9, 11]  # the question, then 2 messages a turn
    for earlier, later in pairwise(sent):
        assert later[: len(earlier)] == earlier  # nothing is dropped or summarised
    inputs = [t.input_tokens for t in run.turns]
    assert all(b > a for a, b in pairwise(inputs))
    assert run.messages[: len(sent[-1])] == sent[-1] and run.messages[-1]["role"] == "assistant"


def test_one_tool_at_a_time_is_classic_react_and_parallel_tool_use_takes_fewer_turns():
    task = world.fanout_task(random.Random(1), 4, "total")
    one = react(task.question, SimulatedLLM())
    together = react(task.question, SimulatedLLM(), one_tool_at_a_time=False)
    assert ONE_AT_A_TIME.startswith("Call one tool at a time")
    assert [len(t.actions) for t in one.turns] == [1, 1, 1, 1, 1, 0]  # four lookups, a sum, the answer
    assert [len(t.actions) for t in together.turns] == [4, 1, 0]
    assert task.check(one.answer) and task.check(together.answer)
    assert sum(t.input_tokens for t in together.turns) < sum(t.input_tokens for t in one.turns)


def test_the_time_is_each_calls_latency_plus_each_tool_call_and_the_calls_roll_up():
    run = react(chain(3).question, SimulatedLLM(), tool_seconds=2.0)
    latencies = sum(t.completion.latency for t in run.turns)
    assert run.elapsed == pytest.approx(latencies + 2.0 * 3)
    assert run.elapsed == pytest.approx(sum(t.seconds for t in run.turns))
    report = usage_report(run)
    assert report.total.calls == len(run.turns) == len(run.calls)
    assert report.total.usage == sum((t.completion.usage for t in run.turns), Usage())
    assert set(report.by_role) == {"agent"}


def test_max_steps_stops_the_loop_and_says_so_keeping_the_calls_made():
    run = react(chain(6).question, SimulatedLLM(), max_steps=3, tool_seconds=1.0)
    assert run.status == "stopped" and run.stopped_by == "max_steps" and run.answer is None
    assert run.reason == "stopped by max_steps=3: no final answer after 3 model calls"
    assert len(run.calls) == 3
    assert run.turns[-1].actions[0].observation is None  # called, but never read
    assert run.elapsed == pytest.approx(sum(t.completion.latency for t in run.turns) + 3 * 1.0)
    assert "stopped" in run.summary() and "(not read: the loop stopped)" in str(run)


def test_max_tokens_stops_the_loop_when_a_reply_is_cut_off():
    run = react(chain(2).question, SimulatedLLM(), max_tokens=5)
    assert run.status == "stopped" and run.stopped_by == "max_tokens"
    assert "max_tokens=5" in run.reason and len(run.calls) == 1


def test_a_tool_error_goes_back_to_the_agent_which_corrects_itself():
    llm = SimulatedLLM(seed=2, error_rate=0.5, error_kinds=["wrong_tool_argument"])
    runs = [react(chain(3, seed).question, llm) for seed in range(10)]
    failed = [a for run in runs for t in run.turns for a in t.actions if not a.ok]
    assert failed, "some lookup should have been misspelt at this error rate"
    assert all(a.observation.startswith("ToolError: ") for a in failed)
    assert sum(run.status == "done" for run in runs) >= 8


class Failing:
    """Answers once with a tool call, then the API fails."""

    backend = "scripted"

    def __init__(self):
        self.calls = 0

    def complete(self, **request):
        self.calls += 1
        if self.calls > 1:
            raise ModelError("overloaded (529)")
        call = ToolCall("t1", "lookup", {"entity": "Varra", "attribute": "area"})
        return Completion("Looking.", "m", "scripted", Usage(10, 3), 0.5, None, (call,), "tool_use")


def test_an_api_error_ends_the_run_as_failed_with_the_calls_so_far():
    run = react("What is the area of Varra?", Failing())
    assert run.status == "failed" and run.reason == "ModelError: overloaded (529)"
    assert len(run.calls) == 1 and run.elapsed == pytest.approx(0.5 + 0.1)  # one call, one tool call


def test_bad_input_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="the task must be a non-empty string"):
        react("  ", SimulatedLLM())
    with pytest.raises(ValueError, match="max_steps must be a whole number >= 1, got 0"):
        react("What is the area of Varra?", SimulatedLLM(), max_steps=0)


def test_it_uses_the_worlds_three_tools_and_says_it_is_one_agent():
    assert [t.name for t in world_tools()] == ["lookup", "search", "calculate"]
    assert all(t.seconds == 0.5 for t in world_tools(0.5))
    assert "never answer from memory" in REACT_SYSTEM.lower()


def test_the_record_prints_and_renders_every_turn():
    run = react(chain(2).question, SimulatedLLM())
    text, page = str(run), run._repr_html_()
    assert text.count("turn ") == 3 and "lookup(" in text and f"Answer: {run.answer}" in text
    assert page.count("<tr>") == 3 + 1 and "agentlab-react" in page


def test_a_lookup_with_pages_returns_the_fact_then_its_page_and_the_agent_reads_the_fact():
    paged = {t.name: t for t in world_tools(page_tokens=300)}
    result = paged["lookup"]({"entity": "Varra", "attribute": "population"})
    fact, page = result.split("\n\nSource page:\n")
    assert fact == world.lookup("Varra", "population") and page.startswith("Varra (island): population")
    assert len(page) == 4 * 300  # about 300 tokens of records
    task = chain(4, seed=7)
    plain, heavy = (
        react(task.question, SimulatedLLM()),
        react(task.question, SimulatedLLM(), tools=paged.values()),
    )
    assert heavy.answer == plain.answer == task.answer
    growth = [b.input_tokens - a.input_tokens for a, b in pairwise(heavy.turns)]
    assert all(g >= 300 for g in growth)  # every page stays in the one context
    with pytest.raises(ValueError, match="page_tokens must be a whole number >= 0"):
        world_tools(page_tokens=-5)
