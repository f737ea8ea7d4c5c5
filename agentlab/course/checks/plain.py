"""Plain data: what a check compares, and what it refuses to.

The grader compares only plain data: a learner's answer crosses from the sandbox as numbers,
strings, lists and dicts (`agentlab.course.wire`), so an object that only claims to be right (an
`==` that always says yes, arithmetic of its own) arrives as its plain value and gains nothing.
The learner's own `check()` passes each answer (a value, or what the learner's function returned)
through `plain` first, so the feedback in the notebook never passes what the grade would fail, and
says what the odd value is.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict, defaultdict, deque
from numbers import Number
from pathlib import PurePath
from typing import Any


def plain(value: Any) -> tuple[Any, str]:
    """`value` as plain data a check can compare, and "" ; or (value, what is wrong with it).

    The grader compares only plain data (`agentlab.course.wire`); the learner's own check does the
    same, so a check cannot be passed here that the grade would fail. Numpy numbers and arrays become
    Python numbers and lists. A subclass of a built-in type that changes how its values behave (an
    `==` that always says yes, arithmetic of its own) and an object of the learner's own class where
    data belongs are refused, with what they are. Functions, the kit's own objects and a namedtuple
    (which only names a tuple's parts) pass as they are.
    """
    return _plain(value, set(), 0)


_KINDS = {
    bool: "True or False",
    int: "a number",
    float: "a number",
    complex: "a number",
    str: "a string",
    bytes: "bytes",
    list: "a list",
    tuple: "a tuple",
    dict: "a dict",
    set: "a set",
    frozenset: "a set",
}
_TRUSTED = (Counter, OrderedDict, defaultdict, deque)  # the standard library's own, crossing as their data
_HARMLESS = {
    "__new__",
    "__init__",
    "__repr__",
    "__str__",
    "__format__",
    "__getnewargs__",
    "__reduce__",
    "__reduce_ex__",
    "__init_subclass__",
    "__class_getitem__",
    "__sizeof__",
    "__getstate__",
}


def _plain(value: Any, seen: set[int], depth: int) -> tuple[Any, str]:
    kind = type(value)
    if kind in _KINDS and kind not in (list, tuple, dict, set, frozenset) or value is None or value is ...:
        return value, ""
    if kind.__module__.split(".")[0] == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist(), seen, depth)
    if id(value) in seen or depth > 50:
        return value, ""
    seen.add(id(value))
    base = next((b for b in _KINDS if isinstance(value, b)), None)
    if base is not None and kind is not base and not isinstance(value, _TRUSTED):
        changed = _overrides(kind, base)
        if changed:
            return value, (
                f"{_a(kind.__name__)}, not {_KINDS[base]}: it is your own kind of {base.__name__}, which "
                f"changes {changed} (return a plain {base.__name__})"
            )
    if isinstance(value, dict):
        items = [(_plain(k, seen, depth + 1), _plain(v, seen, depth + 1)) for k, v in value.items()]
        odd = next((o for pair in items for _, o in pair if o), "")
        same = all(k[0] is a and v[0] is b for (k, v), (a, b) in zip(items, value.items(), strict=True))
        return (value if same or kind is not dict else {k[0]: v[0] for k, v in items}), odd
    if isinstance(value, list | tuple | set | frozenset | deque):
        items = [_plain(v, seen, depth + 1) for v in value]
        odd = next((o for _, o in items if o), "")
        same = all(new is old for (new, _), old in zip(items, value, strict=True))
        rebuilt = value if same or kind not in (list, tuple, set, frozenset) else kind(v for v, _ in items)
        return rebuilt, odd
    if base is not None or callable(value) or isinstance(value, type | BaseException | PurePath):
        return value, ""
    if _is_kit(kind):
        if dataclasses.is_dataclass(value):
            for field in dataclasses.fields(value):
                _, odd = _plain(getattr(value, field.name, None), seen, depth + 1)
                if odd:
                    return value, odd
        return value, ""
    if isinstance(value, Number):
        return value, f"{_a(kind.__name__)}, not a plain number (an int or a float)"
    return value, f"{_a(kind.__name__)}, which is not plain data (a number, a string, a list, a dict ...)"


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _overrides(kind: type, base: type) -> str:
    """The methods of `base` that `kind` (a subclass) defines again, other than how it prints."""
    names = {
        name
        for cls in kind.__mro__[: kind.__mro__.index(base)]
        for name, attribute in vars(cls).items()
        if name in dir(base) and name not in _HARMLESS and callable(attribute)
    }
    shown = sorted(names, key=lambda n: (n != "__eq__", n))[:3]
    return ", ".join(f"{n}" for n in shown) + (" ..." if len(names) > 3 else "") if names else ""


def _is_kit(kind: type) -> bool:
    module = getattr(kind, "__module__", "") or ""
    return module == "agentlab" or module.startswith("agentlab.")
