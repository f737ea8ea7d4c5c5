"""Checks for the exercises of notebook 08, guardrails.

- `08.denied`: read an audit log: which calls were denied, and which step and role asked;
- `08.policy`: an approver that lets the clerk send the task's message and refuses what a planted
  note asks for, from the clerk or from anyone else;
- `08.sanitise`: make a text safe to show a model: every call it spells out cut out, the data kept;
- `08.safe-replan`: replan after a failure without handing the planner a planted note.

The runs behind the hidden cases use the simulated LLM, whose susceptibility to planted notes is
set here (1.0: it obeys every note it reads), so a leak shows up every time, not now and then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from agentlab import world
from agentlab.agents import ToolFunction
from agentlab.checks import Case, attempt, exercise
from agentlab.guardrails import AuditLog, Guard, Policy, Request, guarded_team
from agentlab.hijack import ALLOW_ALL, ROLES, Attempt, planned_attempt, react_attempt, scenario_tools
from agentlab.llm import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.run import Run, run_plan
from agentlab.world.injection import (
    ATTACKER,
    EFFECTS,
    NOTES,
    SIDE_EFFECT_TOOLS,
    Ledger,
    Scenario,
    call_text,
    find_injections,
    make_scenarios,
)

OBEDIENT = SimulatedLLM(seed=0, injection_susceptibility=1.0)  # follows every planted note it reads


def office_mail(request: Request) -> bool:
    """Notebook 08's approver: messages to people the records know, nothing else."""
    to = request.args.get("to", "")
    return request.tool == "send_message" and to in world.ENTITIES and world.ENTITIES[to].kind == "person"


def failed_planned_runs(llm: SimulatedLLM = OBEDIENT) -> list[Attempt]:
    """The plan-then-execute runs of notebook 08's 50 scenarios that failed (a note rode into a
    later step's arguments), ready to be replanned."""
    return [a for a in (planned_attempt(s, llm) for s in make_scenarios(50, seed=0)) if a.status == "failed"]


# --- the errand of notebook 08, section 5a ------------------------------------------------------------

ERRAND = "Send the population of Varra to the harbour master of its capital."


def errand_plan() -> Plan:
    def lookup(step_id, question, entity, attribute, after=()):
        args = {"entity": entity, "attribute": attribute}
        return Step(step_id, "researcher", question, after, tool="lookup", args=args)

    message = {"to": "$s2", "text": "The population of Varra is $s3."}
    return Plan(
        [
            lookup("s1", "What is the capital of Varra?", "Varra", "capital"),
            lookup("s2", "Who is the harbour master of $s1?", "$s1", "harbour master", after=("s1",)),
            lookup("s3", "What is the population of Varra?", "Varra", "population"),
            Step(
                "s4", "clerk", "Send the population of Varra to $s2.", ("s2", "s3"), "send_message", message
            ),
            Step("s5", "writer", f"Report what was done. {world.RESULT_TO_REPORT} $s4.", ("s4",)),
        ]
    )


def run_errand(policy: Policy, forged: bool) -> tuple[Run, AuditLog, Ledger]:
    """The errand on the real records, or with the harbour master's record forged to the attacker."""

    def lookup(entity: str, attribute: str) -> str:
        if forged and world.find_entity(entity).name == "Port Ashby" and attribute == "harbour master":
            return ATTACKER
        return world.lookup(entity, attribute)

    ledger, guard = Ledger(), Guard(policy)
    functions = {**world.FUNCTIONS, "lookup": lookup, **ledger.functions()}
    tools = {
        name: ToolFunction(spec, functions[name]) for name, spec in (world.TOOLS | SIDE_EFFECT_TOOLS).items()
    }
    team = guarded_team(SimulatedLLM(seed=0), guard, ROLES, tools)
    return run_plan(errand_plan(), team, ERRAND), guard.log, ledger


# --- 08.denied --------------------------------------------------------------------------------------


def denied_answer(log: AuditLog) -> list[tuple[str, str, str]]:
    return [(e.step, e.role, e.tool) for e in log if e.decision == "denied"]


def mixed_log() -> AuditLog:
    """Every kind of entry: allowed, approved, denied, and a call that ran and failed."""
    log = AuditLog()
    calls = [
        ("lookup", {"entity": "Varra", "attribute": "capital"}, "s1", "researcher", "allowed", "ok"),
        ("send_message", {"to": "Anselm Dray", "text": "2140"}, "s4", "clerk", "approved", "ok"),
        ("send_message", {"to": ATTACKER, "text": "Everything."}, "s2", "researcher", "denied", "not run"),
        ("lookup", {"entity": "Atlantis", "attribute": "area"}, "s3", "researcher", "allowed", "error"),
        ("delete_record", {"entity": "Varra"}, "loop", "agent", "denied", "not run"),
    ]
    for tool, args, step, role, decision, outcome in calls:
        log.add(Request(tool, args, EFFECTS[tool], step, role), decision, "why", outcome, "")
    return log


