"""Which of the kit's values cross between the grader and a learner's sandbox by value, and how they
are rebuilt on the other side (`codec` writes and reads the frames).

A class is named by a key, "agentlab.plan:Step" or "builtins:ValueError". `kit_class` finds it
only among Python's base types and exceptions and the classes a kit module itself defines, each
part of the name in a namespace's own dict: no attribute path (`loads.__code__.__class__`) leads
anywhere else. A kit dataclass is rebuilt by calling its class with its fields (its own checks
run); an exception is rebuilt as the nearest kit or built-in Exception class, with its message,
arguments and plain attributes, never as one that ends a process.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import functools
import importlib
import inspect
import pathlib
from typing import Any

BASES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
BUILTIN_TYPES = {t.__name__: t for t in BASES} | {"NoneType": type(None)}
BUILTIN_TYPES |= {
    name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, Exception)
}
MAX_NAME = 300  # a class's, field's or handle's name
MAX_MESSAGE = 2000  # an exception's message


class KitValueError(ValueError):
    """A class that is not one of the kit's values, or fields its class does not build."""


@functools.cache
def kit_modules() -> frozenset[str]:
    """The kit's modules, by name, from its files (not the course's: the grader is not data)."""
    import agentlab

    root = pathlib.Path(agentlab.__file__).resolve().parent
    names = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts[1:2] != ("course",) and all(p.isidentifier() for p in parts):
            names.add(".".join(parts))
    return frozenset(names)


def kit_class(key: str) -> type | None:
    """The class `key` ("agentlab.plan:Step", "builtins:ValueError") names, if it is one of Python's
    base types or exceptions or a class defined in a kit module; else None. Each part of the name is
    looked up in a namespace's own dict, so nothing else is reachable (`loads.__code__` is not)."""
    module, _, qualname = key.partition(":")
    if module == "builtins":
        return BUILTIN_TYPES.get(qualname)
    if module not in kit_modules():
        return None
    try:
        found: Any = importlib.import_module(module)
    except Exception:  # a module that needs what is not installed (interop's mcp)
        return None
    for part in qualname.split("."):
        found = vars(found).get(part)
        if not isinstance(found, type):
            return None
    return found if found.__module__ == module and found.__qualname__ == qualname else None


def key_of(cls: type) -> str | None:
    """`cls`'s name for `kit_class`, if it finds `cls` by it (a learner's class named like the kit's is
    not the kit's)."""
    if cls.__module__ == "builtins":
        return f"builtins:{cls.__name__}" if BUILTIN_TYPES.get(cls.__name__) is cls else None
    key = f"{cls.__module__}:{cls.__qualname__}"
    try:
        return key if kit_class(key) is cls else None
    except Exception:  # a module that does not import, or a name that is not text
        return None


def is_data_class(cls: type) -> bool:
    """A class whose values cross by value: a kit dataclass or enum, a kit or built-in exception."""
    data = dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum | Exception)
    return data and key_of(cls) is not None


def error_facts(error: BaseException) -> tuple[str, str, tuple, dict]:
    """An exception as facts: the nearest kit or built-in Exception class it is an instance of, its
    message, its arguments and its plain attributes."""
    cls = next((c for c in type(error).__mro__ if issubclass(c, Exception) and is_data_class(c)), None)
    try:
        message = str(error)[:MAX_MESSAGE]
    except Exception:  # a __str__ of the learner's that raises
        message = ""
    if cls is None:  # SystemExit and the like: not raised again on the other side
        return "builtins:RuntimeError", f"{type(error).__name__}: {message}", (), {}
    state = {k: v for k, v in getattr(error, "__dict__", {}).items() if _settable(cls, k)}
    return key_of(cls), message, tuple(error.args), state


def rebuild_error(key: str, message: str, args: tuple, state: dict) -> Exception:
    """The exception, on this side, as the kit or Python would have raised it. A class that is not
    one of theirs becomes a RuntimeError that names it; an attribute that is a method or property of
    the class is not set (it would hide the class's own)."""
    cls = kit_class(key) if isinstance(key, str) else None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls, message, args = RuntimeError, f"{str(key).rpartition(':')[2][:MAX_NAME]}: {message}", ()
    error = cls.__new__(cls)
    error.args = tuple(args) if args else (str(message),)
    for name, value in state.items():
        if _settable(cls, name):
            try:
                setattr(error, name, value)
            except (AttributeError, TypeError, ValueError):
                pass
    return error


def _settable(cls: type, name: Any) -> bool:
    if not (isinstance(name, str) and name.isidentifier() and not name.startswith("_")):
        return False
    found = inspect.getattr_static(cls, name, None)
    return found is None or not (callable(found) or hasattr(type(found), "__get__"))


def build(cls: type, values: dict[str, Any]) -> Any:
    """A kit dataclass from its fields: its init fields through the class (its own checks run), then
    the fields it does not take (a planner's `calls`)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if unknown := set(values) - set(fields):
        raise KitValueError(f"{cls.__name__} has no field {sorted(unknown)[0][:MAX_NAME]!r}")
    try:
        obj = cls(**{k: v for k, v in values.items() if fields[k].init})
        for name, value in values.items():
            if not fields[name].init:
                object.__setattr__(obj, name, value)
    except TimeoutError:  # a case's time limit: not the value's fault
        raise
    except Exception as error:  # the kit's own checks refused it: the learner's value is not one of its own
        raise KitValueError(
            f"a {cls.__name__} the kit does not build ({type(error).__name__}: {str(error)[:100]})"
        ) from None
    return obj


def base_value(obj: Any, base: type) -> Any:
    """The value a subclass instance holds, read with the base type's own methods (never the subclass's)."""
    if base is dict:
        return {k: dict.__getitem__(obj, k) for k in dict.__iter__(obj)}
    if base in (list, tuple, set, frozenset):
        return base(base.__iter__(obj))
    if base is bool:
        return int.__int__(obj) != 0
    if base is int:
        return int.__int__(obj)
    if base is float:
        return float.__float__(obj)
    if base is complex:
        return complex(float.__float__(complex.real.__get__(obj)), float.__float__(complex.imag.__get__(obj)))
    return str.__str__(obj) if base is str else bytes(memoryview(obj))
