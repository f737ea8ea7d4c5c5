"""A simulated LLM: a deterministic stand-in that does the kit's work the way a competent model would.

It is a simulator, not a model, and says so everywhere (`backend = "simulated"`,
its repr, the model names "sim-large" and "sim-small"). It answers the same
requests a real model gets, recognising each by its structure:

- a **plan** request carries a JSON Schema titled "Plan". The simulator reads the
  task ("Task: ..." in the first user message) and the team ("- role: ... (tools:
  a, b)" lines in the system prompt), decomposes the question the way the world's
  grammar says it decomposes, and answers with JSON held to the schema: direct tool
  steps with "$s1" references if the schema has a "tool" field, instructions for
  the roles' agents if not. A **replan** is a plan request whose user message holds
  a "Failure report": facts the completed steps found are reused, not looked up again;
- a **manager's plan** (notebook 05) is a plan request whose team lists a role that "leads a
  sub-team" and says "at most N parts": the question is split into at most N whole
  sub-questions for that role (groups of a fan-out's items, segments of a chain), joined
  and reported as in any plan; a question that does not split goes to one sub-team whole.
  On a replan, parts that completed are reused as they are;
- anything else is an **agent turn** (an executor's tool loop, a writer's synthesis,
  or a single ReAct agent): the goal is the first user message, the tools offered
  are what it may call, and the tool results already in the conversation are all it
  knows. It calls a tool when it lacks a fact and answers when it has them all.
  Independent lookups go out together in one turn (parallel tool use), unless the
  system prompt says to call "one tool at a time", as a classic ReAct agent is told:
  then it asks for one fact per turn, the first it needs.

It never reads the answers from the world's data: facts come only from tool results
and from the inputs a step is handed. (It knows the world's *grammar*, as a model
knows English, and its names, to make its mistakes plausible.)

**Errors, on purpose.** With `error_rate` > 0, a call that can go wrong in one of the
selected `error_kinds` does so with that probability. The large model slips at that rate
whatever it is asked; the small one more often the more a request asks of it: as rarely as
the large model on a one-step request, 3x as often on a typical three-step one, 6x on a
six-step plan (steps counted by `world.steps_needed`), which is what makes routing the easy
requests to it pay:

| kind                  | in a plan                                | in an agent turn                    |
|-----------------------|------------------------------------------|-------------------------------------|
| `malformed_json`      | text that is not valid JSON              | -                                   |
| `wrong_tool_argument` | a misspelt or wrong argument in a step   | a misspelt argument in a tool call  |
| `hallucinated_answer` | -                                        | a plausible but wrong final answer  |
| `dropped_dependency`  | a step loses one of its `depends_on` ids | -                                   |
| `finished_too_early`  | the plan stops before its last steps     | answers with what it has so far     |

**Planted instructions** (notebook 08). With `injection_susceptibility` > 0 the simulator
models a model that can be talked into things. When the newest message it reads (a tool
result, or a step's inputs) spells out a call to one of its tools, written in a planted note
(`world.injection`), it makes that call instead of its next step with this probability,
decided once, on the turn it reads the note. A planner asked to replan from a failure report
that carries such a note writes the call into the new plan as a direct tool step, for a role
that holds the tool, with the same probability. Either way it still reads the data around the
note correctly. At 0 (the default), or with no note in sight, nothing changes.

**Determinism.** Each call's randomness comes from a SHA-256 hash of (seed, model,
the whole request), never from call order or shared state, so threads cannot
change what it says.

**Tokens.** `count_tokens` is the rule of thumb of about 4 characters per token
(rounded up) for English text; JSON (tool specs, schemas, tool inputs) is counted
on its compact serialisation. Real tokenizers differ by tens of per cent.

**Latency** is virtual: `overhead + output_tokens / tokens_per_second` of the profile.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentlab.llm.base import Completion, Message, Tool, ToolCall, Usage
from agentlab.world import (
    ENTITIES,
    RESULT_TO_REPORT,
    Arithmetic,
    AttributeOf,
    Difference,
    Extreme,
    Lookup,
    Name,
    Phrase,
    QuestionError,
    Total,
    calculate,
    fill_in,
    name_key,
    normalise,
    parse_question,
    render,
    render_phrase,
    steps_needed,
)
from agentlab.world.injection import call_text, find_injections, without_injections
from agentlab.world.tasks import REFERENCE
from agentlab.world.tools import ToolError, format_number


@dataclass(frozen=True)
class Profile:
    """How a simulated model behaves: its speed (virtual seconds) and how error-prone it is."""

    name: str
    overhead: float  # seconds before the first output token
    tokens_per_second: float
    error_factor: float  # multiplies the error rate you set (capped at 1)
    summary: str
    scales_with_steps: bool = False  # error_factor is then for a request of TYPICAL_STEPS steps

    def errs_times(self, steps: int) -> float:
        """How many times the set error rate this model slips at, on a request needing `steps`."""
        if not self.scales_with_steps:
            return self.error_factor
        return max(1.0, self.error_factor * steps / TYPICAL_STEPS)


TYPICAL_STEPS = 3


PROFILES = {
    "sim-large": Profile("sim-large", 1.2, 40.0, 1.0, "accurate, slow, expensive"),
    "sim-small": Profile("sim-small", 0.4, 120.0, 3.0, "cheaper, faster, more errors", True),
}

ERROR_KINDS = (
    "malformed_json",
    "wrong_tool_argument",
    "hallucinated_answer",
    "dropped_dependency",
    "finished_too_early",
)
_PLAN_ERRORS = ("malformed_json", "wrong_tool_argument", "dropped_dependency", "finished_too_early")


def count_tokens(text: str) -> int:
    """About 4 characters per token, rounded up: the kit's approximate tokenizer."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class InjectedError:
    """A record of one error the simulator made on purpose (for explaining a run, not for the run)."""

    model: str
    request: str  # "plan", "replan" or "turn"
    kind: str
    detail: str


