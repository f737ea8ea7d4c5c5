"""The wire's codec (`agentlab.course.codec`): what the grader reads from a learner's sandbox is data
and nothing else, within its bounds, whatever the frame holds.

The unit tests show what crosses and how it arrives; the fuzz test throws random and hostile
frames at the reader (truncated, mutated, huge lengths, deep nesting, unknown tags, huge ints,
colliding hashes, shared structure) and checks that each is read as data or refused with a
`CodecError`, quickly, within a bounded amount of memory, without building anything else.
"""

import collections
import dataclasses
import math
import pathlib
import random
import struct
import time
import tracemalloc

import pytest

from agentlab.course import kitvalues
from agentlab.course.codec import LEARNER, CodecError, decode, encode
from agentlab.plan import Plan, PlanError, Step


class Handle:
    """What a handle becomes on the reading side in these tests."""

    def __init__(self, tag, number, kind):
        self.tag, self.number, self.kind = tag, number, kind


def send(value):
    return encode(value, lambda obj: ("L", 7, type(obj).__name__))


def back(value):
    return decode(send(value), Handle)


# --- what crosses, and how ------------------------------------------------------------------------


def test_plain_values_cross_as_themselves():
    value = {
        "numbers": [0, -1, 2**63, -(2**200), 2.5, math.inf, -0.0, 3 - 4j],
        "text": ["", "é\u202e", "lone \ud800 surrogate"],
        "bytes": b"\x00\xff",
        (1, "key"): {frozenset({1, 2}), None, True, False, ...},
        "collections": [collections.Counter("aab"), collections.OrderedDict(a=1), collections.deque([1], 3)],
        "paths": [pathlib.Path("/tmp/x"), pathlib.PurePosixPath("y")],
        "types": [int, str, dict, ValueError, Step, PlanError],
    }
    got = back(value)
    assert got == value and math.isnan(back(math.nan))
    assert type(got["collections"][0]) is collections.Counter and got["collections"][2].maxlen == 3
    defaults = back(collections.defaultdict(list, {1: [2]}))
    assert defaults == {1: [2]} and defaults.default_factory is list


def test_the_kits_values_are_rebuilt_by_their_own_classes():
    plan = Plan([Step("s1", "writer", "Write."), Step("s2", "editor", "Edit.", depends_on=("s1",))])
    got = back(plan)
    assert got == plan and got["s2"].depends_on == ("s1",) and got.final_step.id == "s2"  # built, not patched
    error = back(PlanError("a cycle through s1"))
    assert type(error) is PlanError and error.args == ("a cycle through s1",)
    assert type(back(KeyError("k"))) is KeyError


