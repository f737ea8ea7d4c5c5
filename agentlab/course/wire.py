"""The conversation between the grader and a learner's sandboxed notebook: frames, and what may
cross in each direction.

The grader runs the hidden cases in its own process; the learner's functions run in the sandbox.
A call crosses as a message; its arguments and its answer are pickled, with two rules:

- grader -> sandbox: plain data and the kit's dataclasses go by value; anything with behaviour (a
  recording function, a simulated model, a check's helper object) stays in the grader and crosses
  as a `GraderRef`: calling it in the sandbox calls the original in the grader;
- sandbox -> grader: only plain data comes back, read by `PlainUnpickler`, which builds nothing but
  built-in values and the kit's own classes. A subclass of int, float, str, list or dict is sent
  as its base value (so an `==` that always says yes, or odd arithmetic, is lost on the way); a
  numpy number as its Python number; any other object of the learner's (a function, an instance of
  a class of theirs) as a `LearnerRef`, an opaque handle the grader can only call.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import importlib
import io
import os
import pathlib
import pickle
import struct
import sys
import threading
from typing import Any

PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
PLAIN += (type(Ellipsis),)  # the `...` an exercise's answer template holds until it is filled in
_BASES = (bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
_ALLOWED_BUILTINS = {("builtins", t.__name__) for t in (*_BASES, bytearray, range, slice)} | {
    (c.__module__, c.__name__) for c in (collections.OrderedDict, collections.Counter, collections.deque)
}
_ALLOWED_BUILTINS |= {("collections", "defaultdict"), ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath")}
_ALLOWED_BUILTINS |= {("builtins", "Ellipsis")}
MAX_FRAME = 64 * 2**20  # a learner's answer larger than 64 MB is refused, not read


# What a handle's holder may ask of the object behind it besides calls and attributes: a container's
# protocol (an iterator comes back as the list it yields).
PROTOCOL = {
    "iter": lambda obj: list(obj),
    "len": len,
    "getitem": lambda obj, key: obj[key],
    "contains": lambda obj, item: item in obj,
    "bool": bool,
    "str": str,
    "copy": lambda obj: _pickled_copy(obj),
}


def _pickled_copy(obj: Any) -> Any:
    """A copy made the way Dask sends a function to a worker (so a lock inside it fails here too)."""
    import cloudpickle

    return cloudpickle.loads(cloudpickle.dumps(obj))


class WireError(RuntimeError):
    """The other side ended, or sent something that is not a frame of this protocol."""


# --- frames ---------------------------------------------------------------------------------------


def send(fd: int, payload: bytes) -> None:
    data = struct.pack(">I", len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def receive(fd: int) -> bytes:
    (size,) = struct.unpack(">I", _exactly(fd, 4))
    if size > MAX_FRAME:
        raise WireError(f"a message of {size} bytes: more than {MAX_FRAME} allowed")
    return _exactly(fd, size)


def _exactly(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            raise WireError("the sandbox ended the conversation")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# --- handles --------------------------------------------------------------------------------------


class Handles:
    """Objects kept on this side, by number, while the other side holds a handle to them."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}
        self.numbers: dict[int, int] = {}  # id(object) -> number, so one object keeps one handle

    def number(self, obj: Any) -> int:
        key = id(obj)
        if key not in self.numbers:
            self.numbers[key] = len(self.objects) + 1
            self.objects[self.numbers[key]] = obj
        return self.numbers[key]

    def __getitem__(self, number: int) -> Any:
        return self.objects[number]


def is_kit_class(cls: type) -> bool:
    """A class that really is the kit's own (not a learner's class that borrowed a kit name)."""
    module = getattr(cls, "__module__", "") or ""
    if not (module == "agentlab" or module.startswith("agentlab.")) or module.startswith("agentlab.course"):
        return False
    try:
        found = importlib.import_module(module)
        for part in cls.__qualname__.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return False
    return found is cls


def is_kit_data(obj: Any) -> bool:
    """A kit dataclass or enum instance: it crosses by value, field by field."""
    cls = type(obj)
    return (dataclasses.is_dataclass(cls) or isinstance(obj, enum.Enum)) and is_kit_class(cls)


# --- grader -> sandbox ----------------------------------------------------------------------------


