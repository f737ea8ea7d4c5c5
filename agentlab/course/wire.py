"""The conversation between the grader and a learner's sandboxed notebook: frames, handles, and
who asks what.

The grader runs the hidden cases in its own process; the learner's functions run in the sandbox.
A call crosses as a message, a tuple whose first item says what it is ("call", "return", ...);
each message is one frame of `codec`, data only, in both directions:

- grader -> sandbox: plain data and the kit's dataclasses go by value; anything with behaviour (a
  recording function, a simulated model, a check's helper object) stays in the grader and crosses
  as a `GraderRef`: calling it in the sandbox calls the original in the grader;
- sandbox -> grader: the same rules, read as hostile: a subclass of int, float, str, list or dict
  arrives as its base value, a numpy number as its Python number, any other object of the
  learner's (a function, an instance of a class of theirs) as a `LearnerRef`, an opaque handle the
  grader can only call. A frame that is not such data is refused (`codec.CodecError`).
"""

from __future__ import annotations

import builtins
import os
import select
import struct
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from agentlab.course import codec
from agentlab.course.codec import CodecError

PLAIN = (type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, type(Ellipsis))


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
    "another-process": lambda obj, *args: in_another_process(obj, *args),
}
_HASHING = threading.Lock()


def in_another_process(function: Callable, *args: Any) -> Any:
    """`function(*args)` as if in another Python process, where `hash()` of the same text gives
    another number (it is salted per process, PYTHONHASHSEED): while it runs, `hash` is salted
    otherwise than in this one. One call at a time, since `hash` is everyone's. Called on the side
    that holds `function` (a learner's, in the sandbox), so it is their `hash` that changes."""
    with _HASHING:
        real = builtins.hash
        builtins.hash = lambda value: real(("another process", value))
        try:
            return function(*args)
        finally:
            builtins.hash = real


def _pickled_copy(obj: Any) -> Any:
    """A copy made the way Dask sends a function to a worker (so a lock inside it fails here too);
    made on the side that holds the object, of its own object: nothing pickled crosses."""
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


def receive(fd: int, most: int, timeout: float | None = None) -> bytes:
    """One frame, refused unread if it announces more than `most` bytes; all of it within `timeout`
    seconds (a sandbox that sends a frame a byte at a time does not hold the grader)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = struct.unpack(">I", _exactly(fd, 4, deadline))
    if size > most:
        raise WireError(f"a message of {size:,} bytes: more than {most:,} allowed")
    return _exactly(fd, size, deadline)


def _exactly(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None and not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError(
                "no answer in the time allowed" + (f" ({n - left:,} of {n:,} bytes)" if n > 4 else "")
            )
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


class Peer:
    """One side of the conversation: it asks (a call, an attribute) and answers the other side's
    questions while it waits, so a learner's function can call the grader's functions and back.

    `tag` names this side's handles ("G" in the grader, "L" in the sandbox); `ref(number, kind)`
    makes the stand-in for one of the other side's objects and `ref_number(obj)` says which of the
    other side's objects a stand-in is (None: not a stand-in)."""

    def __init__(self, rfd: int, wfd: int, tag: str, ref: Callable[[int, str], Any], ref_number: Callable):
        self.rfd, self.wfd, self.tag, self.ref, self.ref_number = rfd, wfd, tag, ref, ref_number
        self.sends, self.reads = (
            (codec.GRADER, codec.LEARNER) if tag == "G" else (codec.LEARNER, codec.GRADER)
        )
        self.handles = Handles()
        self.broken = ""
        self.reading = False  # a frame is being read: the grader asks the sandbox nothing meanwhile
        self.lock = threading.RLock()  # one exchange at a time: a learner's threads, or the grader's, wait

    def encode(self, message: tuple) -> bytes:
        return codec.encode(message, self._handle, self.sends)

    def _handle(self, obj: Any) -> tuple[str, int, str]:
        number = self.ref_number(obj)
        if number is not None:
            return ("L" if self.tag == "G" else "G"), number, ""
        return self.tag, self.handles.number(obj), type(obj).__name__

    def decode(self, data: bytes) -> Any:
        self.reading, was = True, self.reading
        try:
            return codec.decode(data, self._resolve, self.reads)
        finally:
            self.reading = was

    def _resolve(self, tag: str, number: int, kind: str) -> Any:
        if tag != self.tag:
            return self.ref(number, kind)
        if number not in self.handles.objects:
            raise CodecError(f"a handle this side never gave ({tag}{number})")
        return self.handles[number]

    def post(self, message: tuple) -> None:
        send(self.wfd, self.encode(message))

    def reply(self, value: Any) -> None:
        """Answer a request with `value`, or with why it cannot cross (too large, say)."""
        try:
            data = self.encode(("return", value))
        except CodecError as error:
            data = self.encode(("raise", error))
        send(self.wfd, data)

    def next_message(self, timeout: float | None = None) -> tuple:
        message = self.decode(receive(self.rfd, self.reads.bytes, timeout))
        if type(message) is not tuple or not message or type(message[0]) is not str:
            raise CodecError("not a message of this conversation")
        return message

    def ask(self, request: tuple, timeout: float | None = None) -> Any:
        """Send `request`; serve the other side's requests until the answer to it comes back."""
        if self.broken:
            raise WireError(self.broken)
        if self.reading and self.tag == "G":  # a kit value whose own checks call a learner's object
            raise CodecError("it calls into the sandbox while it is read")
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
                    error = message[1] if len(message) == 2 and isinstance(message[1], Exception) else None
                    if error is None:
                        raise CodecError("a raise that carries no exception")
                    break
                self.serve(message)
        except BaseException as stop:  # an alarm in the middle of a frame leaves the two sides out of step
            self.broken = self.broken or f"{type(stop).__name__}: {stop}"
            raise
        raise error

    def serve(self, message: tuple) -> None:
        """Answer one request from the other side: ("call", n, args, kwargs), ("getattr", n, name) or
        ("protocol", n, name, args). An attribute whose name starts with "_" is not given out, nor a
        module (nothing leads from a handle to the rest of this side)."""
        kind = message[0]
        try:
            target = (
                self.handles[message[1]] if len(message) > 1 and message[1] in self.handles.objects else None
            )
            if target is None:
                raise WireError(f"an unknown request {kind!r}")
            if kind == "call" and len(message) >= 4:
                value = target(*message[2], **message[3])
            elif kind == "getattr" and type(message[2]) is str and not message[2].startswith("_"):
                value = getattr(target, message[2])
            elif kind == "protocol" and message[2] in PROTOCOL and type(message[3]) is tuple:
                value = PROTOCOL[message[2]](target, *message[3])
            else:
                raise WireError(f"an unknown request {kind!r}")
            if isinstance(value, types.ModuleType):
                raise AttributeError(f"{message[2]} is a module")
        except Exception as error:
            self.post(("raise", error))
            return
        self.reply(value)


def fds_from(argv: list[str]) -> tuple[int, int]:
    """The two pipe ends the sandbox reads and writes, from its command line."""
    read, write = (int(x) for x in argv[-2:])
    return read, write


if __name__ == "__main__":  # pragma: no cover - only the sandbox runs this module's siblings
    sys.exit("run agentlab.course.kernel in the sandbox, not this module")
