"""The world's tools: real functions a model can call, and the specs it sees.

- `lookup(entity, attribute)` reads one fact from the records;
- `search(query)` finds entities by keywords, for when a name is not known;
- `calculate(expression)` does arithmetic safely: the expression is parsed with
  `ast` and only an allowlist of node types is evaluated. Nothing is ever passed
  to `eval`, so `__import__('os')` or `().__class__` is refused, not run.

A tool that cannot do what it was asked raises `ToolError` with a message meant for the model:
it says what was wrong and, where it can, what would be right (`prompts.did_you_mean`).
"""

from __future__ import annotations

import ast
import difflib
import functools
import math
import operator
import re
from collections.abc import Callable

from agentlab.llm.base import Tool
from agentlab.prompts import NO_ENTITY, did_you_mean
from agentlab.world.data import ARCHIPELAGO, ENTITIES, KINDS, UNITS, Entity


class ToolError(ValueError):
    """A tool was called with something it cannot handle; the message says what."""


# --- lookup and search ---------------------------------------------------------------


def name_key(text: str) -> str:
    """Names and labels compare case-blind, ignoring a leading "the", spaces and underscores."""
    return _name_key(str(text))


@functools.lru_cache(maxsize=4096)  # the same few hundred names are keyed again at every turn
def _name_key(text: str) -> str:
    text = " ".join(text.replace("_", " ").split()).casefold()
    return text[4:] if text.startswith("the ") else text


_BY_KEY = {name_key(name): entity for name, entity in ENTITIES.items()}


def find_entity(name: str) -> Entity:
    """The entity called `name` (forgiving about case and a leading "the"), or a ToolError."""
    entity = _BY_KEY.get(name_key(name))
    if entity is not None:
        return entity
    close = _closest_name(name_key(name))
    hint = did_you_mean(close) if close else "use search to find the right name."
    raise ToolError(f"{NO_ENTITY} named {name!r} in {ARCHIPELAGO}; {hint}")


@functools.lru_cache(maxsize=1024)  # difflib compares with every name (~1 ms); wrong names recur
def _closest_name(key: str) -> str | None:
    close = difflib.get_close_matches(key, list(_BY_KEY), n=1, cutoff=0.6)
    return _BY_KEY[close[0]].name if close else None


def lookup(entity: str, attribute: str) -> str:
    """One fact: the value of `attribute` for `entity`, as text (a number or a name)."""
    found, wanted = find_entity(entity), name_key(attribute)
    for label, value in found.attributes.items():
        if name_key(label) == wanted:
            return str(value)
    labels = list(found.attributes)
    close = difflib.get_close_matches(name_key(attribute), labels, n=1, cutoff=0.6)
    hint = f"{did_you_mean(close[0])} " if close else ""
    problem = f"{found.name} ({_a(found.kind)}) has no attribute {attribute!r}"
    raise ToolError(f"{problem}; {hint}its attributes: {', '.join(labels)}")


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def describe(entity: Entity) -> str:
    """One line with everything the records hold about an entity."""
    facts = ", ".join(f"{label} {value}{_unit(label)}" for label, value in entity.attributes.items())
    return f"{entity.name} ({entity.kind}): {facts}"


def _unit(label: str) -> str:
    return f" {UNITS[label]}" if label in UNITS else ""


def search(query: str, limit: int = 5) -> str:
    """Entities whose record mentions every keyword of `query`, one per line (at most `limit`)."""
    words = [w for w in re.findall(r"[\w']+", query.casefold()) if w not in _STOPWORDS]
    if not words:
        raise ToolError(f"search needs at least one keyword, got {query!r}")
    hits = [e for e in ENTITIES.values() if all(w in describe(e).casefold() for w in words)]
    if not hits:
        return f"no records mention {' '.join(words)!r}"
    shown = [describe(e) for e in hits[:limit]]
    more = [f"... and {len(hits) - limit} more"] if len(hits) > limit else []
    return "\n".join(shown + more)


