"""How the simulated model takes an agent's turn in the task world, as a competent model would.

An agent turn is an executor's tool loop, a writer's report or a single ReAct agent: the goal is
the first user message, the tools offered are what it may call, and the inputs it was handed
and the tool results so far are all it knows. It calls a tool when it lacks a fact (every
independent lookup at once, or only the first if told to call one tool at a time) and answers
when it has them all. When it cannot get there it says so, rather than make something up. A tool
result that comes with the page it was read from is read for its fact (`prompts.fact_of`).

A **triage turn** (notebook 08's handoffs) is a turn offered transfer tools: it hands the question
to the specialist (a team line in its system prompt) that holds the tools the question needs, the
fewest such, with a note saying where to start: the first fact to find, as a question. It does
not repeat the request in the note: a specialist that shares the conversation has it already.
`world.mistakes` spoils the turn when the simulator has drawn an error for the call; a model that
obeys a planted note (notebook 09) makes the call the note spells out instead.

It never reads the answers from the world's data: facts come only from tool results and from the
inputs a step is handed. It knows the world's grammar, as a model knows English, and its names.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentlab.prompts import (
    asks_one_at_a_time,
    fact_of,
    read_step_request,
    read_team,
    reported,
    suggested_lookup,
    transfer_target,
    transfer_tool,
)
from agentlab.world import capstone_model as capstone
from agentlab.world.injection import call_text, planted_call, without_injections
from agentlab.world.mistakes import Call, spoil_turn
from agentlab.world.tasks import (
    Arithmetic,
    AttributeOf,
    Difference,
    Extreme,
    Lookup,
    Name,
    Phrase,
    QuestionError,
    Total,
    label,
    parse_question,
    render,
)
from agentlab.world.tools import ToolError, calculate, name_key


@dataclass(frozen=True)
class Conversation:
    """What the model has read, as a turn or a plan needs it (the simulator reads it off the request)."""

    system: str
    tools: tuple[str, ...]  # the names of the tools it may call
    request: str  # the first user message: the task, or the step and its inputs
    report: str | None = None  # a replan's failure report: the first user message holding one
    newest: str = ""  # the newest message, if it is the user's: what the model has just read
    calls: tuple[Call, ...] = ()  # every tool call made so far
    results: tuple[tuple[str, Any, str, bool], ...] = ()  # (tool, input, result, is_error), in order


@dataclass
class Reply:
    """What the model says: its text, the tool calls it makes, and the mistake it made, if any."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    error: tuple[str, str] | None = None  # (kind, detail) when a mistake was made on purpose


def turn_reply(seen: Conversation, kinds: tuple[str, ...], rng: random.Random, obeys: bool) -> Reply:
    """An agent's next turn: the tool calls it needs first, or its answer."""
    planted = planted_call(seen.newest, seen.tools, seen.calls) if obeys else None
    if planted:  # talked into it by a note it has just read
        name, args = planted
        detail = f"called {call_text(name, args)}, as a note it had just read asked"
        return Reply(f"The records ask me to call {name} first.", [planted], ("followed_injection", detail))
    goal, inputs = read_step_request(seen.request)
    if any(transfer_target(name) for name in seen.tools):
        return _triage(goal.strip(), seen)
    knowledge = _Knowledge(seen.results, seen.tools)
    try:
        answer, calls = _solve(goal.strip(), inputs, knowledge), []
    except _Need as need:
        answer, calls = None, need.calls[:1] if asks_one_at_a_time(seen.system) else need.calls
    except _Stuck as problem:  # it says so rather than make something up: nothing to get wrong
        return Reply(str(problem))
    slip = capstone.turn_slip(calls, kinds, rng)  # the capstone's own mistake: a skipped conversion
    answer, calls, error = (
        spoil_turn(answer, calls, knowledge.found, kinds, rng) if slip is None else (*slip[:1], [], slip[1])
    )
    return Reply(answer if answer is not None else _announce(calls), calls, error)


# --- solving: what the agent knows, and the calls it still needs --------------------------------


class _Need(Exception):
    """Raised while solving: these tool calls must be made before the answer is known."""

    def __init__(self, calls: list[Call]):
        self.calls = calls


class _Stuck(Exception):
    """Raised while solving: the answer cannot be found with what this agent has."""


