"""Checkpoints: a run's state on disk after every step, so a run that dies can resume.

A run that is killed at step 9 of 10 should not pay for steps 1 to 8 again. With
`run_plan(..., checkpoint=path)` the run saves its state (the plan as it stands, every
finished step's output, every model call so far, the trace and its recovery counters) to
`path` after each step. `run_plan(..., checkpoint=path, resume=True)` reads it back and
carries on: finished steps keep their outputs and are not run again; a step that was running
when the process died runs again.

The file is a journal in JSON Lines, so you can read it: a head (format version and a
fingerprint of the task and the plan it belongs to), then one record a save. The first record
is the whole state; each later one holds only what changed (a step's output, its calls and
events, the clock), added at the end of the file. A record is sealed: a checksum of its text
and of the seal before it, so a record edited, dropped or moved is refused. A kill while a
record is written leaves a last line with no end; it is left out, and that one step runs again.
A run's first save, and a resumed run's, write the whole state to a temporary file renamed over
the old one (`os.replace`, atomic).

Every record is handed to the OS before the run goes on, so a killed process loses nothing
saved; it is put on the disk itself (`fsync`) at most once a second (`SYNC_SECONDS`), and always
at a run's first save and its end: a power cut or an OS crash can cost the steps saved in the
last second before it, which then run again on resume.

One run at a time writes a path (`checkpoint_lock.claimed`): a second run given a path in use is
refused, and reading it (`load`, from another notebook say) never disturbs the run writing it. The state
must have the shape `checkpoint_shape.STATE_SCHEMA` gives: resuming a different task or plan,
a newer format, or a damaged file (not UTF-8, not JSON, edited, a field of the wrong type, a
directory at the path) is a `CheckpointError` that says which, never a run that silently mixes
two or a traceback from deep inside.

A resumed run has every call of the saved state counted, once. An attempt that was running when
the process died is lost with the process: its calls were paid and never saved, so they are
counted nowhere. The step runs again, and what it pays then is counted.

A save costs what changed, not the whole run: each byte is encoded, redacted (`llm.redact`: a
key a server echoed into an error, and so into the run's reason, is not written to disk), sealed
and written once; benchmarks/checkpoint_cost.py measures it (figures in its docstring).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlab.checkpoint_shape import canonical, canonical_utf8, consistency_problem, scrubbed, shape_problem
from agentlab.llm.base import Completion, redact
from agentlab.llm.replay import completion_from_dict, completion_to_dict
from agentlab.monitor import Failure
from agentlab.plan import Plan, PlanError
from agentlab.schedule import Slot
from agentlab.trace import Event, Run
from agentlab.valid import hash_text, utf8_json

VERSION = 2  # 1: one JSON document, rewritten whole on every save (still read)
FORMAT = "agentlab-checkpoint"
_AFRESH = "delete it to start the run afresh"
SYNC_SECONDS = 1.0  # what a run saved is put on the disk itself (fsync) at most this often


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: unreadable, damaged, or from another task or plan."""


class UnsavedCall(CheckpointError):
    """A run's call that no checkpoint can hold (a set in a Completion's data): the run stops."""


def _digest(value: Any) -> str:
    return hashlib.sha256(hash_text(canonical(value))).hexdigest()


def _short(value: Any) -> str:
    return _digest(value)[:16]


def fingerprint(task: str, plan: Plan) -> dict[str, str]:
    """Short hashes of the task and of the plan a run started from (as saved: redacted)."""
    return {"task": _short(task), "plan": _short(scrubbed(plan.to_dict()))}


# --- saving and resuming a run ----------------------------------------------------------------

# A record holds what changed since the one before; reading them back in order folds them into the state.
_GROWS = ("plans", "calls", "trace", "slots", "failures")  # lists: a record holds the items added at the end
_KEYED = ("outputs", "attempts", "used")  # maps: a record holds the entries added or changed
# every other field (task, plan0, now, replans, status, reason): a record holds its new value