_STOPWORDS = {"the", "a", "an", "of", "is", "what", "who", "which", "and", "or", "in", "on", "to"}


# --- the safe calculator -------------------------------------------------------------

MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**15
MAX_LENGTH = 200

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., float]] = {"abs": abs, "max": max, "min": min, "round": round}
_ARITY = {  # the fewest and most arguments each function takes, and that in words
    "abs": (1, 1, "one number"),
    "max": (2, 50, "two or more numbers"),
    "min": (2, 50, "two or more numbers"),
    "round": (1, 2, "a number and optionally a count of decimal places"),
}


def calculate(expression: str) -> str:
    """Evaluate arithmetic: numbers, + - * / // % **, brackets, and abs/max/min/round."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("calculate needs an arithmetic expression, e.g. '2140 + 3875'")
    if len(expression) > MAX_LENGTH:
        raise ToolError(f"the expression is too long ({len(expression)} characters, limit {MAX_LENGTH})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ToolError(f"{expression!r} is not a valid arithmetic expression") from None
    return format_number(_evaluate(tree.body))


def format_number(value: float) -> str:
    """Whole numbers without a decimal point; others to at most 4 decimal places."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _evaluate(node: ast.AST) -> float:
    """Walk the parsed expression, refusing every node type not on the allowlist."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ToolError(f"only numbers are allowed, not {node.value!r}")
        return _checked(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError(f"the exponent {format_number(right)} is too large (limit {MAX_EXPONENT})")
        if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
            raise ToolError("division by zero")
        return _checked(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        name, args = node.func.id, [_evaluate(a) for a in node.args]
        low, high, takes = _ARITY[name]
        if node.keywords or not low <= len(args) <= high:
            raise ToolError(f"{name}() takes {takes}, and no keyword arguments")
        try:
            return _checked(_FUNCTIONS[name](*args))
        except TypeError as e:  # e.g. round(2.5, 1.5): the count of places must be whole
            raise ToolError(f"{name}(): {e}") from None
    raise ToolError(f"{_describe_node(node)} is not allowed in a calculation")


def _checked(value: float) -> float:
    if isinstance(value, complex) or (isinstance(value, float) and not math.isfinite(value)):
        raise ToolError("the result is not a finite real number")
    if abs(value) > MAX_MAGNITUDE:
        raise ToolError(f"a number in the calculation is too large (limit {MAX_MAGNITUDE:.0e})")
    return value


def _describe_node(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}')"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _describe_node(node.func)
    if isinstance(node, ast.Call):
        called = repr(node.func.id) if isinstance(node.func, ast.Name) else "a function"
        return f"calling {called} (only abs, max, min and round may be called)"
    if isinstance(node, ast.Tuple):
        return "a comma (write numbers without thousands separators: 2140, not 2,140)"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"the operator {type(node.op).__name__}"
    return f"{type(node).__name__} syntax"


# --- what a model sees -----------------------------------------------------------------

_ATTRIBUTES = sorted({label for labels in KINDS.values() for label in labels})

TOOLS: dict[str, Tool] = {
    "lookup": Tool(
        "lookup",
        f"Read one fact from the records of {ARCHIPELAGO}: the value of an attribute of a named "
        "island, town, person, ship, guild or good. Returns a number or a name.",
        {
            "type": "object",
            "properties": {
                "entity": {"type": "string", "description": "the exact name, e.g. 'Varra'"},
                "attribute": {"type": "string", "enum": _ATTRIBUTES},
            },
            "required": ["entity", "attribute"],
            "additionalProperties": False,
        },
    ),
    "search": Tool(
        "search",
        f"Find records in {ARCHIPELAGO} that mention every keyword; returns one line per match.",
        {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "keywords, e.g. 'Salt Guild'"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    "calculate": Tool(
        "calculate",
        "Evaluate an arithmetic expression: plain numbers, + - * / // % **, brackets, abs/max/min/round.",
        {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. '2140 + 3875'"}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    ),
}

FUNCTIONS: dict[str, Callable[..., str]] = {"lookup": lookup, "search": search, "calculate": calculate}