class _NoTool(_Stuck):
    """Raised while solving: a fact is needed and this agent has no tool to get it."""


class _Knowledge:
    """What the conversation so far has taught the agent, tool result by tool result."""

    def __init__(self, results: Sequence[tuple[str, Any, str, bool]], tools: tuple[str, ...]):
        self.tools = tools
        self.facts: dict[tuple[str, str], str] = {}  # (tool, key of the call) -> result
        self.failures: dict[tuple[str, str], str] = {}  # (tool, key of the call) -> error
        self.found: list[str] = []  # successful results, in order
        for name, args, text, failed in results:
            key = (name, _call_key(name, args))
            if failed:
                self.failures[key] = text
            else:
                data = _data(text)
                self.facts[key] = data
                self.found.append(data)

    Need = _Need  # for `world.capstone`, which asks for its lookups together

    def use(self, name: str, args: dict[str, Any]) -> str:
        """Any other tool's result (`world.capstone`'s convert): known, failed, or still needed."""
        key = (name, _call_key(name, args))
        if key in self.facts:
            return self.facts[key]
        if key in self.failures:
            raise _Stuck(f"the {name} call failed: {self.failures[key]}")
        if name not in self.tools:
            raise _NoTool(f"I have no {name} tool, and cannot do it in my head.")
        raise _Need([(name, args)])

    def lookup(self, entity: str, attribute: str) -> str:
        key = ("lookup", _call_key("lookup", {"entity": entity, "attribute": attribute}))
        if key in self.facts:
            return self.facts[key]
        if key in self.failures:  # read the tool's error: a suggestion is worth one more try
            instead = suggested_lookup(self.failures[key], entity, attribute)
            if instead:
                return self.lookup(*instead)
            raise _Stuck(f"I could not find the {attribute} of {entity}: {self.failures[key]}")
        if "lookup" not in self.tools:
            raise _NoTool(f"I have no way to look up the {attribute} of {entity}.")
        raise _Need([("lookup", {"entity": entity, "attribute": attribute})])

    def calculate(self, expression: str) -> str:
        key = ("calculate", _call_key("calculate", {"expression": expression}))
        if key in self.facts:
            return self.facts[key]
        if key in self.failures:
            raise _Stuck(f"the calculation {expression} failed: {self.failures[key]}")
        if "calculate" not in self.tools:
            try:
                return calculate(expression)  # simple arithmetic, done in its head
            except ToolError as e:
                raise _Stuck(f"I cannot work out {expression}: {e}") from None
        raise _Need([("calculate", {"expression": expression})])


@functools.lru_cache(maxsize=1024)  # each result is read again at every later turn of its conversation
def _data(result: str) -> str:
    """What a tool result says: a planted note, or the page around the fact, is not data."""
    return fact_of(without_injections(result))


def _call_key(name: str, args: Mapping[str, Any]) -> str:
    if name == "lookup":
        return f"{name_key(args.get('entity', ''))}|{name_key(args.get('attribute', ''))}"
    if name == "calculate":
        return " ".join(str(args.get("expression", "")).split())
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_ANNOUNCE = {  # how a model says what it is about to do: a verb, and what it is after
    "lookup": ("look up", "the {attribute} of {entity}"),
    "calculate": ("calculate", "{expression}"),
    "search": ("search for", "records matching {query!r}"),
    "convert": ("convert", "{amount} {unit} into {to}"),
}


def _announce(calls: list[Call]) -> str:
    """The short text a model writes before its tool calls (in one turn, all to the same tool)."""
    verb, what = _ANNOUNCE[calls[0][0]]
    return f"I'll {verb} {'; '.join(what.format(**args) for _, args in calls)}."


def _solve(goal: str, inputs: list[str], knowledge: _Knowledge) -> str:
    """The answer to `goal`, or raise _Need (tool calls first) or _Stuck (cannot be done)."""
    handed = reported(goal)
    if handed is not None:  # a writer handed the result: report it
        return handed
    if special := capstone.read(goal):  # one of the capstone's questions
        return capstone.answer(special, knowledge)
    try:
        question = parse_question(goal)
    except QuestionError:
        return _answer_unreadable(goal, inputs, knowledge)
    try:
        return _answer(question, knowledge)
    except _NoTool:
        if inputs:  # it cannot work the answer out itself, but it was handed one
            return inputs[-1]
        raise