class SimulatedLLM:
    """The kit's offline model. `error_rate` is the chance per call of one of `error_kinds`
    (all kinds by default); `model` is the default profile, "sim-large" or "sim-small"."""

    backend = "simulated"

    def __init__(
        self,
        seed: int = 0,
        error_rate: float = 0.0,
        error_kinds: Sequence[str] | None = None,
        model: str = "sim-large",
        injection_susceptibility: float = 0.0,
    ):
        if not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"error_rate must be between 0 and 1, got {error_rate!r}")
        if not 0.0 <= injection_susceptibility <= 1.0:
            raise ValueError(
                f"injection_susceptibility must be between 0 and 1, got {injection_susceptibility!r}"
            )
        kinds = ERROR_KINDS if error_kinds is None else tuple(error_kinds)
        unknown = [k for k in kinds if k not in ERROR_KINDS]
        if unknown:
            raise ValueError(f"unknown error kind(s) {unknown}; choose from {list(ERROR_KINDS)}")
        self.seed, self.error_rate, self.error_kinds = seed, error_rate, kinds
        self.model = _profile(model).name
        self.injection_susceptibility = injection_susceptibility
        self.injected: list[InjectedError] = []  # appended to by every call that erred on purpose
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        kinds = "" if self.error_kinds == ERROR_KINDS else f", error_kinds={list(self.error_kinds)}"
        if self.injection_susceptibility:
            kinds += f", injection_susceptibility={self.injection_susceptibility}"
        return (
            f"SimulatedLLM(seed={self.seed}, error_rate={self.error_rate}{kinds}, "
            f"model={self.model!r})  # a simulator, not a real model"
        )

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[Tool] = (),
        schema: Mapping[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        profile = _profile(model or self.model)
        request = _canonical(system, messages, tools, schema, max_tokens)
        digest = hashlib.sha256(f"{self.seed}\x00{profile.name}\x00{request}".encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))
        steps = steps_needed(_first_user_text(messages))
        rate = min(1.0, self.error_rate * profile.errs_times(steps))
        erring = rng.random() < rate  # drawn first, always, so the rate alone decides it
        # its own draw, from another part of the hash, so the error draws above stay as they were
        obeys = random.Random(int(digest[16:32], 16)).random() < self.injection_susceptibility

        if _is_plan_request(schema):
            kind = "replan" if _failure_report(messages) else "plan"
            reply = _plan_reply(system, messages, schema, erring, self.error_kinds, rng, obeys)
        else:
            kind = "turn"
            one_at_a_time = bool(_ONE_AT_A_TIME.search(system))
            reply = _turn_reply(messages, tools, erring, self.error_kinds, rng, one_at_a_time, obeys)
        if reply.error:
            with self._lock:
                self.injected.append(InjectedError(profile.name, kind, *reply.error))

        calls = tuple(
            ToolCall(f"toolu_sim_{digest[:12]}_{i}", name, args) for i, (name, args) in enumerate(reply.calls)
        )
        text = reply.text
        output_tokens = count_tokens(text) + sum(
            count_tokens(_compact({"n": c.name, "i": c.args})) for c in calls
        )
        stop = "tool_use" if calls else "end_turn"
        if output_tokens > max_tokens:  # cut off mid-answer, as a real model is
            text, calls, output_tokens, stop = text[: max_tokens * 4], (), max_tokens, "max_tokens"
        data = None
        if schema is not None and stop != "max_tokens":
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
        usage = Usage(
            input_tokens=_input_tokens(system, messages, tools, schema), output_tokens=output_tokens
        )
        latency = round(profile.overhead + output_tokens / profile.tokens_per_second, 3)
        return Completion(text, profile.name, self.backend, usage, latency, data, calls, stop)


