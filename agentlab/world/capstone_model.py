"""How the simulated model works on the capstone's questions: how hard they are, the plans it
writes, its answers, and the mistake it makes on them (`SKIPPED_CONVERSION`).

Like `world.plans` and `world.solver` for the lessons' questions, it knows the grammar of the
trade desk (`world.capstone`) and none of the data: facts come from tool results. `llm.simulated`
asks `steps_needed` here; `world.plans` and `world.solver` ask `read` first, and hand a capstone
question to `plan` and `answer`, and their spoiling to `plan_slip` and `turn_slip`.
"""

from __future__ import annotations

import random
import re
from typing import Any

from agentlab.world.capstone import (
    SKIPPED_CONVERSION,
    SLIP_SHARE,
    Amount,
    CapstoneQuestion,
    Convert,
    Margin,
    base_unit,
    read,
    render_capstone,
)
from agentlab.world.tasks import Arithmetic, Extreme, Name, Phrase, render, render_phrase
from agentlab.world.tasks import steps_needed as grammar_steps
from agentlab.world.tools import format_number

__all__ = [
    "answer",
    "plan",
    "plan_slip",
    "read",
    "references",
    "render_capstone",
    "steps_needed",
    "turn_slip",
]


def references(result: str) -> list[str]:
    """The "$s3"s a plan's result refers to ("$s4, by $s5" for a margin)."""
    return re.findall(r"\$s\d+", result)


def steps_needed(text: str) -> int:
    """As `world.tasks.steps_needed`, for the capstone's questions too."""
    q = read(text)
    if q is None:
        return grammar_steps(text)
    if isinstance(q, Convert):
        return grammar_steps(f"What is {render_phrase(q.phrase)}?") + 1
    if isinstance(q, Amount | Arithmetic):
        return 1
    if isinstance(q, Margin):
        return len(q.items) + 2
    return 3 + len(q.path)


def plan(writer: Any, q: CapstoneQuestion) -> str:
    """Add the steps that work out `q` to a `world.plans` plan writer; a reference to the answer."""
    if isinstance(q, Arithmetic):
        return writer.combine([q.expression], "+")
    if isinstance(q, Convert | Amount):
        if isinstance(q, Convert):
            amount, unit = writer.entity(q.phrase), base_unit(q.phrase)
        else:
            amount, unit = q.amount, q.unit
        holder = next((r for r, tools in writer.roles.items() if "convert" in tools), writer.counter)
        args = {"amount": amount, "unit": unit, "to": q.to}
        return writer.add(holder, f"What is {amount} {unit} in {q.to}?", [amount], "convert", args)
    if isinstance(q, Margin):
        refs = [writer.fact(name, q.attribute) for name in q.items]
        compare = render(
            Extreme(q.attribute, tuple(Name(n, r) for n, r in zip(q.items, refs, strict=True)), True)
        )
        top = writer.add(writer.counter, compare, refs)
        spread = f"max({', '.join(refs)}) - min({', '.join(refs)})"
        gap = writer.add(writer.counter, f"What is {spread}?", refs, "calculate", {"expression": spread})
        return f"{top}, by {gap}"
    refs = [writer.fact(q.first, q.attribute), writer.fact(q.second, q.attribute)]
    items = (Name(q.first, refs[0]), Name(q.second, refs[1]))
    here = writer.add(writer.counter, render(Extreme(q.attribute, items, q.higher)), refs)
    for attribute in q.path:
        here = writer.fact(here, attribute)
    return here


def answer(q: CapstoneQuestion, knowledge: Any) -> str:
    """An agent's answer to `q` from what it knows (`world.solver`'s knowledge): it raises there
    for the tool calls it still needs, or when it is stuck."""
    if isinstance(q, Arithmetic):
        return knowledge.calculate(q.expression)
    if isinstance(q, Convert | Amount):
        if isinstance(q, Convert):
            amount = knowledge.lookup(_entity(q.phrase.of, knowledge), q.phrase.attribute)
            unit = base_unit(q.phrase)
        else:
            amount, unit = q.amount, q.unit
        return knowledge.use("convert", {"amount": amount, "unit": unit, "to": q.to})
    names = q.items if isinstance(q, Margin) else (q.first, q.second)
    values, needs = [], []
    for name in names:
        try:
            values.append(float(knowledge.lookup(name, q.attribute)))
        except knowledge.Need as need:  # independent lookups go out together
            needs += need.calls
    if needs:
        raise knowledge.Need(needs)
    if isinstance(q, Margin):
        top = names[values.index(max(values))]
        gap = knowledge.calculate(f"{format_number(max(values))} - {format_number(min(values))}")
        return f"{top}, by {gap}"
    here = names[0] if (values[0] > values[1]) == q.higher else names[1]
    for attribute in q.path:
        here = knowledge.lookup(here, attribute)
    return here


def _entity(phrase: Phrase, knowledge: Any) -> str:
    return (
        phrase.text
        if isinstance(phrase, Name)
        else knowledge.lookup(_entity(phrase.of, knowledge), phrase.attribute)
    )


def plan_slip(task: str, steps: list[dict[str, Any]], kinds: tuple[str, ...], rng: random.Random):
    """The new mistake in a plan: for a conversion question on a call that errs, with the
    chance `SLIP_SHARE` the conversion step is left out and the report hands over the amount as the
    records give it. Returns (steps, (kind, detail)), or None (and draws nothing) otherwise."""
    if not kinds or not isinstance(read(task), Convert):
        return None
    if rng.random() >= SLIP_SHARE:
        return None
    convert_step = next((s for s in steps if s.get("tool") == "convert"), None)
    if convert_step is None:
        return None
    amount, gone = convert_step["args"]["amount"], convert_step["id"]
    steps = [s for s in steps if s is not convert_step]
    for step in steps:  # whatever used the conversion now uses the amount itself
        if gone in step["depends_on"]:
            step["instruction"] = step["instruction"].replace(f"${gone}", amount)
            needs = set(step["depends_on"]) - {gone} | ({amount[1:]} if amount.startswith("$") else set())
            step["depends_on"] = sorted(needs, key=lambda s: int(s[1:]))
    return steps, (
        SKIPPED_CONVERSION,
        f"the plan reports {amount} {convert_step['args']['unit']}, unconverted",
    )


def turn_slip(calls: list, kinds: tuple[str, ...], rng: random.Random):
    """The new mistake in an agent's turn: about to call `convert`, on a call that errs, with the
    chance `SLIP_SHARE` it answers with the amount instead. (answer, error), or None (nothing drawn)."""
    if not kinds or not calls or calls[0][0] != "convert" or rng.random() >= SLIP_SHARE:
        return None
    args = calls[0][1]
    return str(args["amount"]), (SKIPPED_CONVERSION, f"answered {args['amount']} {args['unit']}, unconverted")
