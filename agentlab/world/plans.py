"""The plans a competent planner writes for the task world's questions, as the simulator writes them.

Read the question with the world's grammar and write one step per lookup, one for the join of a
fan-out or the arithmetic, and one that reports the result (`prompts.report_instruction`), each
step's instruction the question it answers. With direct tool steps (the schema has a "tool"
field) a lookup or a calculation names its tool and arguments, with "$s1" for an earlier
step's output; without them every step is a question for a role's agent. A **replan** reads the
failure report: what the completed steps found is used as it is, not looked up again.

A **manager's plan** (notebook 05), when the team has a role that leads sub-teams: the question is
split into at most N whole sub-questions for it (groups of a fan-out's items, segments of a
chain), joined and reported as in any plan; a question that does not split goes to one sub-team
whole. On a replan, parts that completed are reused as they are.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from agentlab.prompts import read_failure_report, read_lead, read_team, report_instruction, task_of
from agentlab.world import capstone_model as capstone
from agentlab.world.injection import call_text, planted_call
from agentlab.world.mistakes import plan_text
from agentlab.world.solver import Conversation, Reply
from agentlab.world.tasks import (
    AttributeOf,
    Difference,
    Extreme,
    Lookup,
    Name,
    Phrase,
    Question,
    QuestionError,
    Total,
    label,
    normalise,
    parse_question,
    render,
)
from agentlab.world.tools import name_key


def plan_reply(
    seen: Conversation, schema: Mapping[str, Any], kinds: tuple[str, ...], rng: random.Random, obeys: bool
) -> Reply:
    """The plan for the task in `seen`, by the team in its system prompt, as JSON held to `schema`
    (`world.mistakes` spoils it if `kinds` allows). With `obeys`, a call that a planted note asks
    for is written in as its first step, a direct tool step for a role that holds the tool."""
    step_schema = schema.get("properties", {}).get("steps", {}).get("items", {})
    listed = read_team(seen.system)  # role -> its tools; the schema's role enum decides which roles exist
    enum = step_schema.get("properties", {}).get("role", {}).get("enum")
    roles = {role: listed.get(role, ()) for role in enum} if enum else (listed or {"agent": ()})
    direct = "tool" in step_schema.get("properties", {})  # else a planted call has nowhere to go
    lead = read_lead(seen.system)  # (the role that leads sub-teams, the most parts it may be given)
    writer = _PlanWriter(roles, direct, seen.report, lead if lead and lead[0] in roles else None)
    team_tools = {t for ts in roles.values() for t in ts}
    planted = planted_call(seen.newest, team_tools, seen.calls) if obeys and direct else None
    if planted:  # talked into it: the note's call becomes a step of the new plan
        name, args = planted
        role = next(r for r, tools in roles.items() if name in tools)
        writer.add(role, f"Do what the note in the records asks: {call_text(name, args)}", [], name, args)
    task = task_of(seen.request)
    steps = writer.write(task)
    slip = capstone.plan_slip(task, steps, kinds, rng)  # the capstone's own mistake, on its questions
    text, error = plan_text(steps, kinds, rng) if slip is None else (json.dumps({"steps": slip[0]}), slip[1])
    if planted and error is None:
        error = ("followed_injection", f"the plan calls {call_text(*planted)}, as a note it read asked")
    return Reply(text, [], error)


class _PlanWriter:
    """Writes the steps a competent planner would for one question of the world's grammar."""

    def __init__(self, roles, direct: bool, report: str | None, lead: tuple[str, int] | None):
        names, self.roles = list(roles), roles
        self.finder = next((r for r in names if "lookup" in roles[r]), names[0])
        self.counter = next((r for r in names if "calculate" in roles[r]), self.finder)
        self.writer = next((r for r in reversed(names) if not roles[r]), names[-1])
        self.direct = direct
        self.lead, self.parts = lead or (None, 0)
        self.known, self.known_parts = _known(report, self.lead) if report else ({}, {})
        self.steps: list[dict[str, Any]] = []

    def write(self, task: str) -> list[dict[str, Any]]:
        """The plan: the steps that work the answer out (or a manager's parts), then the report."""
        if special := capstone.read(task):  # the capstone's questions (a manager hands them on whole)
            result = self.part(task) if self.lead else capstone.plan(self, special)
            text = capstone.render_capstone(special)
            self.add(self.writer, report_instruction(text, result), capstone.references(result))
            return self.steps
        try:
            question = parse_question(task)
        except QuestionError:  # not a question it can decompose: hand it over whole
            result = self.part(task) if self.lead else self.add(self.finder, task, [])
            self.add(self.writer, report_instruction(task, result, in_a_few_words=False), [result])
            return self.steps
        result = self.work_out(question) if self.lead is None else self.split(question)
        if result is None:  # a manager's question that does not split: one sub-team takes it whole
            result = self.part(render(question))
        self.add(self.writer, report_instruction(render(question), result), [result])
        return self.steps

    def add(self, role, instruction, inputs, tool=None, args=None) -> str:
        """Append a step, after the steps that `inputs` refer to ("$s1"); return a reference to it.
        Its instruction says what it is for, as a question; a direct tool step also says how to get
        it (tool and args), so a reader can check one against the other."""
        step_id = f"s{len(self.steps) + 1}"
        step = {"id": step_id, "role": role, "instruction": instruction}
        needs = {r[1:] for r in inputs if r.startswith("$")}
        step["depends_on"] = sorted(needs, key=lambda step_id: int(step_id[1:]))  # s2 before s10
        if tool and self.direct:
            step["tool"], step["args"] = tool, args
        self.steps.append(step)
        return "$" + step_id

    def work_out(self, q: Question) -> str:
        """A reference to the answer to `q`, adding the steps that work it out."""
        if isinstance(q, Lookup):
            return self.entity(q.phrase)
        if isinstance(q, Extreme):
            labelled = []
            for item in q.items:
                name = self.entity(item)
                labelled.append(Name(name, self.fact(name, q.attribute)))
            compare = render(Extreme(q.attribute, tuple(labelled), q.highest))
            return self.add(self.counter, compare, [n.text for n in labelled] + [n.value for n in labelled])
        if isinstance(q, Total | Difference):
            refs = [self.fact(self.entity(item), q.attribute) for item in q.items]
            return self.combine(refs, "-" if isinstance(q, Difference) else "+")
        return self.combine([q.expression], "+")  # arithmetic

    def entity(self, phrase: Phrase) -> str:
        """A reference to (or the literal name of) what the phrase names, adding lookup steps."""
        if isinstance(phrase, Name):
            return phrase.text
        return self.fact(self.entity(phrase.of), phrase.attribute)

    def fact(self, entity: str, attribute: str) -> str:
        known = self.known.get((name_key(entity), name_key(attribute)))
        if known is not None:
            return known
        args = {"entity": entity, "attribute": attribute}
        return self.add(self.finder, f"What is the {attribute} of {entity}?", [entity], "lookup", args)

    def combine(self, refs: list[str], sign: str) -> str:
        expression = f" {sign} ".join(refs)
        return self.add(self.counter, f"What is {expression}?", refs, "calculate", {"expression": expression})

    # --- a manager's plan: parts for sub-teams ---------------------------------------------

    def part(self, question: str, inputs: Sequence[str] = ()) -> str:
        """A reference to a sub-team's answer to `question`, or the answer if a replan has it."""
        known = self.known_parts.get(normalise(question))
        if known is not None:
            return known
        return self.add(self.lead, question, list(inputs))

    def split(self, q: Question) -> str | None:
        """At most `self.parts` parts of `q` and their join; None when `q` does not split in two."""
        if isinstance(q, Total | Difference):
            groups = _groups(q.items, self.parts)
            if len(groups) < 2:
                return None
            refs = [self._value_of(group, q.attribute) for group in groups]
            return self.combine(refs, "-" if isinstance(q, Difference) else "+")
        if isinstance(q, Extreme):  # the winners of each group meet in one more part
            groups = _groups(q.items, self.parts - 1)
            if len(groups) < 2:
                return None
            winners = [
                self.part(render(Extreme(q.attribute, group, q.highest)))
                if len(group) > 1
                else label(group[0])
                for group in groups
            ]
            return self.part(
                render(Extreme(q.attribute, tuple(Name(w) for w in winners), q.highest)), winners
            )
        if isinstance(q, Lookup):  # a chain: consecutive segments, each starting from the last one's answer
            attributes, base = [], q.phrase
            while isinstance(base, AttributeOf):
                attributes.insert(0, base.attribute)
                base = base.of
            segments = _groups(attributes, self.parts)
            if len(segments) < 2:
                return None
            for segment in segments:
                phrase = base
                for attribute in segment:
                    phrase = AttributeOf(attribute, phrase)
                base = Name(self.part(render(Lookup(phrase)), [base.text]))
            return base.text
        return None  # arithmetic: one part

    def _value_of(self, group: tuple[Phrase, ...], attribute: str) -> str:
        """A part for a group of a sum's (or difference's) items: their total, or one item's value."""
        if len(group) > 1:
            return self.part(render(Total(attribute, group)))
        item = group[0]
        return item.value or self.part(render(Lookup(AttributeOf(attribute, item))))


