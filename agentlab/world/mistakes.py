"""The simulated model's mistakes in the task world: realistic ones, made on purpose, one at a time.

The solver (`world.solver`) works out what a competent model would write; when the simulator
has drawn an error for a call, this module spoils that work in one of the ways real models go
wrong, chosen at random among the kinds that are switched on and that the work leaves room for:

| kind                  | in a plan                                | in an agent turn                    |
|-----------------------|------------------------------------------|-------------------------------------|
| `malformed_json`      | text that is not valid JSON              | -                                   |
| `wrong_tool_argument` | a misspelt or wrong argument in a step   | a misspelt argument in a tool call  |
| `hallucinated_answer` | -                                        | a plausible but wrong final answer  |
| `dropped_dependency`  | a step loses one of its `depends_on` ids | -                                   |
| `finished_too_early`  | the plan stops before its last steps     | answers with what it has so far     |

A wrong argument is sometimes caught (a misspelt name: the tool refuses it, and says what it
may have meant) and sometimes not (the neighbouring attribute, the opposite sign: silently
wrong). A made-up answer is a nearby number or another entity of the same kind, never nonsense.
`kinds` holds the kinds a call may make: none, unless the simulator drew an error for it. Each
function returns the mistake it made as (kind, detail), for `SimulatedLLM.injected`.
"""

from __future__ import annotations

import copy
import json
import random
import re
from typing import Any

from agentlab.prompts import is_report
from agentlab.world.data import ENTITIES
from agentlab.world.tools import format_number

ERROR_KINDS = (
    "malformed_json",
    "wrong_tool_argument",
    "hallucinated_answer",
    "dropped_dependency",
    "finished_too_early",
)
_PLAN_ERRORS = tuple(k for k in ERROR_KINDS if k != "hallucinated_answer")  # a plan has no answer yet

Call = tuple[str, dict[str, Any]]  # a tool call: (tool, args)
Error = tuple[str, str]  # (kind, detail): the mistake made


def plan_text(
    steps: list[dict[str, Any]], kinds: tuple[str, ...], rng: random.Random
) -> tuple[str, Error | None]:
    """The plan as the model writes it: its JSON, with a mistake in it if one of `kinds` fits."""
    applies = {
        "dropped_dependency": any(s["depends_on"] for s in steps),
        "finished_too_early": len(steps) > 1,
    }
    possible = [k for k in _PLAN_ERRORS if k in kinds and applies.get(k, True)]
    if not possible:
        return _json(steps), None
    kind = rng.choice(possible)
    steps = copy.deepcopy(steps)  # the mistake goes into a copy
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
    text = _json(steps)
    if kind == "malformed_json":
        text, detail = _break_json(text, rng)
    return text, (kind, detail)


def spoil_turn(
    answer: str | None, calls: list[Call], found: list[str], kinds: tuple[str, ...], rng: random.Random
) -> tuple[str | None, list[Call], Error | None]:
    """An agent's turn (its `answer`, or the tool `calls` it makes first) as the model gives it:
    unchanged, or with one mistake of `kinds` that the turn leaves room for. `found` holds the
    tool results the agent has read, in order (the last is what it answers with if it stops early)."""
    possible = []
    if calls and "wrong_tool_argument" in kinds and any(n in ("lookup", "calculate") for n, _ in calls):
        possible.append("wrong_tool_argument")
    if calls and found and "finished_too_early" in kinds:
        possible.append("finished_too_early")
    if answer is not None and "hallucinated_answer" in kinds:
        possible.append("hallucinated_answer")
    if not possible:
        return answer, calls, None

    kind = rng.choice(possible)
    if kind == "finished_too_early":
        early = found[-1]
        return early, [], (kind, f"answered {early!r} before making {len(calls)} more tool call(s)")
    if kind == "hallucinated_answer":
        made_up = _hallucinate(answer, rng)
        return made_up, [], (kind, f"answered {made_up!r} instead of {answer!r}")
    spoilable = [i for i, (n, _) in enumerate(calls) if n in ("lookup", "calculate")]
    i = rng.choice(spoilable)
    name, args = calls[i]
    if name == "lookup":
        field_name = rng.choice(("entity", "attribute"))
        spoilt = {**args, field_name: _misspell(args[field_name], rng)}
    else:
        spoilt = {"expression": args["expression"] + " +"}
    calls = calls[:i] + [(name, spoilt)] + calls[i + 1 :]
    return None, calls, (kind, f"called {name} with {spoilt} instead of {args}")


# --- in a plan ------------------------------------------------------------------------------


def _json(steps: list[dict[str, Any]]) -> str:
    return json.dumps({"steps": steps}, ensure_ascii=False)


def _spoil_step(steps: list[dict[str, Any]], rng: random.Random) -> str:
    """One wrong argument: a misspelt name or attribute (a tool will refuse it), or the
    neighbouring attribute or the opposite sign (silently wrong)."""
    candidates = [
        s for s in steps if s.get("tool") in ("lookup", "calculate") or _ATTRIBUTE.search(s["instruction"])
    ]
    candidates = [s for s in candidates if not is_report(s["instruction"])]
    if not candidates:
        return "nothing in the plan could take a wrong argument"
    step = rng.choice(candidates)
    args = step.get("args") or {}
    if step.get("tool") == "lookup":
        field_name = "entity" if not args["entity"].startswith("$") and rng.random() < 0.5 else "attribute"
        old = args[field_name]
        args[field_name] = _misspell(old, rng) if field_name == "entity" else _wrong_attribute(old, rng)
        return f"step {step['id']}: {field_name} {old!r} became {args[field_name]!r}"
    if step.get("tool") == "calculate":
        old = args["expression"]
        args["expression"] = old.replace("+", "-", 1) if "+" in old else old.replace("-", "+", 1)
        return f"step {step['id']}: expression {old!r} became {args['expression']!r}"
    old = _ATTRIBUTE.search(step["instruction"]).group(1)
    new = _wrong_attribute(old, rng)
    step["instruction"] = step["instruction"].replace(f"the {old} of", f"the {new} of", 1)
    return f"step {step['id']}: the instruction asks for {new!r} instead of {old!r}"


_ATTRIBUTE = re.compile(r"\bthe ([a-z][a-z ]*?) of ")


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


# --- wrong words and wrong answers ------------------------------------------------------------


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


def _wrong_attribute(attribute: str, rng: random.Random) -> str:
    """A misspelt attribute (a tool refuses it) or, as often, a neighbouring one (silently wrong)."""
    return _misspell(attribute, rng) if rng.random() < 0.5 else _NEIGHBOURS.get(attribute, attribute + "s")


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
