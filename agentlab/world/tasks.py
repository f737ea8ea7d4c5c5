"""Questions about the Skerrow Isles: their grammar, seeded generators, gold answers, and grading.

Every question the kit asks comes from a small grammar, so it can be written
(`render`), read back (`parse_question`) and answered from the records
(`gold_answer`). A *phrase* names an entity, directly ("Varra") or through a
chain of attributes ("the home island of the captain of Silver Heron"); each
"of" is one lookup, which is what makes a chain of n dependent hops. The
question forms:

    What is the population of Varra?                       a single lookup (1 hop)
    What is the age of the governor of the home island of Jory Pike?   a chain of hops
    What is the total crew of Silver Heron, Moth Queen and Tidewalker?   fan-out + sum
    How much greater is the area of Brindle than that of Tamsk?        fan-out + difference
    Which has the highest price: Amberfish, Bluetin or Emberpeat?       fan-out + comparison
    What is 2140 + 3875?                                    arithmetic

An item may carry a value already found, in brackets: "Varra (2140)". That is
how a step hands a number it was given to the next agent in a plan.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from agentlab.prompts import RESULT_TO_REPORT
from agentlab.valid import number
from agentlab.world.data import ENTITIES, KINDS, QUANTITIES, RELATIONS, Entity
from agentlab.world.tools import calculate, format_number, lookup


class QuestionError(ValueError):
    """Text that the world's question grammar cannot read."""


# --- the grammar's pieces ----------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """An entity named directly; `value` is a fact about it already known (written "Varra (2140)")."""

    text: str
    value: str | None = None


@dataclass(frozen=True)
class AttributeOf:
    """ "the <attribute> of <phrase>": one lookup on whatever the inner phrase names."""

    attribute: str
    of: Phrase
    value = None  # only a name carries a known value ("Varra (2140)"): this takes a lookup


Phrase = Name | AttributeOf


@dataclass(frozen=True)
class Lookup:
    phrase: AttributeOf


@dataclass(frozen=True)
class Total:
    attribute: str
    items: tuple[Phrase, ...]


@dataclass(frozen=True)
class Difference:
    attribute: str
    first: Phrase
    second: Phrase

    @property
    def items(self) -> tuple[Phrase, Phrase]:  # as a Total's or an Extreme's
        return (self.first, self.second)


@dataclass(frozen=True)
class Extreme:
    attribute: str
    items: tuple[Phrase, ...]
    highest: bool


@dataclass(frozen=True)
class Arithmetic:
    expression: str


Question = Lookup | Total | Difference | Extreme | Arithmetic


# --- writing questions ---------------------------------------------------------------------


def render_phrase(phrase: Phrase) -> str:
    if isinstance(phrase, AttributeOf):
        return f"the {phrase.attribute} of {render_phrase(phrase.of)}"
    return phrase.text if phrase.value is None else f"{phrase.text} ({phrase.value})"


def render(question: Question) -> str:
    """The question as a sentence."""
    if isinstance(question, Lookup):
        who = "Who" if RELATIONS.get(question.phrase.attribute) == "person" else "What"
        return f"{who} is {render_phrase(question.phrase)}?"
    if isinstance(question, Total):
        return f"What is the total {question.attribute} of {_join(question.items, 'and')}?"
    if isinstance(question, Difference):
        first, second = render_phrase(question.first), render_phrase(question.second)
        return f"How much greater is the {question.attribute} of {first} than that of {second}?"
    if isinstance(question, Extreme):
        most = "highest" if question.highest else "lowest"
        return f"Which has the {most} {question.attribute}: {_join(question.items, 'or')}?"
    return f"What is {question.expression}?"


def label(item: Phrase) -> str:
    """How an answer names an item of a question: its name, or the phrase that names it."""
    return item.text if isinstance(item, Name) else render_phrase(item)


def _join(items: tuple[Phrase, ...], word: str) -> str:
    names = [render_phrase(p) for p in items]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {word} {names[-1]}"


