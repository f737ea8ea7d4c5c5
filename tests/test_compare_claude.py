"""The comparison harness on Claude, offline: the real `anthropic` SDK sends every request to an
`httpx2.MockTransport` that plays the Messages API, so the test sees what the harness really
sends and checks that it reports the usage the API returned, call by call."""

import json
import re

import httpx2
import pytest

from agentlab import world
from agentlab.compare import Setup, compare
from agentlab.llm import AnthropicLLM, cost, make_llm, usage_report

PLANNER, EXECUTOR = "claude-opus-5-5", "claude-haiku-5-5"
QUESTION = re.compile(r"What is the (.+?) of (.+?)\?")
TASKS = [world.Task("t1", "single", "What is the population of Varra?", "2140", 1)]


pytestmark = pytest.mark.usefixtures("no_network")  # the SDK must never reach a real server


class FakeClaude:
    """Plays the API for single-lookup questions: a two-step plan when asked for JSON, a transfer
    to the first specialist when offered transfer tools, a lookup when it has tools and no result
    yet, the result once it has one, and a report of a handed result. Usage grows with the
    messages sent, so every call's numbers differ."""

    def __init__(self):
        self.bodies = []

    def __call__(self, request):
        body = json.loads(request.content)
        if isinstance(body.get("system"), list):  # a system prompt marked for caching: its text
            body["system"] = "\n".join(block["text"] for block in body["system"])
        self.bodies.append(body)
        messages = body["messages"]
        first = messages[0]["content"]
        results = [
            b["content"]
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        transfers = [t["name"] for t in body.get("tools", []) if t["name"].startswith("transfer_to_")]
        if "output_config" in body and "format" in body["output_config"]:
            content = [{"type": "text", "text": json.dumps(self.plan(first, body["system"]))}]
        elif transfers:
            call = {"note": "a population figure"}
            content = [
                {"type": "tool_use", "id": f"toolu_{len(self.bodies)}", "name": transfers[0], "input": call}
            ]
        elif body.get("tools") and not results:
            attribute, entity = QUESTION.search(first).groups()
            call = {"entity": entity, "attribute": attribute}
            content = [
                {"type": "tool_use", "id": f"toolu_{len(self.bodies)}", "name": "lookup", "input": call}
            ]
        elif results:
            content = [{"type": "text", "text": results[-1]}]
        elif world.RESULT_TO_REPORT in first:
            handed = first.split(world.RESULT_TO_REPORT)[1].splitlines()[0]
            content = [{"type": "text", "text": handed.strip(" .")}]
        else:
            content = [{"type": "text", "text": "I don't know that archipelago."}]
        usage = {"input_tokens": 100 * len(messages) + 7 * len(body.get("tools", [])), "output_tokens": 11}
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.bodies)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            },
        )

    @staticmethod
    def plan(request, system):
        question = request.removeprefix("Task: ")
        attribute, entity = QUESTION.search(question).groups()
        report = f"Report the answer to the task: {question} {world.RESULT_TO_REPORT} $s1."
        if "- lead: leads a sub-team" in system:  # a manager: the one lookup is one part, for a sub-team
            part = {"id": "s1", "role": "lead", "instruction": question, "depends_on": []}
            writer = {"id": "s2", "role": "writer", "instruction": report, "depends_on": ["s1"]}
            return {"steps": [part, writer]}
        return {
            "steps": [
                {
                    "id": "s1",
                    "role": "researcher",
                    "instruction": question,
                    "depends_on": [],
                    "tool": "lookup",
                    "args": {"entity": entity, "attribute": attribute},
                },
                {"id": "s2", "role": "writer", "instruction": report, "depends_on": ["s1"]},
            ]
        }


def claude(api):
    return make_llm(
        "anthropic",
        env={},
        planner_model=PLANNER,
        executor_model=EXECUTOR,
        api_key="sk-test",
        base_url="http://test.local",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(api)),
    )