def _groups(items: Sequence[Any], n: int) -> list[tuple[Any, ...]]:
    """`items` cut into min(n, len(items)) consecutive groups, as even as can be, larger first."""
    n = min(n, len(items))
    if n < 1:
        return []
    size, extra = divmod(len(items), n)
    starts = [i * size + min(i, extra) for i in range(n + 1)]  # the first `extra` groups one larger
    return [tuple(items[start:end]) for start, end in pairwise(starts)]


# --- a replan: what the failure report says was found ------------------------------------------


def _known(report: str, lead: str | None) -> tuple[dict[tuple[str, str], str], dict[str, str]]:
    """What the steps that completed before a failure found: facts, (entity, attribute) -> value;
    and the parts that sub-teams (led by `lead`) answered, question (normalised) -> answer."""
    steps, outputs = read_failure_report(report)
    facts, parts = {}, {}
    for step in steps:
        output = outputs.get(step.get("id"))
        if output is None:
            continue
        if lead and step.get("role") == lead:
            parts[normalise(step.get("instruction", ""))] = output
        if step.get("tool") == "lookup":
            args = step.get("args", {})
            facts[(name_key(args.get("entity", "")), name_key(args.get("attribute", "")))] = output
            continue
        try:
            question = parse_question(step.get("instruction", ""))
        except QuestionError:
            continue
        if isinstance(question, Lookup) and isinstance(question.phrase.of, Name):
            facts[(name_key(question.phrase.of.text), name_key(question.phrase.attribute))] = output
    return facts, parts