# --- reading questions -----------------------------------------------------------------------

_QUESTION = re.compile(r"\b(?:What|Who|Which|How much)\b[^?\n]*\??", re.IGNORECASE)
_TOTAL = re.compile(r"(?:what|who) is the total (.+?) of (.+)", re.IGNORECASE)
_DIFFERENCE = re.compile(
    r"how much (?:greater|larger|more|higher|bigger) is the (.+?) of (.+?) than that of (.+)", re.IGNORECASE
)
_EXTREME = re.compile(
    r"which(?: \w+)? has the (highest|largest|greatest|most|lowest|smallest|fewest|least) (.+?): (.+)",
    re.IGNORECASE,
)
_WHAT_IS = re.compile(r"(?:what|who) is (.+)", re.IGNORECASE)
_ARITHMETIC = re.compile(r"[\d\s.+\-*/%()]*\d[\d\s.+\-*/%()]*")
_ATTRIBUTE_OF = re.compile(r"the (.+?) of (.+)", re.IGNORECASE)
_KNOWN_VALUE = re.compile(r"(.+?)\s*\(([^()]*)\)")
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def parse_phrase(text: str) -> Phrase:
    text = " ".join(text.split()).strip(" .")
    match = _ATTRIBUTE_OF.fullmatch(text)
    if match:
        return AttributeOf(match.group(1).lower(), parse_phrase(match.group(2)))
    known = _KNOWN_VALUE.fullmatch(text)
    if known:
        return Name(known.group(1), known.group(2).strip())
    if not text:
        raise QuestionError("an empty name where an entity was expected")
    return Name(text)


@functools.lru_cache(maxsize=4096)  # the simulator reads the same request at every turn of a loop
def parse_question(text: str) -> Question:
    """Read a question in the world's grammar (found inside `text`); QuestionError if there is none."""
    found = _QUESTION.search(text)  # it may sit inside a longer instruction
    if found is None:
        raise QuestionError(f"no question (What/Who/Which/How much ...?) found in {text!r}")
    body = " ".join(found.group(0).split()).rstrip("?").strip()
    if match := _TOTAL.fullmatch(body):
        return Total(match.group(1).lower(), _items(match.group(2)))
    if match := _DIFFERENCE.fullmatch(body):
        return Difference(match.group(1).lower(), parse_phrase(match.group(2)), parse_phrase(match.group(3)))
    if match := _EXTREME.fullmatch(body):
        highest = match.group(1).lower() in ("highest", "largest", "greatest", "most")
        return Extreme(match.group(2).lower(), _items(match.group(3)), highest)
    if match := _WHAT_IS.fullmatch(body):
        inner = match.group(1).strip()
        if _ARITHMETIC.fullmatch(inner):
            return Arithmetic(inner)
        phrase = parse_phrase(inner)
        if isinstance(phrase, AttributeOf):
            return Lookup(phrase)
    raise QuestionError(f"cannot read {found.group(0)!r}: it is not one of the world's question forms")


def _items(text: str) -> tuple[Phrase, ...]:
    return tuple(parse_phrase(part) for part in _LIST_SEPARATOR.split(text.strip()) if part.strip())


# --- answering from the records (the gold answers) ------------------------------------------


def resolve(phrase: Phrase) -> str:
    """What a phrase names or equals, read straight from the records."""
    if isinstance(phrase, Name):
        return phrase.text
    return lookup(resolve(phrase.of), phrase.attribute)


def _number(phrase: Phrase, attribute: str) -> float:
    return float(phrase.value or lookup(resolve(phrase), attribute))


def gold_answer(question: str | Question) -> str:
    """The correct answer to any question in the grammar, computed from the world's data."""
    q = parse_question(question) if isinstance(question, str) else question
    if isinstance(q, Lookup):
        return resolve(q.phrase)
    if isinstance(q, Total):
        return format_number(sum(_number(p, q.attribute) for p in q.items))
    if isinstance(q, Difference):
        return format_number(_number(q.first, q.attribute) - _number(q.second, q.attribute))
    if isinstance(q, Extreme):
        values = {label(p): _number(p, q.attribute) for p in q.items}
        best = (max if q.highest else min)(values.values())
        return " and ".join(name for name, value in values.items() if value == best)
    return calculate(q.expression)