class GraderPickler(pickle.Pickler):
    """Pickles the grader's arguments: data by value, behaviour as a handle (`("G", n)`); a learner's
    object handed back travels as its own handle (`("L", n)`)."""

    def __init__(self, file: io.BytesIO, handles: Handles, learner_ref: type):
        super().__init__(file, protocol=5)
        self.handles, self.learner_ref = handles, learner_ref

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, self.learner_ref):
            return ("L", obj.number)
        if type(obj) in PLAIN or isinstance(obj, type) or is_kit_data(obj):
            return None
        if isinstance(obj, collections.Counter | collections.OrderedDict | collections.defaultdict):
            return None
        if isinstance(obj, pathlib.PurePath | BaseException):
            return None
        if type(obj).__module__.split(".")[0] == "numpy":
            return None
        return ("G", self.handles.number(obj))


# --- sandbox -> grader ----------------------------------------------------------------------------


class LearnerPickler(pickle.Pickler):
    """Pickles what the learner's code produced, as plain data (see the module's docstring)."""

    def __init__(self, file: io.BytesIO, handles: Handles, grader_ref: type):
        super().__init__(file, protocol=5)
        self.handles, self.grader_ref = handles, grader_ref

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, self.grader_ref):
            return ("G", object.__getattribute__(obj, "number"))
        if type(obj) in PLAIN or _convertible(obj) or is_kit_data(obj):
            return None
        if isinstance(obj, type) and (is_kit_class(obj) or obj in _BASES):
            return None
        if type(obj) in (collections.Counter, collections.OrderedDict, collections.deque):
            return None
        if type(obj) is collections.defaultdict or type(obj) in (pathlib.PosixPath, pathlib.PurePosixPath):
            return None
        return ("L", self.handles.number(obj), type(obj).__name__)

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) in PLAIN or isinstance(obj, type):
            return NotImplemented
        for base in _BASES:
            if isinstance(obj, base) and type(obj) is not base:
                return base, (_base_value(obj, base),)
        if type(obj).__module__.split(".")[0] == "numpy" and hasattr(obj, "tolist"):
            return _plain_numpy(obj)
        return NotImplemented


def _convertible(obj: Any) -> bool:
    return isinstance(obj, _BASES) or (
        type(obj).__module__.split(".")[0] == "numpy" and hasattr(obj, "tolist")
    )


def _base_value(obj: Any, base: type) -> Any:
    """The value a subclass instance holds, read with the base type's own methods (never the subclass's)."""
    if base is dict:
        return [(k, dict.__getitem__(obj, k)) for k in dict.__iter__(obj)]
    if base in (list, tuple, set, frozenset):
        return list(base.__iter__(obj))
    if base is bool:
        return int.__int__(obj) != 0
    if base is int:
        return int.__int__(obj)
    if base is float:
        return float.__float__(obj)
    if base is complex:
        return complex(float.__float__(complex.real.__get__(obj)), float.__float__(complex.imag.__get__(obj)))
    return base.__str__(obj) if base is str else bytes(memoryview(obj))


def _plain_numpy(obj: Any) -> Any:
    value = obj.tolist()
    kind = type(value)
    if kind in (bool, int, float, complex, str, bytes):
        return kind, (value,)
    return list, (value,)


class PlainUnpickler(pickle.Unpickler):
    """Builds only built-in values and the kit's own classes; handles become the objects they name
    (the grader's own) or `LearnerRef`s (the learner's)."""

    def __init__(self, file: io.BytesIO, handles: Handles, learner_ref: Any):
        super().__init__(file)
        self.handles, self.learner_ref = handles, learner_ref

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and pid and pid[0] == "G":
            return self.handles[pid[1]]
        if isinstance(pid, tuple) and pid and pid[0] == "L":
            return self.learner_ref(pid[1], str(pid[2])[:60])
        raise pickle.UnpicklingError("an unknown handle")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_BUILTINS:
            return super().find_class(module, name)
        if module.startswith("agentlab.") and not module.startswith("agentlab.course"):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} may not come back from a learner's notebook")


def dumps(pickler: type, obj: Any, *extra: Any) -> bytes:
    buffer = io.BytesIO()
    pickler(buffer, *extra).dump(obj)
    return buffer.getvalue()


