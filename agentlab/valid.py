"""Guards for values that come from outside the kit: settings (numbers, names) and JSON text.

Python is generous with numbers in ways a setting must not be: `True` is 1, `"3"` is
text, and NaN compares false with everything, so a NaN duration is never over and a
run waiting for it waits forever. `number` refuses all of those (and the infinities,
and integers too large for a float, which the clock could not add), checks the
bounds, and names the setting in its message. `names` refuses one string where a
collection of names belongs (iterating "writer" gives its letters).

JSON is generous too: Python's `json` reads NaN and Infinity, turns 1e400 into an
infinity, raises RecursionError on deep nesting, ValueError on an integer of
thousands of digits, and UnicodeDecodeError on bytes that are not UTF-8. `loads`
turns every one of those into the one error its caller asked for, naming what is
wrong. `shown` keeps a bad value short in a message (a model's megabyte reply must
not come back whole in the error that re-asks it).
"""

from __future__ import annotations

import json
import math
import numbers
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

N = TypeVar("N")

MAX_DEPTH = 20  # levels of JSON nesting: a plan needs about 5, Python's recursion limit about 1000
MAX_DIGITS = 308  # an integer with more digits is past what a float (so the clock) can hold
MAX_TIMEOUT = 86_400.0  # seconds: the longest time limit a setting may give (a thread can wait it)


def number(
    value: N,
    what: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    whole: bool = False,
    must_be: str | None = None,
    error: type[Exception] = ValueError,
) -> N:
    """`value` itself, if it is a finite real number that fits in a float (an integer if `whole`;
    never a bool) with `minimum <= value`, `above < value` and `value <= maximum` for the bounds
    given. Otherwise `error("<what> must be <must_be>, got <value>")`; `must_be` defaults to the
    bounds in words."""
    kinds = (int, numbers.Integral) if whole else (int, float, numbers.Real)  # common ones first: faster
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or not _finite(value)
        or (minimum is not None and value < minimum)
        or (above is not None and value <= above)
        or (maximum is not None and value > maximum)
    ):
        said = must_be or _described(minimum, above, maximum, whole)
        raise error(f"{what} must be {said}, got {shown(value)}")
    return value


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def _described(minimum: float | None, above: float | None, maximum: float | None, whole: bool) -> str:
    """ "a number >= 0", "a whole number >= 1", "a number in [0, 1]", "a number in (0, 1]"."""
    words = "a whole number" if whole else "a number"
    low = f"[{minimum}" if minimum is not None else f"({above}" if above is not None else None
    if low is not None and maximum is not None:
        return f"{words} in {low}, {maximum}]"
    bounds = ((">=", minimum), (">", above), ("<=", maximum))
    return words + "".join(f" {sign} {bound}" for sign, bound in bounds if bound is not None)


