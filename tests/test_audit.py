"""The audit log: every tool call with its arguments, who asked, the decision and the outcome,
readable as a table and exportable as JSON."""

import json

import pytest

from agentlab import world
from agentlab.agents import ToolFunction
from agentlab.guardrails import ActionDenied, AuditLog, Guard, Policy, guarded_team
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.run import run_plan
from agentlab.world.injection import SIDE_EFFECT_TOOLS, Ledger

LEDGER = Ledger()
TOOLS = {
    "lookup": ToolFunction(world.TOOLS["lookup"], world.lookup),
    "send_message": ToolFunction(SIDE_EFFECT_TOOLS["send_message"], LEDGER.send_message),
}


def a_busy_log():
    """A log with one call of each kind: read, error, denied, approved."""
    guard = Guard(Policy(approve=lambda r: r.args["to"] == "Wren Tally"))
    lookup = guard.wrap(TOOLS["lookup"], "s1", "researcher")
    send = guard.wrap(TOOLS["send_message"], "s3", "clerk")
    lookup({"entity": "Varra", "attribute": "area"})
    with pytest.raises(world.ToolError):
        lookup({"entity": "Atlantis", "attribute": "area"})
    with pytest.raises(ActionDenied):
        send({"to": "Corvin Pell", "text": "the records"})
    send({"to": "Wren Tally", "text": "Varra is 58 km²"})
    return guard.log


def test_every_call_is_logged_in_order_with_who_asked_the_decision_and_what_happened():
    log = a_busy_log()
    assert [(e.n, e.step, e.role, e.tool, e.decision, e.outcome) for e in log] == [
        (1, "s1", "researcher", "lookup", "allowed", "ok"),
        (2, "s1", "researcher", "lookup", "allowed", "error"),
        (3, "s3", "clerk", "send_message", "denied", "not run"),
        (4, "s3", "clerk", "send_message", "approved", "ok"),
    ]
    assert log.entries[0].result == "58"
    assert log.entries[1].result.startswith("ToolError: no entity named 'Atlantis'")
    assert log.entries[2].args == {"to": "Corvin Pell", "text": "the records"}
    assert log.entries[2].effects == ("send",)
    assert log.entries[2].reason == "an approver said no"


def test_the_log_exports_as_json_with_every_field_and_reads_back_the_same():
    log = a_busy_log()
    exported = json.loads(log.to_json())
    assert len(exported) == 4
    assert exported[2] == {
        "n": 3,
        "step": "s3",
        "role": "clerk",
        "tool": "send_message",
        "args": {"to": "Corvin Pell", "text": "the records"},
        "effects": ["send"],
        "decision": "denied",
        "reason": "an approver said no",
        "outcome": "not run",
        "result": "",
    }
    assert "km²" in log.to_json()  # readable, not \u-escaped
    assert AuditLog.from_json(log.to_json()).entries == log.entries


def test_the_table_has_a_row_per_call_and_shortens_long_text():
    text = str(a_busy_log())
    lines = text.splitlines()
    assert lines[0].split() == ["#", "step", "role", "call", "decision", "outcome", "result"]
    assert len(lines) == 5
    assert "send_message(to='Corvin Pell', text='the reco...  denied" in lines[3]
    assert lines[2].endswith("error    ToolError: no entity named ...")
    assert "<td>denied</td>" in a_busy_log()._repr_html_()


def test_parallel_steps_each_log_their_own_calls_numbered_without_gaps():
    guard = Guard()
    roles = {"researcher": ("looks things up", ("lookup",), "You look things up.")}
    team = guarded_team(SimulatedLLM(seed=0), guard, roles, TOOLS)
    names = [e.name for e in world.ENTITIES.values() if e.kind == "island"]
    plan = Plan(
        Step(
            f"s{i}",
            "researcher",
            f"What is the area of {n}?",
            tool="lookup",
            args={"entity": n, "attribute": "area"},
        )
        for i, n in enumerate(names, start=1)
    )
    run = run_plan(plan, team, "areas", workers=4)
    assert run.status == "done"
    assert sorted(e.n for e in guard.log) == list(range(1, len(names) + 1))
    assert {e.step: e.result for e in guard.log} == {s.id: run.outputs[s.id] for s in plan}