@functools.lru_cache(maxsize=4096)  # asked of every request the simulator reads (as parse_question)
def steps_needed(text: str) -> int:
    """How many tool steps a careful agent takes to answer the question in `text`: one per
    lookup (values given in brackets are known already) and one for the join of a fan-out or a
    calculation. 0 when there is nothing to work out: no question of the grammar, or a result
    handed over to report. A rough measure of how hard a request is."""
    if RESULT_TO_REPORT in text:
        return 0
    try:
        q = parse_question(text)
    except QuestionError:
        return 0
    if isinstance(q, Lookup):
        return _hops(q.phrase)
    if isinstance(q, Arithmetic):
        return 1
    return 1 + sum(_hops(p) + (0 if p.value else 1) for p in q.items)


def _hops(phrase: Phrase) -> int:
    return 0 if isinstance(phrase, Name) else 1 + _hops(phrase.of)


# --- grading -----------------------------------------------------------------------------------


def normalise(text: str) -> str:
    """Lower case, one space between words, no quotes, trailing full stop, leading "the" or
    thousands separators: the form in which two answers are compared."""
    text = " ".join(str(text).split()).casefold().strip("\"'` ").rstrip(".").strip()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return text[4:] if text.startswith("the ") else text


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def number_in(text: str | None) -> float | None:
    """The number an answer gives: its only number once normalised ('1,250' and 'It is 1250.' give
    1250.0), or None when it has none or more than one ('about a thousand', '1,200 or 1,300').
    The one reading of "a number" in the kit: `check_answer` judges a numeric answer by it."""
    numbers = [] if text is None else _NUMBER.findall(normalise(text))
    return float(numbers[0]) if len(numbers) == 1 else None


def check_answer(given: str | None, gold: str) -> bool:
    """Is `given` the gold answer? Equal once normalised; or, for a number, the only number in
    `given`; or, for a name, the only entity of the world that `given` mentions."""
    if given is None:
        return False
    answer, expected = normalise(given), normalise(gold)
    if answer == expected:
        return True
    if _NUMBER.fullmatch(expected):
        return number_in(given) == float(expected)
    mentioned = {n for n in ENTITIES if re.search(rf"\b{re.escape(n.casefold())}\b", answer)}
    return mentioned == {gold}