def test_the_harness_runs_every_topology_on_claude_and_reports_the_apis_usage():
    api = FakeClaude()
    llm = claude(api)
    assert isinstance(llm, AnthropicLLM)
    comparison = compare(TASKS, Setup(llm, tool_seconds=0.0))
    for r in comparison.rows():
        outcome = comparison.outcomes[r.topology][0]
        calls = [c for _, _, c in outcome.calls]
        assert all(c.backend == "anthropic" and c.model == PLANNER for c in calls)  # "sim-large": strong
        assert r.usage.input_tokens == sum(c.usage.input_tokens for c in calls)
        assert r.cost == pytest.approx(sum(cost(PLANNER, c.usage) for c in calls)) and r.cost > 0
    assert [r.accuracy for r in comparison.rows()] == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    total = sum(len(o.calls) for runs in comparison.outcomes.values() for o in runs)
    assert total == len(api.bodies) == 1 + 2 + 2 + 2 + 4 + 3  # ...; at two levels; triage + specialist


def test_react_on_claude_re_sends_the_history_and_its_usage_is_the_apis():
    api = FakeClaude()
    comparison = compare(TASKS, Setup(claude(api), agent_model="sim-small"), ["react"])
    first, second = api.bodies
    assert first["model"] == second["model"] == EXECUTOR  # "sim-small": the cheap tier
    assert len(first["messages"]) == 1 and second["messages"][:1] == first["messages"]
    assert [b["type"] for b in second["messages"][2]["content"]] == ["tool_result"]
    assert "one tool at a time" in second["system"]
    outcome = comparison.outcomes["react"][0]
    assert outcome.answer == "2140" and outcome.right
    assert [c.usage.input_tokens for _, _, c in outcome.calls] == [100 + 21, 300 + 21]  # three tools' specs
    report = usage_report(outcome.calls)
    assert report.total.usage.input_tokens == 442 and report.by_model[EXECUTOR].calls == 2


def test_a_strong_planner_and_cheap_executors_on_claude_are_priced_apart():
    api = FakeClaude()
    setup = Setup(claude(api), planner_model="sim-large", executor_model="sim-small")
    outcome = compare(TASKS, setup, ["plan-execute"]).outcomes["plan-execute"][0]
    models = {role: c.model for _, role, c in outcome.calls}
    assert models == {"planner": PLANNER, "writer": EXECUTOR}
    report = usage_report(outcome.calls)
    assert report.by_model[PLANNER].cost > report.by_model[EXECUTOR].cost  # same usage, dearer model
    assert report.total.cost == pytest.approx(compare(TASKS, setup, ["plan-execute"])["plan-execute"].cost)
    outcome = compare(TASKS, setup, ["hierarchical"]).outcomes["hierarchical"][0]
    models = {role: c.model for _, role, c in outcome.calls}
    assert models == {"manager": PLANNER, "lead": PLANNER, "writer": EXECUTOR}  # strong plans at both levels


def test_a_handoff_on_claude_offers_transfer_tools_and_forwards_the_users_request():
    api = FakeClaude()
    outcome = compare(TASKS, Setup(claude(api), agent_model="sim-small"), ["handoff"]).outcomes["handoff"][0]
    triage, first, second = api.bodies
    assert [t["name"] for t in triage["tools"]] == ["transfer_to_researcher", "transfer_to_analyst"]
    assert triage["tools"][0]["input_schema"]["required"] == ["note"]
    assert "- researcher: follows chains of facts" in triage["system"]
    assert first["messages"] == [
        {
            "role": "user",
            "content": f"The user's request: {TASKS[0].question}\n\n"
            "Note from the triage agent: a population figure",
        }
    ]
    assert [t["name"] for t in first["tools"]] == ["lookup", "search"] and "You are the researcher" in first[
        "system"
    ]
    assert all(b["model"] == EXECUTOR for b in api.bodies)
    assert outcome.right and [agent for _, agent, _ in outcome.calls] == [
        "triage",
        "researcher",
        "researcher",
    ]
    (transfer,) = outcome.run.transfers
    assert (transfer.source, transfer.target, transfer.note) == (
        "triage",
        "researcher",
        "a population figure",
    )
