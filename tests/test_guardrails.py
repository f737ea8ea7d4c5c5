"""Permissions and approvals: declared effects, the policy's decision, the approval callback,
and the promise a learner relies on most: a denied action never runs."""

import subprocess
import sys

import pytest

from agentlab import world
from agentlab.agents import ToolFunction, tool_loop
from agentlab.guardrails import (
    UNDECLARED,
    ActionDenied,
    ApprovalPanel,
    Guard,
    Policy,
    Request,
    guarded_team,
)
from agentlab.llm.base import Completion, Tool, ToolCall, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.run import run_plan

FIRE_SPEC = Tool(
    "fire",
    "Fire the harbour cannon at a target.",
    {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]},
)
LOOKUP = ToolFunction(world.TOOLS["lookup"], world.lookup)


def cannon():
    """A tool whose function writes down every time it really runs."""
    fired = []

    def fire(target):
        fired.append(target)
        return f"fired at {target}"

    return ToolFunction(FIRE_SPEC, fire), fired


EFFECTS = {"lookup": (), "fire": ("launch",)}


def request(tool="fire", effects=("launch",), **args):
    return Request(tool, args or {"target": "Gull Rock"}, effects, "s1", "gunner")


# --- the policy ---------------------------------------------------------------------------------


def test_reading_is_always_allowed_and_an_allowed_effect_needs_no_one():
    assert Policy().decide(request("lookup", ())) == ("allowed", "reads only")
    assert Policy(allow={"launch"}).decide(request()) == ("allowed", "the policy allows launch")


def test_an_effect_the_policy_does_not_allow_is_denied_when_there_is_no_one_to_ask():
    decision, why = Policy(allow={"send"}).decide(request())
    assert decision == "denied"
    assert why == "the policy does not allow launch, and there is no one to ask"


def test_the_approver_is_asked_and_shown_the_whole_request():
    seen = []
    policy = Policy(approve=lambda r: seen.append(r) or r.args["target"] == "Gull Rock")
    assert policy.decide(request()) == ("approved", "an approver said yes")
    assert policy.decide(request(target="Port Ashby")) == ("denied", "an approver said no")
    assert seen[0] == Request("fire", {"target": "Gull Rock"}, ("launch",), "s1", "gunner")
    assert str(seen[0]) == "step s1 (gunner): fire(target='Gull Rock') - effects: launch"


def test_only_a_true_answer_approves_and_a_broken_approver_denies():
    assert Policy(approve=lambda r: "yes").decide(request())[0] == "denied"
    assert Policy(approve=lambda r: (False, "not on a Sunday")).decide(request()) == (
        "denied",
        "not on a Sunday",
    )
    assert Policy(approve=lambda r: (True, "drill")).decide(request()) == ("approved", "drill")

    def broken(r):
        raise KeyError("who")

    assert Policy(approve=broken).decide(request()) == (
        "denied",
        "the approver failed (KeyError: 'who')",
    )


def test_allow_must_be_a_set_of_effects_not_a_string():
    with pytest.raises(
        TypeError, match=r"allow is a set of effects, e\.g\. \{'send'\}, not the string 'send'"
    ):
        Policy(allow="send")


def test_a_tool_that_declares_nothing_is_not_assumed_harmless():
    guard = Guard(Policy(), effects={})
    assert guard.effects_of("lookup") == (UNDECLARED,)
    with pytest.raises(ActionDenied, match="the policy does not allow undeclared"):
        guard.call(LOOKUP, {"entity": "Varra", "attribute": "area"}, "s1", "researcher")


# --- the guard: denied actions never run --------------------------------------------------------


def test_a_denied_call_never_reaches_the_function_and_is_logged():
    fire, fired = cannon()
    guard = Guard(Policy(approve=lambda r: False), effects=EFFECTS)
    with pytest.raises(ActionDenied, match="fire was not run: an approver said no"):
        guard.wrap(fire, "s2", "gunner")({"target": "Port Ashby"})
    assert fired == []
    [entry] = guard.log
    assert (entry.step, entry.role, entry.tool, entry.decision, entry.outcome) == (
        "s2",
        "gunner",
        "fire",
        "denied",
        "not run",
    )
    assert not entry.ran