def save(path: str | os.PathLike, run: Run, now: float) -> None:
    """Save `run`'s state at time `now` (on its clock) to `path`: a record of what changed since
    this run's last save there, added at the end of the file; or, on its first save there, the
    whole state in a new file that replaces the old one atomically."""
    path, memo = Path(path), _memo(run)
    state = {
        "task": run.task, "plan0": run.plans[0], "plans": list(run.plans), "outputs": dict(run.outputs),
        "calls": list(run.calls), "trace": list(run.trace), "slots": list(run.slots),
        "failures": list(run.failures), "attempts": dict(run.attempts),
        "used": {step: dict(used) for step, used in run.used.items()}, "now": now,
        "replans": run.replans, "status": run.status, "reason": run.reason,
    }
    same_file = memo.get("path") == path and path.is_file() and path.stat().st_size == memo["size"]
    record = _changes(memo["state"], state) if same_file else None
    due = run.status != "running" or time.monotonic() - memo.get("synced", -SYNC_SECONDS) >= SYNC_SECONDS
    if record != {}:  # a record of what changed, or (None) of everything
        data, hashed = _encoded(state if record is None else record, state["outputs"])
        seal = _seal("" if record is None else memo["seal"], hashed)
        line = [b'{"seal":"', seal.encode(), b'","state":', data, b"}\n"]
        if record is None:  # a new file, on disk before it takes the old one's place
            head = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint(run.task, run.plans[0])}
            line.insert(0, json.dumps(head).encode() + b"\n")
            memo["size"], due = 0, True
        _write(path, line, at=None if record is None else memo["size"], sync=due)
        memo.update(path=path, state=state, seal=seal, size=memo["size"] + sum(map(len, line)), unsynced=True)
    elif due and memo["unsynced"]:  # nothing changed since the last save, which is due on the disk
        _write(path, [], at=memo["size"], sync=True)
    if due:
        memo.update(synced=time.monotonic(), unsynced=False)


def _changes(before: dict | None, now: dict) -> dict | None:
    """What changed from the state saved `before` to the state `now`, as a record (see `_GROWS`);
    None when the whole state must be saved: nothing saved yet, or something saved was taken back
    (a list that does not start with what was saved, an entry removed, another task or first plan)."""
    if before is None or before["task"] != now["task"] or before["plan0"] is not now["plan0"]:
        return None
    record = {}
    for name, value in now.items():
        old = before[name]
        if name in _GROWS:
            if value[: len(old)] != old:  # compares by identity first: quick for what was saved
                return None
            if len(value) > len(old):
                record[name] = value[len(old) :]
        elif name in _KEYED:
            if old.keys() - value.keys():
                return None
            if new := {key: v for key, v in value.items() if key not in old or old[key] != v}:
                record[name] = new
        elif value != old:
            record[name] = value
    return record


def _encoded(record: dict[str, Any], outputs: Mapping[str, str]) -> tuple[bytes, bytes]:
    """`record` as canonical JSON, redacted: the UTF-8 to write, and the bytes its seal hashes
    (the same, unless the text holds a lone surrogate, which UTF-8 cannot: then every non-ASCII
    character is written escaped). Each item is encoded and redacted once, on the save after it
    appears. A step's "finished" event says its output in the trace: saved once, in `outputs`."""
    def event(e: Event) -> list[Any]:
        said = None if e.kind == "finished" and outputs.get(e.step_id) is e.detail else e.detail
        return [e.time, e.kind, e.step_id, e.role, list(e.inputs), said]

    how = {"plan0": Plan.to_dict, "plans": Plan.to_dict, "calls": _encode_call, "trace": event,
           "slots": lambda s: [s.step_id, s.worker, s.start, s.end, s.where],
           "failures": lambda failure: [*failure[:2], failure[2].kind, failure[2].message]}
    plain = {
        name: [how[name](v) for v in value] if name in _GROWS else how.get(name, lambda v: v)(value)
        for name, value in record.items()
    }
    try:
        data = canonical_utf8(plain)
    except UnicodeEncodeError:
        text = canonical(json.loads(redact(canonical(plain))))
        return utf8_json(json.loads(text)), hash_text(text)
    if (clean := redact(text := data.decode("utf-8"))) != text:  # a key redacted may move: encoded again
        data = canonical(json.loads(clean)).encode("utf-8")
    return data, data


def _seal(before: str, text: bytes) -> str:
    """A record's checksum: of its state's text (`hash_text`) after the seal of the record before
    it, so that no record can be edited, dropped or moved without its seal (or a later one) failing."""
    seal = hashlib.sha256(before.encode())
    seal.update(text)
    return seal.hexdigest()


_memos: dict[int, tuple[weakref.ref, dict]] = {}  # by id(run): where each run last saved, and what


def _memo(run: Run) -> dict:
    """What `run` last saved, where, its seal and the file's size then (forgotten with the run)."""
    kept = _memos.get(id(run))
    if kept is None or kept[0]() is not run:
        kept = _memos[id(run)] = (weakref.ref(run), {"state": None})
        weakref.finalize(run, _memos.pop, id(run), None)
    return kept[1]


