"""The capstone's questions: the trade desk of the Skerrow Isles, a family the lessons never asked.

Three new question forms, each mixing shapes the lessons taught one at a time:

    What is the price of the main export of Varra in shells?           a chain, then a conversion
    Which of Varra, Tamsk or Brindle has the highest area, and by how much
    does it exceed the lowest?                                         a fan-out, a pick and a sum
    If the crew of Moth Queen is higher than that of Tidewalker, what is the
    age of the captain of Moth Queen; otherwise, of Tidewalker?       a fan-out, a pick, then a chain

A conversion needs a new tool, `convert`: the harbour exchange's rates (a crown is 12 shells)
are invented, so no model knows them and the tool is the only way. A margin's answer has two
parts, the name and the amount, and is right only when both are.

**A new mistake** (`SKIPPED_CONVERSION`): when the simulator has drawn an error for a call on
a conversion question, then three times in four (`SLIP_SHARE`) the model forgets the conversion:
a plan reports the amount in the records' unit, an agent answers with it instead of calling
`convert`. The answer looks plausible and no tool complains: only a team that checks catches it.

The simulator reads these questions here (`read`), plans them (`plan`), answers them (`answer`)
and makes the new mistake (`plan_slip`, `turn_slip`); `world.plans`, `world.solver` and
`llm.simulated` ask this module first, and everything else in them is as before.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from agentlab.llm.base import Tool
from agentlab.prompts import RESULT_TO_REPORT
from agentlab.world.data import ENTITIES, KINDS, RELATIONS
from agentlab.world.tasks import (
    Arithmetic,
    AttributeOf,
    Name,
    Phrase,
    Task,
    parse_phrase,
    relation_walk,
    render_phrase,
    resolve,
)
from agentlab.world.tools import ToolError, calculate, format_number, lookup, name_key

SKIPPED_CONVERSION = "skipped_conversion"
SLIP_SHARE = 0.75  # of the erring calls on a conversion question, the share that skip it

# --- the harbour exchange: units and the convert tool -----------------------------------------

UNIT_OF = {"price": "crowns", "tonnage": "tons", "area": "km²", "age": "years"}  # the records' units
RATES = {
    ("crowns", "shells"): 12,
    ("crowns", "marks"): 0.25,
    ("tons", "barrels"): 6,
    ("km²", "hides"): 40,
    ("years", "moons"): 13,
}  # (from, to) -> how many `to` make one `from`
TARGETS = {unit: [to for (frm, to) in RATES if frm == unit] for unit in UNIT_OF.values()}
_ALIASES = {"km2": "km²", "crown": "crowns", "ton": "tons", "year": "years"}


def _unit(text: str) -> str:
    key = " ".join(str(text).split()).casefold()
    return _ALIASES.get(key, key)


def convert(amount: str, unit: str, to: str) -> str:
    """`amount` in `unit`, converted to `to` at the harbour exchange's rates (either way round)."""
    try:
        value = float(str(amount).replace(",", ""))
    except ValueError:
        raise ToolError(f"convert needs a number as its amount, got {amount!r}") from None
    frm, dest = _unit(unit), _unit(to)
    if (frm, dest) in RATES:
        return format_number(round(value * RATES[frm, dest], 4))
    if (dest, frm) in RATES:
        return format_number(round(value / RATES[dest, frm], 4))
    pairs = ", ".join(f"{a} -> {b}" for a, b in RATES)
    raise ToolError(f"the exchange cannot convert {unit!r} to {to!r}; it converts {pairs} (and back)")


CONVERT_TOOL = Tool(
    "convert",
    "Convert an amount between the units of the Skerrow Isles at the harbour exchange's rates: "
    "crowns, shells, marks; tons, barrels; km², hides; years, moons.",
    {
        "type": "object",
        "properties": {
            "amount": {"type": "string", "description": "a number, e.g. '58' (or $s2 in a plan)"},
            "unit": {"type": "string", "description": "the amount's unit, e.g. 'crowns'"},
            "to": {"type": "string", "description": "the unit wanted, e.g. 'shells'"},
        },
        "required": ["amount", "unit", "to"],
        "additionalProperties": False,
    },
)


# --- the question forms -------------------------------------------------------------------------


@dataclass(frozen=True)
class Convert:  # "What is <phrase ending in a quantity with a unit> in <unit>?"
    phrase: AttributeOf
    to: str


@dataclass(frozen=True)
class Amount:  # a plan's step: "What is 58 crowns in shells?"
    amount: str
    unit: str
    to: str