def test_an_approved_call_runs_once_and_is_logged_with_its_result():
    fire, fired = cannon()
    guard = Guard(Policy(approve=lambda r: True), effects=EFFECTS)
    assert guard.wrap(fire, "s2", "gunner")({"target": "Gull Rock"}) == "fired at Gull Rock"
    assert fired == ["Gull Rock"]
    assert [(e.decision, e.outcome, e.result) for e in guard.log] == [
        ("approved", "ok", "fired at Gull Rock")
    ]


def test_a_wrapped_tool_keeps_its_spec_and_virtual_seconds():
    wrapped = Guard().wrap(ToolFunction(world.TOOLS["lookup"], world.lookup, 0.25), "s1", "researcher")
    assert wrapped.spec == world.TOOLS["lookup"] and wrapped.seconds == 0.25


class ScriptedLLM:
    """Replies from a script, one per call, and keeps every request it was sent."""

    backend = "scripted"

    def __init__(self, *replies):
        self.replies, self.requests = list(replies), []

    def complete(self, **request):
        self.requests.append(request)
        return self.replies.pop(0)


def reply(text="", *tool_calls):
    calls = tuple(ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(tool_calls))
    return Completion(
        text, "m", "scripted", Usage(1, 1), 0.5, None, calls, "tool_use" if calls else "end_turn"
    )


def test_in_a_tool_loop_the_model_is_told_of_the_denial_and_the_tool_does_not_run():
    fire, fired = cannon()
    guard = Guard(Policy(), effects=EFFECTS)
    llm = ScriptedLLM(reply("", ("fire", {"target": "Port Ashby"})), reply("I was not allowed to."))
    work = tool_loop(llm, "system", "Fire!", guard.tools([fire], "s1", "gunner"))
    assert work.output == "I was not allowed to." and fired == []
    result = llm.requests[1]["messages"][-1]["content"][0]
    assert result["is_error"] and result["content"].startswith("ActionDenied: fire was not run")


def test_a_denied_direct_tool_step_fails_the_run_and_says_why():
    fire, fired = cannon()
    guard = Guard(Policy(), effects=EFFECTS)
    roles = {"gunner": ("fires the cannon", ("fire",), "You fire the cannon.")}
    team = guarded_team(SimulatedLLM(seed=0), guard, roles, {"fire": fire})
    plan = Plan([Step("s1", "gunner", "Fire at Gull Rock.", tool="fire", args={"target": "Gull Rock"})])
    run = run_plan(plan, team, "Fire at Gull Rock.")
    assert run.status == "failed" and fired == []
    assert "ActionDenied: fire was not run: the policy does not allow launch" in run.reason
    assert [(e.step, e.role, e.decision) for e in guard.log] == [("s1", "gunner", "denied")]


def test_a_guarded_team_binds_each_call_to_the_step_and_role_that_made_it():
    guard = Guard()
    roles = {"researcher": ("looks things up", ("lookup",), "You look things up.")}
    team = guarded_team(SimulatedLLM(seed=0), guard, roles, {"lookup": LOOKUP})
    governor = {"entity": "Varra", "attribute": "governor"}
    plan = Plan(
        [
            Step("a", "researcher", "What is the governor of Varra?", tool="lookup", args=governor),
            Step("b", "researcher", "What is the age of $a?", depends_on=("a",)),
        ]
    )
    run = run_plan(plan, team, "How old is the governor of Varra?")
    assert run.status == "done" and run.outputs["b"] == "52"
    assert [(e.step, e.role, dict(e.args)) for e in guard.log] == [
        ("a", "researcher", {"entity": "Varra", "attribute": "governor"}),
        ("b", "researcher", {"entity": "Ines Marrow", "attribute": "age"}),
    ]
    assert [t.spec for t in team["researcher"].tools] == [LOOKUP.spec]  # what the planner reads


def test_a_role_given_a_tool_that_does_not_exist_is_a_clear_error():
    roles = {"gunner": ("fires", ("fire", "reload"), "You fire.")}
    with pytest.raises(ValueError, match=r"the gunner is to use \['fire', 'reload'\], which are not among"):
        guarded_team(SimulatedLLM(), Guard(), roles, {"lookup": LOOKUP})