def restore(path: str | os.PathLike, run: Run, team: Mapping[str, Any]) -> float:
    """Carry `run` on from the checkpoint at `path`: finished steps keep their outputs and are
    not run again. The file must be for the run's task and first plan. Returns the clock time."""
    name, first = Path(path).name, run.plans[0]
    state = load(path, run.task, first)
    try:  # the state has the schema's shape: what can still fail here is the plans meeting the team
        run.plans = [Plan.from_dict(p, team) for p in state["plans"]]
        run.plan = run.plans[-1]
        run.outputs = dict(state["outputs"])
        run.calls = [_decode_call(c) for c in state["calls"]]
        run.trace.events = [Event(t, k, i, role, tuple(ins), run.outputs.get(i) if d is None else d)
                            for t, k, i, role, ins, d in state["trace"]]
        run.slots = [Slot(*s) for s in state["slots"]]
        now = float(state["now"])
        run.attempts, run.used = dict(state["attempts"]), dict(state["used"])
        run.replans = int(state["replans"])
        run.failures = [(i, role, Failure(kind, message)) for i, role, kind, message in state["failures"]]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"checkpoint {name} cannot be resumed: {type(e).__name__}: {e}") from None
    if problem := consistency_problem(run, first, now):  # a file edited and sealed again (fresh checksum)
        raise CheckpointError(f"checkpoint {name} is damaged: {problem}; {_AFRESH}")
    left = [s.id for s in run.plan if s.id not in run.outputs]
    detail = f"resumed from a checkpoint: {len(run.outputs)} step(s) done, to do: {', '.join(left) or 'none'}"
    run.trace.add(Event(now, "resumed", "run", "-", (), detail))
    return now


def first_plan(path: str | os.PathLike, task: str) -> Plan:
    """The plan the run saved at `path` started from (to resume it without planning again)."""
    return load(path, task)["plan0"]


def _encode_call(call: tuple[str, str, Any]) -> list[Any]:
    """A call as the checkpoint holds it; a CheckpointError naming the step if it cannot."""
    step_id, role, completion = call
    plain = completion_to_dict(completion) if isinstance(completion, Completion) else {"value": completion}
    try:
        json.dumps(plain, allow_nan=False)  # what no JSON holds: a set, an object, NaN, a cycle
    except (TypeError, ValueError, RecursionError) as e:
        said = str(e).replace("Object of type ", "a value of type ").replace(" is not JSON serializable", "")
        if not isinstance(e, TypeError):
            said = "NaN or infinity" if "float" in str(e) else "a value nested too deep or in itself"
        must = "calls must be llm.Completion objects with JSON data, or JSON values"
        said = f"step {step_id!r}'s call holds {said}, which a checkpoint cannot hold ({must})"
        raise UnsavedCall(said) from None
    return [step_id, role, plain]


def _decode_call(raw: list[Any]) -> tuple[str, str, Any]:
    step_id, role, d = raw
    return step_id, role, d["value"] if set(d) == {"value"} else completion_from_dict(d, d["backend"])


# --- writing and reading ----------------------------------------------------------------------


def _write(path: Path, data: list[bytes], at: int | None = None, sync: bool = False) -> None:
    """Hand `data` to the OS for `path` (and with `sync` have it on the disk): added at the end of
    the file there (`at` bytes long), or as a new file written beside it and renamed over it
    (`os.replace`, atomic), so that a kill or a full disk never leaves half a file: a record that
    could not be added whole is cut off again."""
    if at is None:
        if path.is_dir():
            raise CheckpointError(_a_directory(path))
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    else:
        handle, temporary = os.open(path, os.O_WRONLY | os.O_APPEND), None
    try:
        try:
            for piece in data:
                view = memoryview(piece)
                while view:
                    view = view[os.write(handle, view) :]
            if sync:
                os.fsync(handle)
        finally:
            os.close(handle)
        if temporary is not None:
            os.replace(temporary, path)
    except BaseException:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        else:
            with contextlib.suppress(OSError):
                os.truncate(path, at)
        raise