@dataclass(frozen=True)
class Margin:  # "Which of <items> has the highest <attribute>, and by how much ...?"
    attribute: str
    items: tuple[str, ...]


@dataclass(frozen=True)
class Conditional:  # "If the <attribute> of <first> is higher than ..., what is <path> of <first>; ..."
    attribute: str
    first: str
    second: str
    higher: bool
    path: tuple[str, ...]  # the chain followed from the chosen one, innermost attribute first


CapstoneQuestion = Convert | Amount | Margin | Conditional | Arithmetic


def _chain(path: tuple[str, ...], start: str) -> Phrase:
    phrase: Phrase = Name(start)
    for attribute in path:
        phrase = AttributeOf(attribute, phrase)
    return phrase


def _who(attribute: str) -> str:
    return "Who" if RELATIONS.get(attribute) == "person" else "What"


def render_capstone(q: CapstoneQuestion) -> str:
    """The question as a sentence."""
    if isinstance(q, Convert):
        return f"What is {render_phrase(q.phrase)} in {q.to}?"
    if isinstance(q, Amount):
        return f"What is {q.amount} {q.unit} in {q.to}?"
    if isinstance(q, Arithmetic):
        return f"What is {q.expression}?"
    if isinstance(q, Margin):
        names = f"{', '.join(q.items[:-1])} or {q.items[-1]}"
        return f"Which of {names} has the highest {q.attribute}, and by how much does it exceed the lowest?"
    side = "higher" if q.higher else "lower"
    branch = render_phrase(_chain(q.path, q.first))
    return (
        f"If the {q.attribute} of {q.first} is {side} than that of {q.second}, "
        f"{_who(q.path[-1]).lower()} is {branch}; otherwise, of {q.second}?"
    )


_UNITS = "|".join(sorted({to for _, to in RATES}))
_CONVERT = re.compile(rf"(?:what|who) is (the .+?) in ({_UNITS})\?", re.IGNORECASE)
_AMOUNT = re.compile(rf"what is (-?[\d.,]+) ([^\s?]+) in ({_UNITS})\?", re.IGNORECASE)
_MARGIN = re.compile(
    r"which of (.+?) has the highest (.+?), and by how much does it exceed the lowest\?", re.IGNORECASE
)
_CONDITIONAL = re.compile(
    r"if the (.+?) of (.+?) is (higher|lower) than that of (.+?), (?:what|who) is (the .+?); "
    r"otherwise, of (.+?)\?",
    re.IGNORECASE,
)
_SPREAD = re.compile(r"what is (max\([\d., ]+\) - min\([\d., ]+\))\?", re.IGNORECASE)  # a margin's step
_ITEMS = re.compile(r"\s*,\s*(?:or\s+)?|\s+or\s+")


@functools.lru_cache(maxsize=4096)  # the simulator reads every request it is sent
def read(text: str) -> CapstoneQuestion | None:
    """The capstone question in `text` (first line of it that holds one), or None if there is none."""
    if "?" not in text or RESULT_TO_REPORT in text:
        return None
    if m := _SPREAD.search(text):
        return Arithmetic(m.group(1))
    if m := _AMOUNT.search(text):
        return Amount(m.group(1).replace(",", ""), m.group(2), m.group(3).lower())
    if m := _CONVERT.search(text):
        phrase = parse_phrase(m.group(1))
        return Convert(phrase, m.group(2).lower()) if isinstance(phrase, AttributeOf) else None
    if m := _MARGIN.search(text):
        return Margin(m.group(2).lower(), tuple(p for p in _ITEMS.split(m.group(1).strip()) if p))
    if m := _CONDITIONAL.search(text):
        branch, path = parse_phrase(m.group(5)), []
        while isinstance(branch, AttributeOf):
            path.insert(0, branch.attribute)
            branch = branch.of
        if path and name_key(branch.text) == name_key(m.group(2)):
            higher = m.group(3).lower() == "higher"
            return Conditional(m.group(1).lower(), m.group(2), m.group(4), higher, tuple(path))
    return None


def base_unit(phrase: AttributeOf) -> str:
    return UNIT_OF.get(phrase.attribute, "units")


# --- gold answers and grading ---------------------------------------------------------------------


def _value(name: str, attribute: str) -> float:
    return float(lookup(name, attribute))


def _chosen(q: Conditional) -> str:
    first, second = _value(q.first, q.attribute), _value(q.second, q.attribute)
    return q.first if (first > second) == q.higher else q.second