# --- tasks and their generators ------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A question with its gold answer. `family` is "single", "chain" or "fanout"; `size` is the
    number of dependent hops (single, chain) or the fan-out width; `join` how a fan-out combines."""

    id: str
    family: str
    question: str
    answer: str
    size: int
    join: str | None = None

    def check(self, given: str | None) -> bool:
        return check_answer(given, self.answer)


ADDITIVE = ("population", "area", "crew", "tonnage", "membership")  # a sum of these means something
COMPARABLE = tuple(q for q in QUANTITIES if q not in ("founding year", "launch year"))
JOINS = ("total", "difference", "highest", "lowest")


def single_task(rng: random.Random, task_id: str = "t1") -> Task:
    """One lookup: an attribute of a named entity."""
    entity = rng.choice(list(ENTITIES.values()))
    phrase = AttributeOf(rng.choice(KINDS[entity.kind]), Name(entity.name))
    return _task(task_id, "single", Lookup(phrase), 1)


def relation_walk(rng: random.Random, hops: int) -> tuple[Phrase, Entity, set[str]] | None:
    """A random walk of `hops - 1` relations from a random entity that never revisits one: the
    phrase naming where it ends, that entity, and every name on the way; None at a dead end."""
    entity = rng.choice(list(ENTITIES.values()))
    phrase: Phrase = Name(entity.name)
    seen = {entity.name}
    for _hop in range(hops - 1):
        options = [a for a in KINDS[entity.kind] if a in RELATIONS and entity.attributes[a] not in seen]
        if not options:
            return None
        attribute = rng.choice(options)
        phrase = AttributeOf(attribute, phrase)
        entity = ENTITIES[entity.attributes[attribute]]
        seen.add(entity.name)
    return phrase, entity, seen


def chain_task(rng: random.Random, hops: int, task_id: str = "t1") -> Task:
    """A chain of `hops` dependent lookups: each one needs the answer of the one before."""
    if hops < 1:
        raise ValueError(f"a chain needs at least one hop, got {hops}")
    for _ in range(1000):  # walks until one does not run into a dead end
        if (walked := relation_walk(rng, hops)) is not None:
            phrase, entity, seen = walked
            last = [a for a in KINDS[entity.kind] if entity.attributes[a] not in seen]
            return _task(task_id, "chain", Lookup(AttributeOf(rng.choice(last), phrase)), hops)
    raise RuntimeError(f"could not build a chain of {hops} hops")  # pragma: no cover


def fanout_task(rng: random.Random, width: int, join: str = "total", task_id: str = "t1") -> Task:
    """`width` independent lookups of one quantity, joined by a sum, a difference or a comparison."""
    if join not in JOINS:
        raise ValueError(f"join must be one of {JOINS}, got {join!r}")
    if join == "difference" and width != 2:
        raise ValueError(f"a difference joins exactly 2 lookups, not {width}")
    if width < 2:
        raise ValueError(f"a fan-out needs a width of at least 2, got {width}")
    wanted = ADDITIVE if join == "total" else COMPARABLE
    kinds = [k for k in KINDS if sum(e.kind == k for e in ENTITIES.values()) >= width]
    options = [(k, a) for k in kinds for a in KINDS[k] if a in wanted]
    if not options:
        raise ValueError(f"no kind of entity has {width} members to compare")
    kind, attribute = rng.choice(options)
    names = rng.sample([e.name for e in ENTITIES.values() if e.kind == kind], width)
    if join == "difference":  # larger first, so the answer is a positive amount
        names.sort(key=lambda n: -ENTITIES[n].attributes[attribute])
        question: Question = Difference(attribute, Name(names[0]), Name(names[1]))
    elif join == "total":
        question = Total(attribute, tuple(Name(n) for n in names))
    else:
        question = Extreme(attribute, tuple(Name(n) for n in names), highest=join == "highest")
    return _task(task_id, "fanout", question, width, join)


def _task(task_id: str, family: str, question: Question, size: int, join: str | None = None) -> Task:
    return Task(task_id, family, render(question), gold_answer(question), size, join)


def make_tasks(count: int = 50, seed: int = 0) -> list[Task]:
    """A reproducible mix: single lookups, chains of 2-4 hops, and fan-outs of width 2-4
    joined every way. The same (count, seed) always gives the same tasks."""
    number(count, "make_tasks' count", minimum=0, whole=True)
    rng = random.Random(seed)
    tasks = []
    for i in range(count):
        task_id = f"t{i + 1:02d}"
        family = i % 5
        if family == 0:
            tasks.append(single_task(rng, task_id))
        elif family in (1, 2):
            tasks.append(chain_task(rng, rng.choice((2, 3, 4)), task_id))
        else:
            join = rng.choice(JOINS)
            width = 2 if join == "difference" else rng.choice((2, 3, 4))
            tasks.append(fanout_task(rng, width, join, task_id))
    return tasks


def sample_tasks(seed: int = 0) -> list[Task]:
    """One task of each shape, for a first look (and for `agentlab run --samples`)."""
    rng = random.Random(seed)
    return [
        single_task(rng, "single"),
        chain_task(rng, 3, "chain-3"),
        fanout_task(rng, 3, "total", "fanout-total"),
        fanout_task(rng, 2, "difference", "fanout-difference"),
        fanout_task(rng, 3, "highest", "fanout-highest"),
    ]