def load(path: str | os.PathLike, task: str, plan: Plan | None = None) -> dict[str, Any]:
    """Read and check the state at `path`. It must be for `task` and, when `plan` is given,
    for that plan; `state["plan0"]` is the plan the run started from."""
    path = Path(path)
    name = path.name
    head, records = _read(path)
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise CheckpointError(f"{name} is not an agentlab checkpoint")
    if head.get("version") == 1 and not records:  # one document, as the kit wrote before version 2
        state = head.get("state")
        if not isinstance(state, dict) or head.get("checksum") != _digest(state):
            raise CheckpointError(f"checkpoint {name} is damaged: its state does not match its checksum "
                                  "(was the file edited?)")
    elif head.get("version") != VERSION:
        raise CheckpointError(
            f"checkpoint {name} has format version {head.get('version')!r}; this kit reads version {VERSION}"
        )
    else:
        state = _folded(name, records)
    if problem := shape_problem(state):
        raise CheckpointError(f"checkpoint {name} is damaged: {problem}; {_AFRESH}")
    stored = head.get("fingerprint")
    if not isinstance(stored, dict):
        raise CheckpointError(f"checkpoint {name} is damaged: its fingerprint is not an object; {_AFRESH}")
    if stored.get("task") != _short(task):
        raise CheckpointError(
            f"checkpoint {name} belongs to a different task ({state.get('task', '?')[:60]!r}), "
            f"not {task[:60]!r}; use another checkpoint file, or resume=False to start over"
        )
    if plan is not None and stored.get("plan") != fingerprint(task, plan)["plan"]:
        raise CheckpointError(
            f"checkpoint {name} belongs to a different plan than the one given; "
            "use another checkpoint file, or resume=False to start over"
        )
    try:
        state["plan0"] = Plan.from_dict(state["plan0"])
    except (KeyError, TypeError, AttributeError, PlanError) as e:
        raise CheckpointError(f"checkpoint {name} holds no valid starting plan: {e}") from None
    return state


def _folded(name: str, records: list[tuple[int, Any]]) -> dict[str, Any]:
    """The state that `records` (line number, record) add up to, each checked against its seal."""
    if not records:
        raise CheckpointError(f"checkpoint {name} is damaged: it ends before its first record; {_AFRESH}")
    state: dict[str, Any] = {}
    seal = ""
    for line, record in records:
        changed = record.get("state") if isinstance(record, dict) else None
        seal = _seal(seal, hash_text(canonical(changed))) if isinstance(changed, dict) else ""
        if not seal or record.get("seal") != seal:
            raise CheckpointError(f"checkpoint {name} is damaged: its record on line {line} does not match "
                                  "its checksum (was the file edited?)")
        for field, value in changed.items():
            if field in _GROWS and isinstance(state.get(field), list) and isinstance(value, list):
                state[field] += value
            elif field in _KEYED and isinstance(state.get(field), dict) and isinstance(value, dict):
                state[field].update(value)
            else:
                state[field] = value
    return state


def _read(path: Path) -> tuple[Any, list[tuple[int, Any]]]:
    """The head and the records at `path`, one a line (with its line number); a last line with no
    end (a save killed halfway) is left out. A CheckpointError says what is wrong if that is not
    what is there."""
    name = path.name
    if path.is_dir():
        raise CheckpointError(_a_directory(path))
    try:
        text = path.read_bytes().decode("utf-8")
        try:
            return _json(text), []  # one document: a file version 1 wrote
        except json.JSONDecodeError as e:
            whole = e  # what is wrong if it holds no whole line either
        lines, at = [], 0
        for number, line in enumerate(text.split("\n")[:-1], 1):
            try:
                lines.append((number, _json(line)))
            except json.JSONDecodeError as e:
                raise json.JSONDecodeError(e.msg, text, at + e.pos) from None
            at += len(line) + 1
        if not lines:
            raise whole
        return lines[0][1], lines[1:]
    except OSError as e:
        raise CheckpointError(f"checkpoint {name} cannot be read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        problem = f"not UTF-8 text (at byte {e.start})"
    except json.JSONDecodeError as e:
        problem = f"not valid JSON ({e.msg}: line {e.lineno}, column {e.colno})"
    except CheckpointError as e:
        problem = str(e)
    except (ValueError, RecursionError) as e:  # an integer of thousands of digits; nesting too deep
        problem = f"{type(e).__name__}: {e}"
    raise CheckpointError(f"checkpoint {name} is damaged: {problem}; {_AFRESH}")


def _json(text: str) -> Any:
    return json.loads(text, parse_constant=_infinite, parse_float=_finite)


def _infinite(constant: str) -> float:
    raise CheckpointError(f"it holds {constant}, which no saved number is")


def _finite(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _infinite(text)


def _a_directory(path: Path) -> str:
    return f"the checkpoint path {str(path)!r} is a directory; give a file, e.g. {str(path / 'run.json')!r}"