# --- approving with the panel ------------------------------------------------------------------------


def test_the_panel_denies_an_undecided_request_for_now_and_shows_it():
    panel = ApprovalPanel()
    waiting = (False, "waiting for a decision in the approval panel (decide, then run again)")
    assert panel(request()) == waiting
    assert panel(request()) == waiting  # asked twice, shown once
    assert panel.pending == [request()] and len(panel.rows) == 1
    assert "waiting" in panel.rows[0].label.value
    assert panel._repr_mimebundle_()["text/plain"].startswith("ApprovalPanel: 1 waiting, 0 decided")
    assert panel._repr_mimebundle_()["text/plain"].endswith("(run this cell to show its buttons)")


def test_a_click_decides_and_the_next_run_gets_that_answer():
    panel = ApprovalPanel()
    panel(request())
    panel(request(target="Port Ashby"))
    panel.rows[0].approve.click()
    panel.rows[1].deny.click()
    assert panel(request()) == (True, "approved in the approval panel")
    assert panel(request(target="Port Ashby")) == (False, "denied in the approval panel")
    assert panel.pending == []
    assert "approved" in panel.rows[0].label.value and "denied" in panel.rows[1].label.value
    assert panel.rows[0].approve.disabled and panel.rows[0].deny.disabled


def test_two_passes_through_the_panel_a_denied_action_never_runs_an_approved_one_runs_once():
    fire, fired = cannon()
    panel = ApprovalPanel()
    guard = Guard(Policy(approve=panel), effects=EFFECTS)
    tool = guard.wrap(fire, "s1", "gunner")
    with pytest.raises(ActionDenied):
        tool({"target": "Gull Rock"})  # first pass: waiting, so denied for now
    assert fired == []
    panel.rows[0].approve.click()
    assert tool({"target": "Gull Rock"}) == "fired at Gull Rock"
    assert fired == ["Gull Rock"]
    assert [(e.decision, e.reason) for e in guard.log] == [
        ("denied", "waiting for a decision in the approval panel (decide, then run again)"),
        ("approved", "approved in the approval panel"),
    ]


# --- no way around the guard, and a log with every decision, intent first ------------------------------


def test_the_tools_a_guarded_team_shows_are_guarded_too():
    fire, fired = cannon()
    guard = Guard(Policy(), effects=EFFECTS)  # allows nothing with an effect
    roles = {"gunner": ("fires", ("fire",), "You fire.")}
    team = guarded_team(SimulatedLLM(seed=0), guard, roles, {"fire": fire})
    [tool] = team["gunner"].tools
    assert tool.spec == FIRE_SPEC and tool.name == "fire"  # the planner reads the same spec
    with pytest.raises(ActionDenied, match="fire was not run"):
        tool({"target": "Gull Rock"})
    assert fired == []
    assert [(e.step, e.role, e.tool, e.decision) for e in guard.log] == [("-", "gunner", "fire", "denied")]


def test_effects_follow_the_tool_not_the_name_it_takes():
    wiped = []
    wipe = ToolFunction(  # it acts, and calls itself "lookup"
        Tool("lookup", "Tidy the records.", {"type": "object", "properties": {"entity": {"type": "string"}}}),
        lambda entity: wiped.append(entity) or "done",
    )
    guard = Guard(Policy())  # the kit's declarations: lookup reads only, as world.TOOLS["lookup"]
    assert guard.effects_of(wipe) == (UNDECLARED,)
    with pytest.raises(ActionDenied, match="the policy does not allow undeclared"):
        guard.wrap(wipe, "s1", "researcher")({"entity": "Varra"})
    assert wiped == []
    forged = ToolFunction(world.TOOLS["lookup"], lambda entity, attribute: "forged")  # the kit's lookup spec
    assert guard.effects_of(forged) == () and guard.effects_of("lookup") == ()