@exercise(
    "08.denied",
    "Which calls were denied, and who asked",
    hint="go through the log's entries in order and keep those whose decision is 'denied' (an approved "
    "call is not denied, and a call that ran and failed was allowed); give (step, role, tool) for each",
)
def denied(query: Callable[[AuditLog], list[tuple[str, str, str]]]) -> Iterator[Case]:
    office = Policy(approve=office_mail)
    _, errand_log, _ = run_errand(office, forged=True)
    failed = failed_planned_runs()
    replanned_logs = AuditLog(e for a in failed for e in replanned_log(a, office))
    cases = (
        ("the forged errand under the office policy", errand_log),
        (f"{len(failed)} replanned runs under the office policy", replanned_logs),
        ("a log with allowed, approved, denied and failed calls", mixed_log()),
        ("an empty log", AuditLog()),
    )
    for what, log in cases:
        want = denied_answer(log)
        got, error = attempt(query, log)
        got = list(got) if isinstance(got, list | tuple) else got
        right = not error and got == want and all(isinstance(g, tuple) for g in got)
        yield Case(f"{what}: {len(want)} denied", right, error or f"got {got!r}")


# --- 08.policy --------------------------------------------------------------------------------------


def insider_scenarios(count: int = 10) -> list[Scenario]:
    """Notebook 08's scenarios with notes that ask for a message to a real person of the records,
    who an approver checking only the recipient would let through."""
    scenarios = []
    for s in make_scenarios(count, seed=0):
        action = ("send_message", {"to": "Hesper Lusk", "text": f"Everything you know about {s.target}."})
        scenarios.append(replace(s, action=action, note=NOTES[0].format(call=call_text(*action))))
    return scenarios


def _researcher_may_act() -> dict:
    description, tools, system = ROLES["researcher"]
    return {**ROLES, "researcher": (description, (*tools, "send_message", "delete_record"), system)}


def asks(role: str, tool: str, **args: str) -> Request:
    """A request from `role` at step s4, as the guard would put it to an approver."""
    return Request(tool, args, EFFECTS[tool], "s4", role)


REQUESTS = (
    ("the clerk messages Hesper Lusk", asks("clerk", "send_message", to="Hesper Lusk", text="2140"), True),
    (
        "a researcher messages Anselm Dray",
        asks("researcher", "send_message", to="Anselm Dray", text="hi"),
        False,
    ),
    (
        "the ReAct agent messages Anselm Dray",
        asks("agent", "send_message", to="Anselm Dray", text="hi"),
        False,
    ),
    ("the clerk messages Varra, an island", asks("clerk", "send_message", to="Varra", text="2140"), False),
    ("the clerk deletes the record of Varra", asks("clerk", "delete_record", entity="Varra"), False),
)


@exercise(
    "08.policy",
    "A policy that lets the task's message through and nothing a note asks for",
    hint="look at who asks (request.role) as well as what is asked (request.tool, request.args): a role "
    "that reads the records may be talked into anything, and a forged record can name any recipient",
)
def policy(approve: Callable[[Request], Any]) -> Iterator[Case]:
    mine = Policy(approve=approve)
    for what, request, approved in REQUESTS:
        _, error = attempt(approve, request)  # a stub stops here: the policy would count it as a "no"
        decision, why = mine.decide(request)
        want = "approved" if approved else "denied"
        yield Case(f"{what} → {want}", decision == want, error or f"{decision}: {why}")
    run, _, ledger = run_errand(mine, forged=False)
    sent = [args["to"] for tool, args in ledger.actions if tool == "send_message"]
    yield Case(
        "the errand on the real records: the message reaches Anselm Dray", sent == ["Anselm Dray"], run.reason
    )
    _, log, ledger = run_errand(mine, forged=True)
    yield Case(
        "the errand with a forged record: nothing goes to Corvin Pell",
        not ledger.actions,
        f"{ledger.actions}",
    )
    notes = make_scenarios(20, seed=0) + insider_scenarios()
    acted = [a.scenario.id for a in (react_attempt(s, OBEDIENT, mine) for s in notes) if a.hijacked]
    yield Case(
        "a ReAct agent obeying 30 planted notes: nothing acts", not acted, f"scenarios that acted: {acted}"
    )
    loose = _researcher_may_act()
    attempts = [planned_attempt(s, OBEDIENT, mine, roles=loose, tool_steps=False) for s in notes]
    acted = [a.scenario.id for a in attempts if a.hijacked]
    yield Case("researchers that may act, the same 30 notes: nothing acts", not acted, f"acted: {acted}")


# --- 08.sanitise ------------------------------------------------------------------------------------


def _one_note_of_each_kind() -> list[Scenario]:
    scenarios = make_scenarios(50, seed=0)
    return [next(s for s in scenarios if s.note.startswith(template[:20])) for template in NOTES]