def names(values: Iterable[str], what: str, error: type[Exception] = ValueError) -> frozenset[str]:
    """`values` as a set of names (strings). One string is refused, not split into its letters
    (`roles="writer"` is not {"w", "r", ...}); a mapping, a team say, gives its keys."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        one = isinstance(values, str)
        said = f"not one string: {what}=[{shown(values)}]" if one else f"got {shown(values)}"
        raise error(f"{what} must be a collection of names, {said}")
    values = list(values)
    if bad := [v for v in values if not isinstance(v, str)]:
        raise error(f"{what} must be names (strings), got {shown(bad[0])}")
    return frozenset(values)


def shown(value: Any, limit: int = 60) -> str:
    """`repr(value)`, cut short past about `limit` characters, for a message about a bad value."""
    try:
        return cut(repr(value), limit)
    except ValueError:  # an integer too long to print
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"


def cut(text: str, limit: int = 60) -> str:
    """`text`, or its start and end with how long it is when it runs past about `limit` characters."""
    return text if len(text) <= limit else f"{text[: limit - 20]}...{text[-10:]} ({len(text):,} characters)"


# --- JSON text ---------------------------------------------------------------------------------


def decoded(data: str | bytes, what: str, error: type[Exception] = ValueError) -> str:
    """`data` as text: bytes must be UTF-8, the encoding JSON is exchanged in."""
    if isinstance(data, str):
        return data
    if not isinstance(data, bytes | bytearray):
        raise error(f"{what} must be JSON text, got {type(data).__name__}")
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} is not UTF-8 text: byte {e.start} ({data[e.start]:#04x}) is invalid") from None


def loads(text: str | bytes, what: str, error: type[Exception] = ValueError) -> Any:
    """The JSON value in `text`, or `error` naming what is wrong with it (`what` is its subject:
    "the plan", say). Stricter than `json.loads`: the value is standard JSON (no NaN or
    Infinity), its numbers fit in a float, it nests at most MAX_DEPTH levels, and its text is
    Unicode (no lone surrogate, which could not be saved as UTF-8)."""
    text = decoded(text, what, error)

    def constant(name: str) -> Any:
        raise error(f"{what} holds {name}, which JSON does not allow: numbers must be finite")

    def real(digits: str) -> float:
        if math.isinf(value := float(digits)):
            raise error(f"{what} holds {digits[:30]}: too large for a number")
        return value

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise error(f"{what} holds an integer of {len(digits.lstrip('-'))} digits (at most {MAX_DIGITS})")
        return int(digits)

    try:
        value = json.loads(text, parse_constant=constant, parse_float=real, parse_int=integer)
    except json.JSONDecodeError as e:
        raise error(f"{what} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise error(f"{what} is nested more than {MAX_DEPTH} levels deep") from None
    if problem := json_problem(value):
        raise error(f"{what} {problem}")
    return value


def utf8_json(value: Any, **options: Any) -> bytes:
    """`value` as JSON text in UTF-8 bytes, to be saved: non-ASCII text as itself (readable), or,
    when the value holds text UTF-8 cannot (a lone surrogate, from a filename read with
    surrogateescape, say), every non-ASCII character escaped (`\\udcff`), which reads back the same."""
    try:
        return json.dumps(value, ensure_ascii=False, **options).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options).encode("ascii")


def hash_text(text: str) -> bytes:
    """`text` as the bytes to hash: UTF-8, with a lone surrogate encoded as itself (never raising)."""
    return text.encode("utf-8", "surrogatepass")


_SURROGATE = re.compile(r"[\ud800-\udfff]")
_TOO_LONG = 10**MAX_DIGITS  # the smallest integer with more than MAX_DIGITS digits


def json_problem(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """What keeps `value` from travelling as JSON text (and back), or None: mappings and lists
    nested more than `limit` levels (or one that holds itself), a key that is not a string, a
    number that is not finite or past MAX_DIGITS, or text with a lone surrogate. It walks the
    value with a stack of its own, so no depth raises RecursionError."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and (lone := _SURROGATE.search(item)):
                return f"holds text with a lone surrogate ({shown(lone.group())}): not Unicode text"
        elif isinstance(item, float) and not math.isfinite(item):
            return f"holds {item!r}, which JSON does not allow: numbers must be finite"
        elif isinstance(item, int) and abs(item) >= _TOO_LONG:
            return f"holds an integer of more than {MAX_DIGITS} digits"
        elif isinstance(item, dict | list | tuple | Mapping):  # built-in types first: no ABC check
            if depth >= limit:
                return f"is nested more than {limit} levels deep"
            mapping = isinstance(item, dict | Mapping)
            if mapping and (bad := [k for k in item if not isinstance(k, str)]):
                return f"has a name that is not a string: {shown(bad[0])}"
            inner = [*item.keys(), *item.values()] if mapping else item
            # ASCII text, most of what a value holds, can have nothing wrong with it: not stacked
            stack.extend((v, depth + 1) for v in inner if type(v) is not str or not v.isascii())
    return None