def gold(q: CapstoneQuestion) -> str:
    """The correct answer, from the records."""
    if isinstance(q, Convert):
        return convert(resolve(q.phrase), base_unit(q.phrase), q.to)
    if isinstance(q, Amount):
        return convert(q.amount, q.unit, q.to)
    if isinstance(q, Arithmetic):
        return calculate(q.expression)
    if isinstance(q, Margin):
        values = {n: _value(n, q.attribute) for n in q.items}
        top = max(values, key=values.get)
        return f"{top}, by {format_number(values[top] - min(values.values()))}"
    return resolve(_chain(q.path, _chosen(q)))


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class CapstoneTask(Task):
    """A task of the capstone family. A margin's answer is right when it names the one right
    entity and gives the one right amount ("Tidewalker, by 16" or "Tidewalker (16 more)")."""

    def check(self, given: str | None) -> bool:
        if self.family != "margin" or given is None:
            return super().check(given)
        name, amount = self.answer.split(", by ")
        text = str(given).replace(",", "")
        mentioned = {n for n in ENTITIES if re.search(rf"\b{re.escape(n)}\b", text, re.IGNORECASE)}
        return mentioned == {name} and [float(x) for x in _NUMBER.findall(text)] == [float(amount)]


# --- generators -------------------------------------------------------------------------------------

FAMILIES = ("convert", "margin", "conditional")


def convert_task(rng: random.Random, hops: int, task_id: str) -> CapstoneTask:
    """A chain of `hops` lookups ending in a quantity with a unit, then a conversion."""
    for _ in range(1000):  # walks until one ends on an entity with a quantity that has a unit
        if (walked := relation_walk(rng, hops)) is None:
            continue
        phrase, entity, _seen = walked
        units = [a for a in KINDS[entity.kind] if a in UNIT_OF]
        if units:
            attribute = rng.choice(units)
            q = Convert(AttributeOf(attribute, phrase), rng.choice(TARGETS[UNIT_OF[attribute]]))
            return _task(task_id, "convert", q, hops)
    raise RuntimeError(f"could not build a conversion after {hops} hops")  # pragma: no cover


def margin_task(rng: random.Random, width: int, task_id: str) -> CapstoneTask:
    """`width` entities of one kind with distinct values of a quantity: who is highest, by how much."""
    options = [
        (k, a)
        for k, labels in KINDS.items()
        for a in labels
        if a in ("population", "area", "crew", "tonnage", "membership", "price", "age")
    ]
    while True:
        kind, attribute = rng.choice(options)
        names = rng.sample([e.name for e in ENTITIES.values() if e.kind == kind], width)
        if len({ENTITIES[n].attributes[attribute] for n in names}) == width:
            return _task(task_id, "margin", Margin(attribute, tuple(names)), width)


def conditional_task(rng: random.Random, hops: int, task_id: str) -> CapstoneTask:
    """Compare two entities, then follow a chain of `hops` lookups from the one the condition picks."""
    while True:
        kind = rng.choice([k for k in KINDS if any(a in RELATIONS for a in KINDS[k])])
        quantities = [a for a in KINDS[kind] if a not in RELATIONS and "year" not in a]
        first, second = rng.sample([e.name for e in ENTITIES.values() if e.kind == kind], 2)
        attribute = rng.choice(quantities)
        if _value(first, attribute) == _value(second, attribute):
            continue
        path, here = [], kind
        for _ in range(hops - 1):
            attribute_next = rng.choice([a for a in KINDS[here] if a in RELATIONS])
            path.append(attribute_next)
            here = RELATIONS[attribute_next]
        path.append(rng.choice([a for a in KINDS[here] if path or a != attribute]))
        q = Conditional(attribute, first, second, rng.random() < 0.5, tuple(path))
        return _task(task_id, "conditional", q, hops + 2)


def _task(task_id: str, family: str, q: CapstoneQuestion, size: int) -> CapstoneTask:
    return CapstoneTask(task_id, family, render_capstone(q), gold(q), size)


def make_capstone_tasks(count: int, seed: int) -> list[CapstoneTask]:
    """A reproducible mix of the three forms, in turn: conversions after chains of 1-3 hops,
    margins of 2-4 items, conditionals with chains of 1-2 hops."""
    rng = random.Random(f"capstone-{seed}")
    makers = (
        lambda i: convert_task(rng, rng.choice((1, 2, 3)), i),
        lambda i: margin_task(rng, rng.choice((2, 3, 4)), i),
        lambda i: conditional_task(rng, rng.choice((1, 2)), i),
    )
    return [makers[i % 3](f"c{i + 1:02d}") for i in range(count)]