def error_facts(error: BaseException) -> tuple[str, str, str, tuple, dict]:
    """What crosses for an exception raised in the sandbox: the nearest kit or built-in class it is an
    instance of (module, name), its message, its arguments and attributes (pickled as plain data)."""
    for cls in type(error).__mro__:
        if cls.__module__ == "builtins" or is_kit_class(cls):
            break
    try:
        message = str(error)
    except Exception:  # a learner's __str__ that raises
        message = f"<{type(error).__name__}>"
    state = {k: v for k, v in getattr(error, "__dict__", {}).items() if not k.startswith("__")}
    return cls.__module__, cls.__qualname__, message, tuple(error.args), state


def rebuild_error(module: str, name: str, message: str, args: tuple, state: dict) -> BaseException:
    """The exception, on this side, as the kit or Python would have raised it (never an exit)."""
    cls: Any = RuntimeError
    try:
        if module == "builtins" or (
            module.startswith("agentlab.") and not module.startswith("agentlab.course")
        ):
            found = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
            if isinstance(found, type) and issubclass(found, Exception):
                cls = found
    except (ImportError, AttributeError):
        pass
    if cls is RuntimeError and name != "RuntimeError":
        message, args = f"{name}: {message}", ()
    error = cls.__new__(cls)
    error.args = tuple(args) if args else (message,)
    for key, value in state.items():
        try:
            setattr(error, key, value)
        except (AttributeError, TypeError):
            pass
    return error


class Peer:
    """One side of the conversation: it asks (a call, an attribute) and answers the other side's
    questions while it waits, so a learner's function can call the grader's functions and back."""

    def __init__(self, rfd: int, wfd: int, encode: Any, decode: Any):
        self.rfd, self.wfd, self.encode, self.decode = rfd, wfd, encode, decode
        self.handles = Handles()
        self.broken = ""
        self.lock = threading.RLock()  # one exchange at a time: a learner's threads, or the grader's, wait

    def post(self, message: tuple) -> None:
        send(self.wfd, self.encode(message))

    def next_message(self, timeout: float | None = None) -> tuple:
        if timeout is not None:
            import select

            ready, _, _ = select.select([self.rfd], [], [], max(0.0, timeout))
            if not ready:
                raise TimeoutError(f"no answer after {timeout:g} s")
        message = self.decode(receive(self.rfd))
        if not isinstance(message, tuple) or not message:
            raise WireError("a message that is not a tuple")
        return message

    def ask(self, request: tuple, timeout: float | None = None) -> Any:
        """Send `request`; serve the other side's requests until the answer to it comes back."""
        if self.broken:
            raise WireError(self.broken)
        with self.lock:
            return self._ask(request, timeout)

    def _ask(self, request: tuple, timeout: float | None) -> Any:
        try:
            self.post(request)
            while True:
                message = self.next_message(timeout)
                if message[0] == "return":
                    return message[1:]
                if message[0] == "raise":
                    error = rebuild_error(*message[1:6])
                    break
                self.serve(message)
        except BaseException as stop:  # an alarm in the middle of a frame leaves the two sides out of step
            self.broken = self.broken or f"{type(stop).__name__}: {stop}"
            raise
        raise error

    def serve(self, message: tuple) -> None:
        """Answer one request from the other side: ("call", n, args, kwargs) or ("getattr", n, name)."""
        kind = message[0]
        try:
            target = self.handles[message[1]]
            if kind == "call":
                value = target(*message[2], **message[3])
            elif kind == "getattr" and not str(message[2]).startswith("__"):
                value = getattr(target, message[2])
            elif kind == "protocol" and message[2] in PROTOCOL:
                value = PROTOCOL[message[2]](target, *message[3])
            else:
                raise WireError(f"an unknown request {kind!r}")
        except Exception as error:
            self.post(("raise", *error_facts(error)))
            return
        self.post(("return", value))


def fds_from(argv: list[str]) -> tuple[int, int]:
    """The two pipe ends the sandbox reads and writes, from its command line."""
    read, write = (int(x) for x in argv[-2:])
    return read, write


if __name__ == "__main__":  # pragma: no cover - only the sandbox runs this module's siblings
    sys.exit("run agentlab.course.kernel in the sandbox, not this module")