def test_odd_subclasses_arrive_as_their_base_values_and_behaviour_as_a_handle():
    class Yes(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    got = back([Yes("flat"), lambda: 1, object()])
    assert got[0] == "flat" and type(got[0]) is str and got[0] != "deep"
    assert isinstance(got[1], Handle) and got[1].kind == "function" and got[2].kind == "object"

    class MyError(PlanError):  # the learner's own class: the kit's nearest one
        pass

    assert type(back(MyError("no"))) is PlanError
    assert type(back(SystemExit(3))) is RuntimeError  # never an exit, on the grader's side


def test_a_name_reaches_only_the_kits_own_classes():
    assert kitvalues.kit_class("agentlab.plan:Step") is Step
    for key in (
        "agentlab.plan:loads.__code__.__class__",  # CodeType, the way the old unpickler allowed
        "agentlab.plan:loads",  # a function, not a class
        "agentlab.plan:json.JSONDecoder",  # imported into the module, not defined there
        "types:CodeType",
        "builtins:eval",
        "builtins:bytearray",
        "builtins:SystemExit",
        "agentlab.course.grading:Result",  # the grader's own classes are not data
        "agentlab.nothing:X",
    ):
        assert kitvalues.kit_class(key) is None, key
    with pytest.raises(CodecError, match="not a type that crosses"):
        decode(b"y" + struct.pack(">I", 17) + b"builtins:bytearray", Handle)

    class Step2:  # a learner's class that borrows a kit name
        __module__, __qualname__ = "agentlab.plan", "Step"

    assert isinstance(back(Step2()), Handle)


def test_a_rebuilt_exception_cannot_be_turned_into_something_else():
    state = {"__class__": SystemExit, "with_traceback": 1, "args": ("x",), "_hidden": 1, "step": "s1"}
    error = kitvalues.rebuild_error("agentlab.plan:PlanError", "bad", ("bad",), state)
    assert type(error) is PlanError and error.args == ("bad",) and error.step == "s1"
    assert not hasattr(error, "_hidden") and callable(error.with_traceback)
    odd = kitvalues.rebuild_error("agentlab.plan:loads.__code__.__class__", "x", (1,), {})
    assert type(odd) is RuntimeError and odd.args == ("loads.__code__.__class__: x",)


def test_a_kit_value_the_kit_would_not_build_is_refused():
    bad = encode(Step("s1", "w", "i"), None).replace(b"\x00\x00\x00\x02id", b"\x00\x00\x00\x02ix")
    with pytest.raises(CodecError, match="no field"):
        decode(bad, Handle)
    looped = Plan.__new__(Plan)
    object.__setattr__(looped, "steps", (Step("s1", "w", "i", depends_on=("s1",)),))
    object.__setattr__(looped, "roles", None)
    with pytest.raises(CodecError, match="the kit does not build"):
        decode(encode(looped, None), Handle)  # a plan whose step waits for itself


# --- bounds ---------------------------------------------------------------------------------------


def test_what_a_sandbox_may_send_is_bounded_and_refused_fast():
    shared = ["s1"]
    for _ in range(23):
        shared = [shared, shared]  # 2^23 leaves in 23 lists
    started = time.monotonic()
    with pytest.raises(CodecError, match="too large to send"):
        send(shared)
    looped = []
    looped.append(looped)
    with pytest.raises(CodecError, match="too large to send"):
        send(looped)
    with pytest.raises(CodecError, match="bits"):
        send(2**5000)
    assert time.monotonic() - started < 2
    assert back([[1, 2]] * 3) == [[1, 2]] * 3  # a structure shared a little crosses whole


HOSTILE = {
    "empty": b"",
    "unknown tag": b"\x80\x04",  # a pickle
    "huge list": b"l\xff\xff\xff\xff",
    "huge string": b"s\xff\xff\xff\xff" + b"x" * 100,
    "huge int": b"i\x00\x10\x00\x00" + b"\x01" * 2**20,
    "deep": b"l\x00\x00\x00\x01" * 100_000 + b"N",
    "trailing": b"NN",
    "truncated float": b"f\x00\x00",
    "handle never given": b"G" + struct.pack(">Q", 99) + b"\x00\x00\x00\x00",
    "deque maxlen": b"Qs\x00\x00\x00\x01x\x00\x00\x00\x00",
    "defaultdict factory": b"Dy" + struct.pack(">I", 16) + b"agentlab.plan:St" + b"\x00\x00\x00\x00",
    "unhashable key": b"d\x00\x00\x00\x01l\x00\x00\x00\x00N",
    "exception not a class": b"x"
    + struct.pack(">I", 12)
    + b"builtins:len"
    + b"\x00" * 4
    + b"t"
    + b"\x00" * 8,
}


def resolve(tag, number, kind):
    if tag == "L":
        return Handle(tag, number, kind)
    raise KeyError(number)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_frame_is_refused_with_a_codec_error(name):
    frame = HOSTILE[name]
    try:
        got = decode(frame, resolve)
    except CodecError:
        return
    assert name == "exception not a class" and type(got) is RuntimeError  # rebuilt as a plain error


def test_hashes_that_all_collide_stop_at_the_deadline():
    modulus = 2**61 - 1  # every one of these ints hashes to 1
    frame = encode({1 + i * modulus for i in range(4_000)}, None)
    started = time.monotonic()
    with pytest.raises(CodecError, match="took more than"):
        decode(frame, resolve, seconds=0.01)
    assert time.monotonic() - started < 5


# --- fuzz -----------------------------------------------------------------------------------------

CORPUS = [
    None,
    [1, -2, 2.5, "text", b"raw", (1, 2), {3}, frozenset({4}), {"k": [None, True, ...]}],
    {(1, 2): collections.Counter("abc"), 5: collections.OrderedDict(z=1), "q": collections.deque([1])},
    Plan([Step("s1", "writer", "Write."), Step("s2", "editor", "Edit.", depends_on=("s1",))]),
    [PlanError("bad"), KeyError("k"), ValueError("v", 3)],
    [lambda: 1, pathlib.Path("/x"), int, Step, 2**100, -(2**70), 1j],
]


def allowed(value, depth=0):
    """Whether `value` holds nothing but plain data, kit values and handles."""
    assert depth < 200
    kind = type(value)
    if kind in (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), Handle) or kind in (
        pathlib.PosixPath,
        pathlib.PurePosixPath,
    ):
        return True
    if isinstance(value, type):
        return value in kitvalues.BUILTIN_TYPES.values() or kitvalues.is_data_class(value)
    if kind in (list, tuple, set, frozenset, collections.deque):
        return all(allowed(v, depth + 1) for v in value)
    if kind in (dict, collections.Counter, collections.OrderedDict, collections.defaultdict):
        return all(allowed(k, depth + 1) and allowed(v, depth + 1) for k, v in value.items())
    if isinstance(value, Exception):
        return kitvalues.is_data_class(kind) and allowed(value.args, depth + 1)
    if dataclasses.is_dataclass(value):
        return kitvalues.is_data_class(kind) and all(
            allowed(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        )
    return False


def mutations(rng: random.Random, frame: bytes):
    """Frames like `frame`, broken in the ways a hostile sandbox would break it."""
    data = bytearray(frame)
    kind = rng.randrange(6)
    if kind == 0 and data:  # cut short
        return bytes(data[: rng.randrange(len(data))])
    if kind == 1 and data:  # a byte changed
        data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 2 and len(data) > 4:  # a length made huge
        at = rng.randrange(len(data) - 4)
        data[at : at + 4] = struct.pack(">I", rng.choice([2**32 - 1, 2**31, 10**6, 65_536]))
    elif kind == 3:  # a tag inserted
        data.insert(rng.randrange(len(data) + 1), rng.choice(b"NTFEqfcsbilteDzdCOQpPkmxyGL\x80?"))
    elif kind == 4:  # random bytes
        return rng.randbytes(rng.randrange(1, 64))
    else:  # two frames run together
        return bytes(data + data)
    return bytes(data)


def test_fuzz_every_frame_is_data_or_a_codec_error_quickly_and_in_bounded_memory():
    rng = random.Random(34)
    frames = [send(value) for value in CORPUS]
    refused = read = 0
    slowest = biggest = 0.0
    tracemalloc.start()
    try:
        for _ in range(1500):
            frame = mutations(rng, rng.choice(frames))
            tracemalloc.reset_peak()
            started = time.perf_counter()
            try:
                got = decode(frame, resolve)
            except CodecError:
                refused += 1
            else:
                read += 1
                assert allowed(got), (frame, got)
            slowest = max(slowest, time.perf_counter() - started)
            biggest = max(biggest, tracemalloc.get_traced_memory()[1] / (len(frame) + 1000))
    finally:
        tracemalloc.stop()
    assert refused > 400 and read > 50, (refused, read)
    assert slowest < 1.0, slowest
    assert biggest < 256, biggest  # bytes of objects per byte of frame, at most (a set: 216 from 5)
    print(f"fuzz: {refused} refused, {read} read as data; slowest {slowest * 1000:.1f} ms")


def test_the_most_objects_a_frame_can_ask_for_stay_within_the_bound():
    """Empty lists and sets: the most memory per byte of frame. 250 bytes per value, at most, so a
    frame of LEARNER.items values makes at most about 60 MB; refused beyond that number."""
    for empty in ([], set(), collections.deque(), collections.OrderedDict(), Step("s", "w", "i")):
        count = 1_000
        weight = {collections.deque: 4, Step: 15}.get(type(empty), 1)  # a deque counts 4, a Step its fields
        frame = send([empty] * count)
        tracemalloc.start()
        try:
            assert len(decode(frame, resolve)) == count
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak / (count * weight) < 250, (empty, peak)
    with pytest.raises(CodecError):
        send([[]] * (LEARNER.items + 1))


def test_a_kit_value_whose_checks_would_call_into_the_sandbox_is_refused_not_served():
    """`Replan` checks that its planner has a `replan` method: on a learner's object that would be a
    call into the sandbox while the grader reads (each up to a minute, as many as the frame holds)."""
    from agentlab.course import wire
    from agentlab.recovery import Replan

    class Ref:
        def __getattr__(self, name):
            return grader.ask(("getattr", 1, name))

    grader = wire.Peer(-1, -1, "G", lambda number, kind: Ref(), lambda obj: None)
    hostile = object.__new__(Replan)
    object.__setattr__(hostile, "planner", object())
    object.__setattr__(hostile, "max_replans", 2)
    frame = encode(("return", hostile), lambda obj: ("L", 1, "object"))
    with pytest.raises(CodecError, match="a Replan the kit does not build .* calls into the sandbox"):
        grader.decode(frame)


def test_a_frame_sent_a_byte_at_a_time_does_not_hold_the_grader():
    import os

    from agentlab.course import wire

    read, write = os.pipe()
    os.write(write, struct.pack(">I", 1000) + b"q")  # 1,000 bytes announced, one sent
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="1 of 1,000 bytes"):
        wire.receive(read, LEARNER.bytes, timeout=0.3)
    assert time.monotonic() - started < 2
    os.write(write, struct.pack(">I", LEARNER.bytes + 1))
    with pytest.raises(wire.WireError, match="more than"):  # refused unread
        wire.receive(read, LEARNER.bytes, timeout=0.3)
    os.close(read)
    os.close(write)