def _profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"the simulator has no model {name!r}; its profiles are {', '.join(PROFILES)}")
    return PROFILES[name]


# --- reading a request -----------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    """JSON for the odd object in a request (a mapping proxy, say); never a repr with an address."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    raise TypeError(f"a request holds {type(value).__name__}, which is not JSON")


def _plan_text(steps: list[dict[str, Any]]) -> str:
    return json.dumps({"steps": steps}, ensure_ascii=False)


def _canonical(system, messages, tools, schema, max_tokens) -> str:
    specs = [[t.name, t.description, t.input_schema] for t in tools]
    return _compact([system, list(messages), specs, schema, max_tokens])


def _block_text(block: Any) -> str:
    """The text a content block carries, for reading and for counting tokens."""
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return _compact({"n": block.get("name"), "i": block.get("input", {})})
    if kind == "tool_result":
        return _result_text(block)
    return _compact(block)


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content", "")
    return content if isinstance(content, str) else "".join(_block_text(b) for b in content)


def _message_text(message: Message) -> str:
    content = message.get("content", "")
    return content if isinstance(content, str) else "\n".join(_block_text(b) for b in content)


def _input_tokens(system, messages, tools, schema) -> int:
    parts = [system, *(_message_text(m) for m in messages)]
    parts += [_compact([t.name, t.description, t.input_schema]) for t in tools]
    if schema is not None:
        parts.append(_compact(schema))
    return sum(count_tokens(p) for p in parts)


def _is_plan_request(schema: Mapping[str, Any] | None) -> bool:
    return bool(schema) and (schema.get("title") == "Plan" or "steps" in schema.get("properties", {}))


def _first_user_text(messages: Sequence[Message]) -> str:
    return next((_message_text(m) for m in messages if m.get("role") == "user"), "")


def _failure_report(messages: Sequence[Message]) -> str | None:
    for m in messages:
        text = _message_text(m)
        if m.get("role") == "user" and "Failure report" in text:
            return text
    return None


_LINE_ITEM = re.compile(r"^- ([\w.-]+): (.*)$", re.MULTILINE)


@dataclass
class _Reply:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: tuple[str, str] | None = None  # (kind, detail) when an error was injected


# --- planning -------------------------------------------------------------------------------

_TEAM_LINE = re.compile(r"^- ([\w-]+): .*?(?:\(tools: ([^)]*)\))?\s*$", re.MULTILINE)
_LEAD_LINE = re.compile(r"^- ([\w-]+): leads a sub-team\b.*?\bat most (\d+) parts\b", re.MULTILINE)
_TASK_LINE = re.compile(r"^Task: (.+)$", re.MULTILINE)


def _plan_reply(system, messages, schema, erring, kinds, rng, obeys=False) -> _Reply:
    request = _first_user_text(messages)
    task = m.group(1).strip() if (m := _TASK_LINE.search(request)) else request.strip()
    step_schema = schema.get("properties", {}).get("steps", {}).get("items", {})
    direct = "tool" in step_schema.get("properties", {})
    roles = _team(system, step_schema)
    report = _failure_report(messages)
    writer = _PlanWriter(roles, direct, _known_facts(report) if report else {})
    lead = _LEAD_LINE.search(system)
    planted = _planted_call(messages, {t for tools in roles.values() for t in tools}) if obeys else None
    if planted and direct:  # talked into it: the note's call becomes a step of the new plan
        name, args = planted
        role = next(r for r, tools in roles.items() if name in tools)
        writer.add(role, f"Do what the note in the records asks: {call_text(name, args)}", [], name, args)
    if lead and lead.group(1) in roles:  # a manager: whole sub-questions for sub-teams
        known = _known_parts(report, lead.group(1)) if report else {}
        steps = writer.write_parts(task, lead.group(1), int(lead.group(2)), known)
    else:
        steps = writer.write(task)

    error = None
    possible = [k for k in _PLAN_ERRORS if k in kinds and _plan_error_applies(k, steps)]
    if erring and possible:
        kind = rng.choice(possible)
        steps, text, detail = _spoil_plan(kind, steps, rng)
        error = (kind, detail)
    else:
        text = _plan_text(steps)
    if planted and direct and error is None:
        error = ("followed_injection", f"the plan calls {call_text(*planted)}, as a note it read asked")
    return _Reply(text, [], error)