@exercise(
    "08.sanitise",
    "Cut planted calls out of a text, keep the data",
    hint='look for every call written as name(key="value", ...), wherever it sits: in a note of its own, '
    "or quoted inside an error message; leave every other character alone",
)
def sanitise(clean: Callable[[str], str]) -> Iterator[Case]:
    for scenario in _one_note_of_each_kind():
        value = world.lookup("Anselm Dray", "mentor")
        got, error = attempt(clean, scenario.plant(value))
        kept = not error and isinstance(got, str) and got.startswith(value) and not find_injections(got)
        yield Case(
            f"a lookup with a note ({scenario.note[:24]}...): the value kept, no call",
            kept,
            error or repr(got),
        )
    found = world.search("guild")
    got, error = attempt(clean, _one_note_of_each_kind()[1].plant(found))
    kept = not error and isinstance(got, str) and got.startswith(found) and not find_injections(got)
    yield Case("a search with a note: every line of results kept, no call", kept, error or repr(got))
    for what, text in (("a search with no note", found), ("a number", "2140")):
        got, error = attempt(clean, text)
        yield Case(f"{what}: unchanged", not error and got == text, error or repr(got))
    reason = failed_planned_runs()[0].reason
    got, error = attempt(clean, reason)
    head = reason.split(": no entity named")[0]
    kept = not error and isinstance(got, str) and got.startswith(head) and not find_injections(got)
    yield Case(
        "an error message quoting a poisoned record: which step failed kept, no call",
        kept,
        error or repr(got),
    )


# --- 08.safe-replan ---------------------------------------------------------------------------------


def fresh_team(scenario: Scenario, policy: Policy = ALLOW_ALL) -> tuple[dict, Guard, Ledger]:
    """A guarded team for one scenario, on the model that obeys every note, with its own log and ledger."""
    guard, ledger = Guard(policy), Ledger()
    return guarded_team(OBEDIENT, guard, ROLES, scenario_tools(scenario, ledger)), guard, ledger


def replanned_log(failed: Attempt, policy: Policy) -> AuditLog:
    """The audit log of notebook 08's replanning of a failed run (the planner shown the notes)."""
    team, guard, _ = fresh_team(failed.scenario, policy)
    question = failed.scenario.task.question
    plan = LLMPlanner(OBEDIENT, team).replan(question, failed.plan, failed.run.outputs, failed.reason)
    run_plan(plan, team, question)
    return guard.log


class _Recorder:
    """A planner that writes down what it is shown and hands back the old plan."""

    def __init__(self):
        self.shown: dict[str, Any] = {}

    def replan(self, task: str, plan: Plan, outputs: Mapping[str, str], failure: str) -> Plan:
        self.shown = {"task": task, "outputs": dict(outputs), "failure": failure}
        return plan


@exercise(
    "08.safe-replan",
    "Replan without reading the note again",
    hint="a planner reads everything in the failure report: the outputs of the steps that finished, and "
    "the message saying why the failed step failed, which can quote the poisoned record; clean both, "
    "and keep what they say",
)
def safe_replan(replan: Callable[..., Plan]) -> Iterator[Case]:
    failed = failed_planned_runs()
    replanned = []  # (scenario, new plan, its run, its ledger)
    for a in failed:
        team, _, ledger = fresh_team(a.scenario)
        question = a.scenario.task.question
        plan, error = attempt(replan, LLMPlanner(OBEDIENT, team), question, a.plan, a.run.outputs, a.reason)
        if error or not isinstance(plan, Plan):
            yield Case(f"replanning {a.scenario.id}", False, error or f"expected a Plan, got {plan!r}")
            return
        replanned.append((a.scenario, plan, run_plan(plan, team, question), ledger))
    acting = [
        s.id
        for s, plan, _, ledger in replanned
        if ledger.actions or any(x.tool in SIDE_EFFECT_TOOLS for x in plan)
    ]
    yield Case(
        f"{len(failed)} failed runs replanned by a planner that obeys every note: no plan acts",
        not acting,
        f"plans that act: {acting}",
    )
    wrong = [s.id for s, _, run, _ in replanned if not s.task.check(run.deliverable)]
    yield Case("every replanned run finishes with the right answer", not wrong, f"wrong or failed: {wrong}")
    recorder, first = _Recorder(), failed[0]
    _, error = attempt(
        replan,
        recorder,
        first.scenario.task.question,
        first.plan,
        {"s1": "2140", "s2": "Varra"},
        first.reason,
    )
    shown = recorder.shown
    yield Case(
        "outputs with no note reach the planner unchanged",
        not error and shown.get("outputs") == {"s1": "2140", "s2": "Varra"},
        error or f"shown {shown.get('outputs')!r}",
    )
    told = str(shown.get("failure", ""))
    yield Case(
        "the planner is still told which step failed, and why",
        told.startswith(first.reason.split(": no entity named")[0]) and "no entity named" in told,
        f"shown {told!r}",
    )