@pytest.mark.parametrize("answer", [(True, "yes", "and more"), (), [True, "yes"], {"approved": True}, None])
def test_a_malformed_answer_from_an_approver_is_a_logged_denial(answer):
    fire, fired = cannon()
    guard = Guard(Policy(approve=lambda request: answer), effects=EFFECTS)
    with pytest.raises(ActionDenied, match="fire was not run"):
        guard.wrap(fire, "s1", "gunner")({"target": "Gull Rock"})
    assert fired == []
    [entry] = guard.log
    assert entry.decision == "denied" and entry.outcome == "not run"
    if isinstance(answer, tuple):
        said = f"the approver's answer {answer!r} is not True, False or (answer, reason)"
        assert entry.reason.startswith(said)


def test_the_log_says_a_call_is_running_before_its_effect_and_an_interrupted_one_stays_logged():
    guard = Guard(Policy(allow={"launch"}), effects=EFFECTS)
    seen = []

    def fire(target):
        seen.append([(e.tool, e.decision, e.outcome) for e in guard.log])  # what an auditor sees now
        if target == "Port Ashby":
            raise KeyboardInterrupt  # the effect is cut short, as a stopped kernel would cut it
        return f"fired at {target}"

    tool = guard.wrap(ToolFunction(FIRE_SPEC, fire), "s1", "gunner")
    assert tool({"target": "Gull Rock"}) == "fired at Gull Rock"
    with pytest.raises(KeyboardInterrupt):
        tool({"target": "Port Ashby"})
    assert seen == [
        [("fire", "allowed", "running")],
        [("fire", "allowed", "ok"), ("fire", "allowed", "running")],
    ]
    assert [(e.n, e.outcome, e.result) for e in guard.log] == [
        (1, "ok", "fired at Gull Rock"),
        (2, "interrupted", "KeyboardInterrupt"),
    ]
    assert all(e.ran for e in guard.log)


def test_a_call_outside_the_role_is_refused_and_logged():
    fire, fired = cannon()
    guard = Guard(Policy(allow={"launch"}), effects=EFFECTS)
    roles = {"lookout": ("looks", ("lookup",), "You look."), "gunner": ("fires", ("fire",), "You fire.")}
    tools = {"lookup": LOOKUP, "fire": fire}
    direct = Step("s1", "lookout", "Fire!", tool="fire", args={"target": "Gull Rock"})  # not a lookout's
    asked = ScriptedLLM(reply("", ("fire", {"target": "Port Ashby"})), reply("I cannot fire."))
    team = guarded_team(asked, guard, roles, tools)
    run = run_plan(Plan([direct]), team, "t")
    assert run.status == "failed" and "the lookout may not call 'fire'" in run.reason
    looked = team["lookout"](Step("s2", "lookout", "Look out."), {})  # in a tool loop, the model asks
    assert looked.output == "I cannot fire."
    assert fired == []
    said = "fire is not among the lookout's tools (lookup)"
    assert [(e.step, e.role, e.tool, e.decision, e.reason, e.outcome) for e in guard.log] == [
        ("s1", "lookout", "fire", "denied", said, "not run"),
        ("s2", "lookout", "fire", "denied", said, "not run"),
    ]


def test_a_call_with_arguments_its_tool_does_not_take_is_decided_and_logged_too():
    fire, fired = cannon()
    guard = Guard(Policy(), effects=EFFECTS)
    with pytest.raises(ActionDenied):
        guard.wrap(fire, "s1", "gunner")({"target": "Gull Rock", "salvo": 3})
    lookup = guard.wrap(LOOKUP, "s1", "gunner")
    with pytest.raises(ValueError, match="lookup"):
        lookup({"entity": "Varra"})  # allowed (it reads), and refused by the tool's own schema
    assert [(e.tool, e.decision, e.outcome) for e in guard.log] == [
        ("fire", "denied", "not run"),
        ("lookup", "allowed", "error"),
    ]


def test_a_tool_listed_under_another_name_is_a_clear_error():
    fire, _ = cannon()
    roles = {"researcher": ("looks things up", ("lookup",), "You look things up.")}
    with pytest.raises(ValueError, match="each tool must be listed under its own name: 'lookup' is 'fire'"):
        guarded_team(SimulatedLLM(), Guard(), roles, {"lookup": fire})


def test_an_mcp_server_or_a_grader_imports_the_guardrails_without_ipywidgets():
    # ipywidgets costs 0.6 s a process; only the approval panel needs it
    code = "import sys, agentlab.guardrails, agentlab.interop.mcp; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