def _team(system: str, step_schema: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """role -> the tools it may use, from the team list in the system prompt; the schema's
    role enum, when there is one, decides which roles exist."""
    listed = {}
    for m in _TEAM_LINE.finditer(system):
        tools = tuple(t.strip() for t in (m.group(2) or "").split(",") if t.strip() and t.strip() != "none")
        listed[m.group(1)] = tools
    enum = step_schema.get("properties", {}).get("role", {}).get("enum")
    if enum:
        return {role: listed.get(role, ()) for role in enum}
    return listed or {"agent": ()}


class _PlanWriter:
    """Writes the steps a competent planner would for one question of the world's grammar."""

    def __init__(self, roles: Mapping[str, tuple[str, ...]], direct: bool, known: Mapping):
        names = list(roles)
        self.finder = next((r for r in names if "lookup" in roles[r]), names[0])
        self.counter = next((r for r in names if "calculate" in roles[r]), self.finder)
        self.writer = next((r for r in reversed(names) if not roles[r]), names[-1])
        self.direct, self.known = direct, known
        self.steps: list[dict[str, Any]] = []

    def add(self, role, instruction, inputs, tool=None, args=None) -> str:
        step_id = f"s{len(self.steps) + 1}"
        step = {"id": step_id, "role": role, "instruction": instruction}
        step["depends_on"] = sorted({r[1:] for r in inputs if r.startswith("$")}, key=self._order)
        if tool:
            step["tool"], step["args"] = tool, args
        self.steps.append(step)
        return "$" + step_id

    def _order(self, step_id: str) -> int:
        return [s["id"] for s in self.steps].index(step_id)

    def entity(self, phrase: Phrase) -> str:
        """A reference to (or the literal name of) what the phrase names, adding lookup steps."""
        if isinstance(phrase, Name):
            return phrase.text
        return self.fact(self.entity(phrase.of), phrase.attribute)

    # A step's instruction always says what it is for, as a question; a direct tool step
    # also says how to get it (tool and args), so a reader can check one against the other.

    def fact(self, entity: str, attribute: str) -> str:
        known = self.known.get((name_key(entity), name_key(attribute)))
        if known is not None:
            return known
        question = f"What is the {attribute} of {entity}?"
        if self.direct:
            args = {"entity": entity, "attribute": attribute}
            return self.add(self.finder, question, [entity], "lookup", args)
        return self.add(self.finder, question, [entity])

    def combine(self, refs: list[str], sign: str) -> str:
        expression = f" {sign} ".join(refs)
        if self.direct:
            return self.add(
                self.counter, f"What is {expression}?", refs, "calculate", {"expression": expression}
            )
        return self.add(self.counter, f"What is {expression}?", refs)

    def write(self, task: str) -> list[dict[str, Any]]:
        try:
            question = parse_question(task)
        except QuestionError:  # not a question it can decompose: hand it over whole
            result = self.add(self.finder, task, [])
            self.add(
                self.writer,
                f"Report the answer to the task: {task} {RESULT_TO_REPORT} {result}.",
                [result],
            )
            return self.steps
        if isinstance(question, Lookup):
            result = self.entity(question.phrase)
        elif isinstance(question, Total | Difference):
            items = question.items if isinstance(question, Total) else (question.first, question.second)
            refs = [self.fact(self.entity(item), question.attribute) for item in items]
            result = self.combine(refs, "+" if isinstance(question, Total) else "-")
        elif isinstance(question, Extreme):
            labelled = []
            for item in question.items:
                name = self.entity(item)
                labelled.append(Name(name, self.fact(name, question.attribute)))
            compare = Extreme(question.attribute, tuple(labelled), question.highest)
            result = self.add(
                self.counter, render(compare), [n.text for n in labelled] + [n.value for n in labelled]
            )
        else:  # Arithmetic
            result = self.combine([question.expression], "+")
        report = f"Report the answer to the task in a few words: {render(question)}"
        self.add(self.writer, f"{report} {RESULT_TO_REPORT} {result}.", [result])
        return self.steps

    # --- a manager's plan: parts for sub-teams ---------------------------------------------

    def write_parts(self, task: str, lead: str, parts: int, known: Mapping[str, str]) -> list[dict[str, Any]]:
        """At most `parts` whole sub-questions, each for the sub-team `lead` heads, then the join
        and the report. `known` maps a part already answered (by a replan's completed steps) to
        its answer, which is used as it is."""
        self.lead, self.known_parts = lead, known
        try:
            question = parse_question(task)
        except QuestionError:
            result = self.part(task)
            report = f"Report the answer to the task: {task} {RESULT_TO_REPORT} {result}."
            self.add(self.writer, report, [result])
            return self.steps
        result = self._split(question, parts)
        if result is None:  # nothing to split: one sub-team takes the question whole
            result = self.part(render(question))
        report = f"Report the answer to the task in a few words: {render(question)}"
        self.add(self.writer, f"{report} {RESULT_TO_REPORT} {result}.", [result])
        return self.steps

    def part(self, question: str) -> str:
        """A reference to a sub-team's answer to `question`, or the answer if a replan has it."""
        known = self.known_parts.get(normalise(question))
        if known is not None:
            return known
        return self.add(self.lead, question, ["$" + ref for ref in REFERENCE.findall(question)])

    def _split(self, q, parts: int) -> str | None:
        """The parts of `q` and their join; None when `q` does not split into two or more."""
        if isinstance(q, Total | Difference):
            items = q.items if isinstance(q, Total) else (q.first, q.second)
            groups = _groups(items, parts)
            if len(groups) < 2:
                return None
            refs = [self._value_of(group, q.attribute) for group in groups]
            return self.combine(refs, "+" if isinstance(q, Total) else "-")
        if isinstance(q, Extreme):  # the winners of each group meet in one more part
            groups = _groups(q.items, parts - 1)
            if len(groups) < 2:
                return None
            winners = [
                self.part(render(Extreme(q.attribute, group, q.highest)))
                if len(group) > 1
                else _label(group[0])
                for group in groups
            ]
            return self.part(render(Extreme(q.attribute, tuple(Name(w) for w in winners), q.highest)))
        if isinstance(q, Lookup):  # a chain: consecutive segments, each starting from the last one's answer
            attributes, base = [], q.phrase
            while isinstance(base, AttributeOf):
                attributes.insert(0, base.attribute)
                base = base.of
            segments = _groups(attributes, parts)
            if len(segments) < 2:
                return None
            for segment in segments:
                phrase = base
                for attribute in segment:
                    phrase = AttributeOf(attribute, phrase)
                base = Name(self.part(render(Lookup(phrase))))
            return base.text
        return None  # arithmetic: one part

    def _value_of(self, group: tuple[Phrase, ...], attribute: str) -> str:
        """A part for a group of a sum's (or difference's) items: their total, or one item's value."""
        if len(group) > 1:
            return self.part(render(Total(attribute, group)))
        item = group[0]
        if isinstance(item, Name) and item.value:
            return item.value
        return self.part(render(Lookup(AttributeOf(attribute, item))))


def _groups(items: Sequence[Any], n: int) -> list[tuple[Any, ...]]:
    """`items` cut into min(n, len(items)) consecutive groups, as even as can be, larger first."""
    n = min(n, len(items))
    if n < 1:
        return []
    size, extra = divmod(len(items), n)
    groups, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        groups.append(tuple(items[start:end]))
        start = end
    return groups


def _completed(report: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The previous plan's steps and the completed steps' outputs, read from a failure report."""
    previous = report.split("Previous plan:", 1)[-1]
    start, end = previous.find("{"), previous.rfind("}")
    try:
        steps = json.loads(previous[start : end + 1])["steps"]
    except (ValueError, KeyError, TypeError):
        return [], {}
    completed_part = report.split("Completed steps:", 1)[-1].split("Failed step", 1)[0]
    outputs = {m.group(1): m.group(2).strip() for m in _LINE_ITEM.finditer(completed_part)}
    return steps, outputs


def _known_parts(report: str, lead: str) -> dict[str, str]:
    """The parts sub-teams answered before a failure: question (normalised) -> answer."""
    steps, outputs = _completed(report)
    return {
        normalise(fill_in(step.get("instruction", ""), outputs)): outputs[step["id"]]
        for step in steps
        if step.get("role") == lead and step.get("id") in outputs
    }


def _known_facts(report: str) -> dict[tuple[str, str], str]:
    """Facts found by the steps that completed before a failure, read from a failure report."""
    steps, outputs = _completed(report)
    facts = {}
    for step in steps:
        output = outputs.get(step.get("id"))
        if output is None:
            continue
        if step.get("tool") == "lookup":
            args = {k: fill_in(str(v), outputs) for k, v in step.get("args", {}).items()}
            facts[(name_key(args.get("entity", "")), name_key(args.get("attribute", "")))] = output
        else:
            try:
                question = parse_question(fill_in(step.get("instruction", ""), outputs))
            except QuestionError:
                continue
            if isinstance(question, Lookup) and isinstance(question.phrase.of, Name):
                facts[(name_key(question.phrase.of.text), name_key(question.phrase.attribute))] = output
    return facts


def _plan_error_applies(kind: str, steps: list[dict[str, Any]]) -> bool:
    if kind == "dropped_dependency":
        return any(s["depends_on"] for s in steps)
    if kind == "finished_too_early":
        return len(steps) >= 2
    return True


def _spoil_plan(kind, steps, rng) -> tuple[list[dict[str, Any]], str, str]:
    """Make one realistic mistake in a plan; return the steps, the text and what was done."""
    steps = json.loads(json.dumps(steps))  # a deep copy
    if kind == "dropped_dependency":
        step = rng.choice([s for s in steps if s["depends_on"]])
        lost = step["depends_on"].pop(rng.randrange(len(step["depends_on"])))
        detail = f"step {step['id']} no longer lists {lost} in depends_on"
    elif kind == "finished_too_early":
        keep = rng.randint(1, len(steps) - 1)
        steps = steps[:keep]
        detail = f"the plan stops after {keep} of its steps"
    elif kind == "wrong_tool_argument":
        detail = _spoil_step(steps, rng)
    text = _plan_text(steps)
    if kind == "malformed_json":
        text, detail = _break_json(text, rng)
    return steps, text, detail


def _spoil_step(steps: list[dict[str, Any]], rng: random.Random) -> str:
    """One wrong argument: a misspelt name or attribute (a tool will refuse it), or the
    neighbouring attribute or the opposite sign (silently wrong)."""
    candidates = [s for s in steps if s.get("tool") or _ATTRIBUTE.search(s["instruction"])]
    candidates = [s for s in candidates if not s["instruction"].startswith("Report")]
    if not candidates:
        return "nothing in the plan could take a wrong argument"
    step = rng.choice(candidates)
    args = step.get("args") or {}
    if step.get("tool") == "lookup":
        field_name = "entity" if not args["entity"].startswith("$") and rng.random() < 0.5 else "attribute"
        old = args[field_name]
        args[field_name] = (
            _misspell(old, rng) if field_name == "entity" or rng.random() < 0.5 else _neighbour(old)
        )
        return f"step {step['id']}: {field_name} {old!r} became {args[field_name]!r}"
    if step.get("tool") == "calculate":
        old = args["expression"]
        args["expression"] = old.replace("+", "-", 1) if "+" in old else old.replace("-", "+", 1)
        return f"step {step['id']}: expression {old!r} became {args['expression']!r}"
    old = _ATTRIBUTE.search(step["instruction"]).group(1)
    new = _misspell(old, rng) if rng.random() < 0.5 else _neighbour(old)
    step["instruction"] = step["instruction"].replace(f"the {old} of", f"the {new} of", 1)
    return f"step {step['id']}: the instruction asks for {new!r} instead of {old!r}"


_ATTRIBUTE = re.compile(r"\bthe ([a-z][a-z ]*?) of ")


def _misspell(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + word[-1:]
    i = rng.randrange(1, len(word) - 1)
    return word[:i] + word[i + 1 :]  # drop one inner letter


_NEIGHBOURS = {
    "population": "area",
    "area": "population",
    "age": "home island",
    "crew": "tonnage",
    "tonnage": "crew",
    "membership": "founding year",
    "price": "origin",
}


def _neighbour(attribute: str) -> str:
    return _NEIGHBOURS.get(attribute, attribute + "s")


def _break_json(text: str, rng: random.Random) -> tuple[str, str]:
    how = rng.choice(("truncated", "trailing comma", "prose around it", "single quotes"))
    if how == "truncated":
        text = text[: rng.randint(len(text) // 3, len(text) - 2)]
    elif how == "trailing comma":
        text = text[:-2] + ",]}"
    elif how == "prose around it":
        text = "Here is the plan:\n" + text + "\nLet me know if you want changes."
    else:
        text = text.replace('"', "'")
    return text, f"the plan's JSON is broken ({how})"


# --- agent turns ------------------------------------------------------------------------------

_INPUTS_HEADING = "Inputs from earlier steps:"
_REPORT = re.compile(re.escape(RESULT_TO_REPORT) + r" (.+?)\.?\s*$", re.MULTILINE)
_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'")


class _Need(Exception):
    """Raised while solving: these tool calls must be made before the answer is known."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]):
        self.calls = calls


class _Stuck(Exception):
    """Raised while solving: the answer cannot be found with what this agent has."""


class _NoTool(_Stuck):
    """Raised while solving: a fact is needed and this agent has no tool to get it."""


@dataclass
class _Knowledge:
    """What the conversation so far has taught the agent, tool result by tool result."""

    tools: tuple[str, ...]
    facts: dict[tuple[str, str], str] = field(default_factory=dict)  # (tool, key) -> result
    failures: dict[tuple[str, str], str] = field(default_factory=dict)  # (tool, key) -> error
    found: list[str] = field(default_factory=list)  # successful results, in order

    @classmethod
    def read(cls, messages: Sequence[Message], tools: tuple[str, ...]) -> _Knowledge:
        knowledge, asked = cls(tools), {}
        for m in messages:
            if isinstance(m.get("content"), str):
                continue
            for block in m["content"]:
                if block.get("type") == "tool_use":
                    asked[block["id"]] = (block["name"], block.get("input", {}))
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in asked:
                    name, args = asked[block["tool_use_id"]]
                    key = (name, _call_key(name, args))
                    if block.get("is_error"):
                        knowledge.failures[key] = _result_text(block)
                    else:
                        data = without_injections(_result_text(block))  # a planted note is not data
                        knowledge.facts[key] = data
                        knowledge.found.append(data)
        return knowledge

    def lookup(self, entity: str, attribute: str) -> str:
        key = ("lookup", _call_key("lookup", {"entity": entity, "attribute": attribute}))
        if key in self.facts:
            return self.facts[key]
        if key in self.failures:  # read the tool's error: a suggestion is worth one more try
            error = self.failures[key]
            hint = _DID_YOU_MEAN.search(error)
            if hint and error.startswith("no entity"):
                return self.lookup(hint.group(1), attribute)
            if hint:
                return self.lookup(entity, hint.group(1))
            raise _Stuck(f"I could not find the {attribute} of {entity}: {error}")
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


def _call_key(name: str, args: Mapping[str, Any]) -> str:
    if name == "lookup":
        return f"{name_key(args.get('entity', ''))}|{name_key(args.get('attribute', ''))}"
    if name == "calculate":
        return " ".join(str(args.get("expression", "")).split())
    return _compact(args)


_ONE_AT_A_TIME = re.compile(r"\bone tool (?:call )?at a time\b", re.IGNORECASE)


def _planted_call(messages: Sequence[Message], tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The first call to one of `tools` that the newest message spells out and that the
    conversation has not made yet: what a planted note asks for, as the model reads it."""
    if not messages or messages[-1].get("role") != "user":
        return None
    made = [
        (b.get("name"), b.get("input"))
        for m in messages
        if not isinstance(m.get("content"), str)
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    for name, args in find_injections(_message_text(messages[-1])):
        if name in tools and (name, args) not in made:
            return name, args
    return None


def _turn_reply(messages, tools, erring, kinds, rng, one_at_a_time=False, obeys=False) -> _Reply:
    planted = _planted_call(messages, {t.name for t in tools}) if obeys else None
    if planted:  # talked into it by a note it has just read
        name, args = planted
        detail = f"called {call_text(name, args)}, as a note it had just read asked"
        return _Reply(f"The records ask me to call {name} first.", [planted], ("followed_injection", detail))
    request = _first_user_text(messages)
    goal, _, inputs_text = request.partition(_INPUTS_HEADING)
    inputs = [m.group(2).strip() for m in _LINE_ITEM.finditer(inputs_text)]
    knowledge = _Knowledge.read(messages, tuple(t.name for t in tools))
    stuck = False
    try:
        answer = _solve(goal.strip(), inputs, knowledge)
        calls = []
    except _Need as need:
        answer, calls = None, need.calls[:1] if one_at_a_time else need.calls
    except _Stuck as problem:  # it says so, as a model would, rather than make something up
        answer, calls, stuck = str(problem), [], True

    possible = []
    if calls and "wrong_tool_argument" in kinds and any(n in ("lookup", "calculate") for n, _ in calls):
        possible.append("wrong_tool_argument")
    if calls and knowledge.found and "finished_too_early" in kinds:
        possible.append("finished_too_early")
    if answer is not None and not stuck and "hallucinated_answer" in kinds:
        possible.append("hallucinated_answer")
    if not (erring and possible):
        return _Reply(answer if answer is not None else _announce(calls), calls)

    kind = rng.choice(possible)
    if kind == "finished_too_early":
        early = knowledge.found[-1]
        return _Reply(early, [], (kind, f"answered {early!r} before making {len(calls)} more tool call(s)"))
    if kind == "hallucinated_answer":
        made_up = _hallucinate(answer, rng)
        return _Reply(made_up, [], (kind, f"answered {made_up!r} instead of {answer!r}"))
    spoilable = [i for i, (n, _) in enumerate(calls) if n in ("lookup", "calculate")]
    i = rng.choice(spoilable)
    name, args = calls[i]
    if name == "lookup":
        field_name = rng.choice(("entity", "attribute"))
        spoilt = {**args, field_name: _misspell(args[field_name], rng)}
    else:
        spoilt = {"expression": args["expression"] + " +"}
    calls = calls[:i] + [(name, spoilt)] + calls[i + 1 :]
    return _Reply(_announce(calls), calls, (kind, f"called {name} with {spoilt} instead of {args}"))


def _announce(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """The short text a model writes before its tool calls."""
    parts = []
    for name, args in calls:
        if name == "lookup":
            parts.append(f"the {args['attribute']} of {args['entity']}")
        elif name == "calculate":
            parts.append(f"{args['expression']}")
        else:
            parts.append(f"records matching {args.get('query', '')!r}")
    verb = {"lookup": "look up", "calculate": "calculate", "search": "search for"}.get(calls[0][0], "use")
    return f"I'll {verb} {'; '.join(parts)}."


def _solve(goal: str, inputs: list[str], knowledge: _Knowledge) -> str:
    """The answer to `goal`, or raise _Need (tool calls first) or _Stuck (cannot be done)."""
    reported = _REPORT.search(goal)
    if reported:  # a writer handed the result: report it
        return reported.group(1).strip()
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
    items = question.items if not isinstance(question, Difference) else (question.first, question.second)
    values, needs = [], []
    for item in items:
        try:
            values.append(_value(item, question.attribute, knowledge))
        except _Need as need:  # independent lookups go out together, in one turn
            needs += need.calls
    if needs:
        raise _Need(needs)
    if isinstance(question, Extreme):
        numbers = [_as_number(v, question.attribute) for v in values]
        best = (max if question.highest else min)(numbers)
        return _label(items[numbers.index(best)])
    sign = " + " if isinstance(question, Total) else " - "
    return knowledge.calculate(sign.join(values))


def _entity(phrase: Phrase, knowledge: _Knowledge) -> str:
    if isinstance(phrase, Name):
        return phrase.text
    return knowledge.lookup(_entity(phrase.of, knowledge), phrase.attribute)


def _value(item: Phrase, attribute: str, knowledge: _Knowledge) -> str:
    if isinstance(item, Name) and item.value:
        return item.value
    return knowledge.lookup(_entity(item, knowledge), attribute)


def _label(item: Phrase) -> str:
    return item.text if isinstance(item, Name) else render_phrase(item)


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


def _hallucinate(answer: str, rng: random.Random) -> str:
    """A plausible wrong answer: a nearby number, or another entity of the same kind."""
    try:
        value = float(answer)
    except ValueError:
        entity = ENTITIES.get(answer)
        if entity is None:  # not a name it knows: confuse it with some other name it has read
            return rng.choice([n for n in ENTITIES if n != answer])
        others = [e.name for e in ENTITIES.values() if e.kind == entity.kind and e.name != answer]
        return rng.choice(others)
    wrong = value * (1 + rng.choice((-1, 1)) * rng.uniform(0.1, 0.4))
    wrong = round(wrong) if value.is_integer() else round(wrong, 2)
    if wrong == value:
        wrong = value + rng.randint(1, 9)
    return format_number(wrong)