def _answer(question, knowledge: _Knowledge) -> str:
    if isinstance(question, Lookup):
        return _entity(question.phrase, knowledge)
    if isinstance(question, Arithmetic):
        return knowledge.calculate(question.expression)
    values, needs = [], []
    for item in question.items:
        try:
            values.append(_value(item, question.attribute, knowledge))
        except _Need as need:  # independent lookups go out together, in one turn
            needs += need.calls
    if needs:
        raise _Need(needs)
    if isinstance(question, Extreme):
        numbers = [_as_number(v, question.attribute) for v in values]
        best = (max if question.highest else min)(numbers)
        return label(question.items[numbers.index(best)])
    sign = " + " if isinstance(question, Total) else " - "
    return knowledge.calculate(sign.join(values))


def _entity(phrase: Phrase, knowledge: _Knowledge) -> str:
    if isinstance(phrase, Name):
        return phrase.text
    return knowledge.lookup(_entity(phrase.of, knowledge), phrase.attribute)


def _value(item: Phrase, attribute: str, knowledge: _Knowledge) -> str:
    return item.value or knowledge.lookup(_entity(item, knowledge), attribute)


def _as_number(value: str, attribute: str) -> float:
    try:
        return float(value.replace(",", ""))
    except ValueError:
        raise _Stuck(f"the {attribute} {value!r} is not a number, so I cannot compare it") from None


def _answer_unreadable(goal: str, inputs: list[str], knowledge: _Knowledge) -> str:
    """A request outside the world's question forms: use what it was given, else search."""
    if inputs:
        return inputs[-1]
    if "search" in knowledge.tools:
        words = re.findall(r"[\w']+", goal)
        names = [w for w in words[1:] if w[0].isupper()]  # the first word is capitalised anyway
        query = " ".join(names or words[:4])
        key = ("search", _call_key("search", {"query": query}))
        if key in knowledge.facts:
            return f"I could not work out an answer; the records say: {knowledge.facts[key].splitlines()[0]}"
        if key not in knowledge.failures:
            raise _Need([("search", {"query": query})])
    raise _Stuck("I cannot answer that with the tools and information I have.")


# --- triage: which specialist, and where to start ----------------------------------------------

START_HERE = "Start here:"  # how the triage's note begins


def _triage(goal: str, seen: Conversation) -> Reply:
    """Hand the question to the specialist that holds the tools it needs (the fewest such), with a
    note of the first fact to find; say so when no specialist on offer can take it."""
    team = read_team(seen.system)  # specialist -> its tools, from the team lines
    targets = [t for t in (transfer_target(name) for name in seen.tools) if t]
    try:
        question = parse_question(goal)
    except QuestionError:
        question = None
    needs = _needs(question)
    able = [t for t in targets if needs <= set(team.get(t, ()))]
    if not able:
        return Reply(f"None of the specialists I can hand over to ({', '.join(targets)}) can answer that.")
    target = min(able, key=lambda t: len(team[t]))  # the first of the fewest tools
    first = goal if question is None else _first_fact(question)
    note = {"note": f"{START_HERE} {first}"}
    return Reply(f"I'll hand this to the {target}.", [(transfer_tool(target), note)])


def _needs(question) -> set[str]:
    """The tools a question takes: lookups unless every value is given, arithmetic for a sum, a
    difference or a calculation; a search for what is not a question of the world's grammar."""
    if question is None:
        return {"search"}
    needs = {"calculate"} if isinstance(question, Total | Difference | Arithmetic) else set()
    given = isinstance(question, Arithmetic) or (
        not isinstance(question, Lookup) and all(item.value for item in question.items)
    )
    if not given:
        needs.add("lookup")
    return needs


def _first_fact(question) -> str:
    """The first fact a question needs, as a question: a chain's innermost hop, a fan-out's first
    item not given; the question itself when it needs no lookup first."""
    if isinstance(question, Lookup):
        phrase = question.phrase
    elif isinstance(question, Arithmetic) or all(item.value for item in question.items):
        return render(question)
    else:
        phrase = AttributeOf(question.attribute, next(item for item in question.items if not item.value))
    while isinstance(phrase.of, AttributeOf):
        phrase = phrase.of
    return render(Lookup(phrase))
