"""What crosses between the grader and a learner's sandbox: data, never code.

    frame = encode(value, handle)      # bytes; `handle(obj)` names an object that stays on this side
    value = decode(frame, resolve)     # `resolve(tag, number, kind)` turns a name back into an object

The grader reads what the sandbox sends as hostile (DESIGN.md section 7), so this is no pickle: a
value is a one-letter tag and its contents, and the reader builds nothing but

- plain values: None, True and False, int, float (nan and inf too), complex, str, bytes, list,
  tuple, dict (any hashable keys), set, frozenset, `...`, Counter, OrderedDict, defaultdict, deque,
  PosixPath and PurePosixPath;
- the kit's own dataclasses and enums, by class and field: the class is looked up in the kit's own
  modules by name (`kit_class`), never by an attribute path, and built by calling it with its
  fields, so its own checks run; the kit's and Python's exceptions, by class, message, arguments and
  plain attributes (`rebuild_error`), never one that ends the process;
- a handle for anything else: one side's object stays there and the other side can only call it.

A subclass of int, str, list, ... is sent as its base value (an `==` that always says yes is lost
on the way), a numpy number as its Python number. Reading is bounded (`Bounds`, MAX_DEPTH levels,
MAX_SECONDS); nothing shared is read, so nothing is larger than its frame. Else: a `CodecError`.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import pathlib
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentlab.course.kitvalues import (
    BASES,
    MAX_NAME,
    KitValueError,
    base_value,
    build,
    error_facts,
    is_data_class,
    key_of,
    kit_class,
    rebuild_error,
)

MAX_DEPTH = 100  # levels of nesting
MAX_INT_BYTES = 512  # an integer of at most 4,096 bits (Python prints up to 4,300 digits)
MAX_SECONDS = 10.0  # to read one frame, whatever its keys' hashes do
_CONTAINERS = {list: b"l", tuple: b"t", set: b"e", frozenset: b"z", collections.deque: b"Q"}
_MAPPINGS = {
    dict: b"d",
    collections.Counter: b"C",
    collections.OrderedDict: b"O",
    collections.defaultdict: b"D",
}
_PATHS = {pathlib.PosixPath: b"p", pathlib.PurePosixPath: b"P"}


_U32, _U64, _I64, _F64, _C128 = (struct.Struct(f) for f in (">I", ">Q", ">q", ">d", ">dd"))
_FAST = frozenset(b"sqf")


@dataclass(frozen=True)
class Bounds:
    """How much one frame may hold. Each value read makes at most about 250 bytes of objects (a
    deque, which makes 600, counts as 4), so a frame the grader reads makes at most about 60 MB."""

    items: int
    bytes: int


LEARNER = Bounds(250_000, 8 * 2**20)  # what a sandbox may send, and the grader reads
GRADER = Bounds(
    1_000_000, 32 * 2**20
)  # what the grader may send (a solution's largest: 127,017 values, 1.8 MB)


class CodecError(ValueError):
    """A value this codec does not carry, or a frame that is not one of its values."""


# --- writing ----------------------------------------------------------------------------------------


def encode(value: Any, handle: Callable[[Any], tuple[str, int, str]], bounds: Bounds = LEARNER) -> bytes:
    """`value` as a frame; `handle(obj)` gives ("G" or "L", number, kind) for what is not data."""
    writer = _Writer(handle, bounds)
    writer.value(value, 0)
    return bytes(writer.out)


class _Writer:
    """Writes one frame. A structure met again (the same list twice) is written again, copied from
    where it was first written, so 23 lists nested in pairs reach the bound in 20 copies, not 2^23
    steps."""

    def __init__(self, handle: Callable[[Any], tuple[str, int, str]], bounds: Bounds):
        self.out, self.items, self.handle, self.bounds = bytearray(), 0, handle, bounds
        self.written: dict[int, tuple[Any, int, int, int, int]] = {}  # id -> (obj, start, end, items, height)
        self.deepest = 0

    def value(self, obj: Any, depth: int) -> None:
        kind = type(obj)
        if kind is str and len(obj) < 2**16 or kind is int and -(2**63) <= obj < 2**63 or kind is float:
            self.items += 1
            if kind is str:
                data = obj.encode("utf-8", "surrogatepass")
                self.out += b"s" + struct.pack(">I", len(data)) + data
            else:
                self.out += b"q" + struct.pack(">q", obj) if kind is int else b"f" + struct.pack(">d", obj)
            return
        seen = self.written.get(id(obj))
        if seen is not None and seen[0] is obj:
            _, start, end, items, height = seen
            self.check(self.items + items, depth + height, len(self.out) + end - start)
            self.out += self.out[start:end]
            self.items += items
            self.deepest = max(self.deepest, depth + height)
            return
        start, items, deepest = len(self.out), self.items, self.deepest
        self.deepest = depth
        self.write(obj, depth)
        if type(obj) not in (int, float, str, bytes, bool, type(None)):
            self.written[id(obj)] = (obj, start, len(self.out), self.items - items, self.deepest - depth)
        self.deepest = max(deepest, self.deepest)

    def check(self, items: int, depth: int, size: int) -> None:
        if items > self.bounds.items or depth > MAX_DEPTH or size > self.bounds.bytes:
            raise CodecError(
                f"too large to send: more than {self.bounds.items:,} values, {MAX_DEPTH} levels or "
                f"{self.bounds.bytes // 2**20} MB (or a list that holds itself)"
            )

    def write(self, obj: Any, depth: int) -> None:
        self.items += 1
        self.check(self.items, depth, len(self.out))
        kind = type(obj)
        if obj is None or obj is True or obj is False or obj is Ellipsis:
            self.out += {None: b"N", True: b"T", False: b"F", Ellipsis: b"E"}[obj]
        elif kind is int:
            self.integer(obj)
        elif kind is float or kind is complex:
            self.out += (
                b"f" + struct.pack(">d", obj)
                if kind is float
                else b"c" + struct.pack(">dd", obj.real, obj.imag)
            )
        elif kind is str:
            self.text(b"s", obj)
        elif kind is bytes:
            self.sized(b"b", obj)
        elif kind in _CONTAINERS:
            self.out += _CONTAINERS[kind]
            if kind is collections.deque:
                self.value(obj.maxlen, depth + 1)
            self.many(list(obj), depth)
        elif kind in _MAPPINGS:
            self.out += _MAPPINGS[kind]
            if kind is collections.defaultdict:
                self.value(obj.default_factory if obj.default_factory in BASES else None, depth + 1)
            self.pairs(list(obj.items()), depth)
        elif kind in _PATHS:
            self.text(_PATHS[kind], str(obj))
        elif isinstance(obj, type) and (obj in BASES or (obj is not type and is_data_class(obj))):
            self.text(b"y", key_of(obj))
        elif isinstance(obj, BaseException):
            self.error(obj, depth)
        elif isinstance(obj, enum.Enum) and is_data_class(kind):
            self.text(b"m", key_of(kind))
            self.text(b"", obj.name)
        elif dataclasses.is_dataclass(kind) and is_data_class(kind):
            self.text(b"k", key_of(kind))
            names = [f.name for f in dataclasses.fields(obj) if hasattr(obj, f.name)]
            self.pairs([(name, getattr(obj, name)) for name in names], depth)
        elif (base := next((b for b in BASES if isinstance(obj, b)), None)) is not None:
            self.value(base_value(obj, base), depth)
        elif kind.__module__.partition(".")[0] == "numpy" and hasattr(obj, "tolist"):
            self.value(obj.tolist(), depth)
        else:
            tag, number, name = self.handle(obj)
            self.out += tag.encode() + struct.pack(">Q", number)
            self.text(b"", name[:MAX_NAME])

    def error(self, error: BaseException, depth: int) -> None:
        key, message, args, state = error_facts(error)
        self.text(b"x", key)
        self.text(b"", message)
        mark = len(self.out), self.items
        try:
            self.value(args, depth + 1)
            self.pairs(list(state.items()), depth)
        except CodecError:  # arguments too large to send: the message alone
            del self.out[mark[0] :]
            self.items = mark[1]
            self.written = {k: v for k, v in self.written.items() if v[2] <= mark[0]}
            self.out += b"t" + struct.pack(">II", 0, 0)

    def integer(self, n: int) -> None:
        if -(2**63) <= n < 2**63:
            self.out += b"q" + struct.pack(">q", n)
            return
        size = (n.bit_length() + 8) // 8
        if size > MAX_INT_BYTES:
            raise CodecError(f"an integer of more than {MAX_INT_BYTES * 8:,} bits: too large to send")
        self.sized(b"i", n.to_bytes(size, "big", signed=True))

    def text(self, tag: bytes, text: str) -> None:
        if len(text) > self.bounds.bytes:
            raise CodecError(f"a string of more than {self.bounds.bytes // 2**20} MB: too large to send")
        self.sized(tag, text.encode("utf-8", "surrogatepass"))

    def sized(self, tag: bytes, data: bytes) -> None:
        self.out += tag + struct.pack(">I", len(data)) + data

    def many(self, items: list, depth: int) -> None:
        self.out += struct.pack(">I", len(items))
        for item in items:
            self.value(item, depth + 1)

    def pairs(self, items: list[tuple[Any, Any]], depth: int) -> None:
        self.out += struct.pack(">I", len(items))
        for key, value in items:
            self.value(key, depth + 1)
            self.value(value, depth + 1)


# --- reading ----------------------------------------------------------------------------------------


def decode(data: bytes, resolve: Callable, bounds: Bounds = LEARNER, seconds: float = MAX_SECONDS) -> Any:
    """The value a frame holds; `resolve(tag, number, kind)` gives what a handle stands for here.
    A frame that is not exactly one value of this codec, within the bounds, is a CodecError."""
    if len(data) > bounds.bytes:
        raise CodecError(f"a frame of {len(data):,} bytes: more than {bounds.bytes // 2**20} MB")
    reader = _Reader(bytes(data), resolve, time.monotonic() + seconds, bounds.items)
    try:
        value = reader.value(0)
    except CodecError:
        raise
    except KitValueError as error:
        raise CodecError(str(error)) from None
    except (
        RecursionError,
        MemoryError,
        TypeError,
        ValueError,
        OverflowError,
        LookupError,
        struct.error,
    ) as e:
        raise CodecError(f"not a value the grader reads ({type(e).__name__}: {str(e)[:100]})") from None
    if reader.at != len(reader.data):
        raise CodecError(f"{len(reader.data) - reader.at:,} bytes after the value")
    return value


class _Reader:
    def __init__(self, data: bytes, resolve: Callable[[str, int, str], Any], deadline: float, most: int):
        self.data, self.at, self.items, self.resolve, self.deadline = data, 0, 0, resolve, deadline
        self.most = most

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.at:
            raise CodecError(f"cut short: {n:,} bytes announced, {len(self.data) - self.at:,} left")
        self.at += n
        return self.data[self.at - n : self.at]

    def unpack(self, fmt: struct.Struct) -> tuple:
        self.take(fmt.size)
        return fmt.unpack_from(self.data, self.at - fmt.size)

    def count(self, each: int) -> int:
        """A length to come, refused before anything is made if the frame cannot hold it."""
        (n,) = self.unpack(_U32)
        if n * each > len(self.data) - self.at or self.items + n > self.most:
            raise CodecError(f"{n:,} values announced: more than the frame holds or {self.most:,}")
        return n

    def text(self, limit: int = 2**32) -> str:
        n = self.count(1)
        if n > limit:
            raise CodecError(f"a name of {n:,} bytes")
        return self.take(n).decode("utf-8", "surrogatepass")

    def value(self, depth: int) -> Any:
        self.items += 1
        if self.items > self.most or depth > MAX_DEPTH:
            raise CodecError(f"more than {self.most:,} values or {MAX_DEPTH} levels")
        if not self.items & 1023 and time.monotonic() > self.deadline:
            raise CodecError(f"it took more than {MAX_SECONDS:g} s to read")
        data, at = self.data, self.at
        if at + 9 <= len(data) and data[at] in _FAST:  # a string, int or float: most of what crosses
            if data[at] != 115:  # not "s"
                self.at = at + 9
                return (_I64 if data[at] == 113 else _F64).unpack_from(data, at + 1)[0]
            (n,) = _U32.unpack_from(data, at + 1)
            if n > len(data) - at - 5:
                raise CodecError(f"cut short: {n:,} bytes announced, {len(data) - at - 5:,} left")
            self.at = at + 5 + n
            return data[at + 5 : at + 5 + n].decode("utf-8", "surrogatepass")
        tag = self.take(1)
        simple = _SIMPLE.get(tag)
        if simple is not None:
            return simple(self)
        if tag in (b"l", b"t", b"e", b"z"):
            return self.many(tag, depth)
        if tag in (b"d", b"C", b"O", b"D"):
            return self.mapping(tag, depth)
        if tag == b"Q":
            maxlen, self.items = self.value(depth + 1), self.items + 3  # a deque's first block: 600 bytes
            if maxlen is not None and type(maxlen) is not int:
                raise CodecError("a deque whose maxlen is not a number")
            return collections.deque(self.many(b"l", depth), maxlen)
        if tag in (b"k", b"m", b"x", b"y"):
            return self.kit_value(tag, depth)
        if tag in (b"G", b"L"):
            (number,) = self.unpack(_U64)
            return self.resolve(tag.decode(), number, self.text(MAX_NAME))
        raise CodecError(f"an unknown tag {tag!r} at byte {self.at - 1:,}")

    def many(self, tag: bytes, depth: int) -> Any:
        items = [self.value(depth + 1) for _ in range(self.count(1))]
        if tag in (b"e", b"z"):
            found = set()
            for item in items:  # one at a time, so a deadline stops keys whose hashes all collide
                found.add(item)
                if time.monotonic() > self.deadline:
                    raise CodecError(f"it took more than {MAX_SECONDS:g} s to read")
            return found if tag == b"e" else frozenset(found)
        return tuple(items) if tag == b"t" else items

    def mapping(self, tag: bytes, depth: int) -> Any:
        factory = self.value(depth + 1) if tag == b"D" else None
        if factory is not None and factory not in BASES:
            raise CodecError("a defaultdict whose default is not a plain type")
        kind = {b"d": dict, b"C": collections.Counter, b"O": collections.OrderedDict}.get(tag)
        found = kind() if kind else collections.defaultdict(factory)
        for _ in range(self.count(2)):
            key = self.value(depth + 1)
            found[key] = self.value(depth + 1)
            if time.monotonic() > self.deadline:
                raise CodecError(f"it took more than {MAX_SECONDS:g} s to read")
        return found

    def kit_value(self, tag: bytes, depth: int) -> Any:
        key = self.text(MAX_NAME)
        cls = _kit_class(key)
        if tag == b"y":
            if cls is None or not (cls in BASES or cls is type(None) or is_data_class(cls)):
                raise CodecError(f"{key} is not a type that crosses")
            return cls
        if tag == b"x":
            message, args = self.text(), self.value(depth + 1)
            state = self.pairs(depth)
            return rebuild_error(key, message, args if type(args) is tuple else (), state)
        if tag == b"m":
            name = self.text(MAX_NAME)
            if cls is None or not issubclass(cls, enum.Enum) or name not in cls.__members__:
                raise CodecError(f"{key}.{name} is not one of the kit's values")
            return cls.__members__[name]
        if cls is None or not dataclasses.is_dataclass(cls):
            raise CodecError(f"{key} is not one of the kit's values")
        return build(cls, self.pairs(depth))

    def pairs(self, depth: int) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for _ in range(self.count(2)):
            name = self.value(depth + 1)
            if type(name) is not str or name in found:
                raise CodecError("a field whose name is not text, or named twice")
            found[name] = self.value(depth + 1)
        return found


_kit_class = functools.lru_cache(maxsize=4096)(kit_class)

_SIMPLE: dict[bytes, Callable[[_Reader], Any]] = {
    b"N": lambda r: None,
    b"T": lambda r: True,
    b"F": lambda r: False,
    b"E": lambda r: Ellipsis,
    b"q": lambda r: r.unpack(_I64)[0],
    b"f": lambda r: r.unpack(_F64)[0],
    b"c": lambda r: complex(*r.unpack(_C128)),
    b"s": lambda r: r.text(),
    b"b": lambda r: r.take(r.count(1)),
    b"i": lambda r: _big(r.take(r.count(1))),
    b"p": lambda r: pathlib.PosixPath(r.text(4096)),
    b"P": lambda r: pathlib.PurePosixPath(r.text(4096)),
}


def _big(data: bytes) -> int:
    if len(data) > MAX_INT_BYTES:
        raise CodecError(f"an integer of more than {MAX_INT_BYTES * 8:,} bits")
    return int.from_bytes(data, "big", signed=True)
