"""Checkpoints: a run's state on disk after every step, so a run that dies can resume.

A run that is killed at step 9 of 10 should not pay for steps 1 to 8 again. With
`run_plan(..., checkpoint=path)` the run writes its state (the plan as it stands,
every finished step's output, every model call so far, the trace and its
recovery counters) to `path` after each step. `run_plan(..., checkpoint=path,
resume=True)` reads it back and carries on: finished steps keep their outputs and
are not run again; a step that was running when the process died runs again.

The file is JSON, so you can read it. It is written to a temporary file first and
then renamed over the old one (`os.replace`, atomic), so a kill mid-write leaves
the previous checkpoint whole, never half a file (the temporary file it leaves
behind is removed by the next run that uses the path). One run at a time writes a path
(`claimed`): a second run given a path in use is refused, and reading it (`load`, from
another notebook say) never disturbs the run writing it. It carries a format version, a
fingerprint of the task and the plan it belongs to, and a checksum of its state,
and its state must have the shape `checkpoint_shape.STATE_SCHEMA` gives: resuming a different task
or plan, a newer format, or a damaged file (not UTF-8, not JSON, edited, a field
of the wrong type, a directory at the path) is a `CheckpointError` that says
which, never a run that silently mixes two or a traceback from deep inside.

What is saved passes through `llm.redact` first: a key that a server echoed into an
error message (and so into the run's reason) is not written to disk.

A resumed run has every call of the saved state counted, once. An attempt that was
running when the process died is lost with the process: its calls were paid and
never saved, so they are counted nowhere. The step runs again, and what it pays
then is counted.

The whole file is rewritten after every step, simple and safe; what makes that quick is
that each output, call and event is encoded and redacted once, on the save after it appears,
and kept for the saves after (`_once`). A save still writes every byte saved so far, so with
outputs of hundreds of KB a long run pays for it (see benchmarks/checkpoint_cost.py); a much
longer run would append to a log instead.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import math
import os
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentlab.checkpoint_shape import shape_problem
from agentlab.llm.base import Completion, redact
from agentlab.llm.replay import completion_from_dict, completion_to_dict
from agentlab.monitor import Failure
from agentlab.plan import Plan, PlanError
from agentlab.schedule import Slot
from agentlab.trace import Event, Run
from agentlab.valid import hash_text, utf8_json

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

VERSION = 1
FORMAT = "agentlab-checkpoint"
_AFRESH = "delete it to start the run afresh"


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: unreadable, damaged, or from another task or plan."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(hash_text(text)).hexdigest()


def _short(value: Any) -> str:
    return _digest(value)[:16]


def fingerprint(task: str, plan: Plan) -> dict[str, str]:
    """Short hashes of the task and of the plan a run started from (as saved: redacted)."""
    return {"task": _short(task), "plan": _short(_scrubbed(plan.to_dict()))}


def _scrubbed(value: Any) -> Any:
    """`value` (JSON: dicts, lists, text, numbers) with every credential in it redacted. (`redact`
    keeps JSON text valid, and one pass over the whole text is quicker than one per string.)"""
    return json.loads(redact(json.dumps(value, ensure_ascii=False)))


# --- saving and resuming a run ----------------------------------------------------------------


def save(path: str | os.PathLike, run: Run, now: float) -> None:
    """Write `run`'s state at time `now` (on its clock) to `path`, atomically."""
    made = _made_for(run)  # each output, call and event is encoded and redacted once
    items = {
        "outputs": [(k, v, lambda v: v) for k, v in sorted(run.outputs.items())],
        "calls": [(i, c, _encode_call) for i, c in enumerate(run.calls)],
        "trace": [(i, e, _encode_event) for i, e in enumerate(run.trace)],
        "slots": [(i, s, _encode_slot) for i, s in enumerate(run.slots)],
        "failures": [(i, f, _encode_failure) for i, f in enumerate(run.failures)],
    }
    small = {
        "task": run.task,
        "plan0": run.plans[0].to_dict(),  # the plan the run started from: its fingerprint
        "plans": [p.to_dict() for p in run.plans],
        "now": now,
        "attempts": run.attempts,
        "used": run.used,
        "replans": run.replans,
        "status": run.status,
        "reason": run.reason,
    }
    parts = {name: [_canonical(value)] for name, value in _scrubbed(small).items()}  # each a list of pieces
    for name, listed in items.items():
        texts = [_once(made, (name, key), value, how) for key, value, how in listed]
        if name == "outputs":
            texts = [f"{_canonical(k)}:{text}" for (k, _, _), text in zip(listed, texts, strict=True)]
        parts[name] = ["{" if name == "outputs" else "[", texts, "}" if name == "outputs" else "]"]
    _write(Path(path), run.task, run.plans[0], dict(sorted(parts.items())))


_ITEM = ",\n   "  # between two items of a list in the file: one a line
_made: dict[int, tuple[weakref.ref, dict]] = {}  # by id(run): each run's items, encoded and redacted


def _made_for(run: Run) -> dict:
    """The items of `run` already encoded (forgotten when the run is)."""
    kept = _made.get(id(run))
    if kept is None or kept[0]() is not run:
        kept = _made[id(run)] = (weakref.ref(run), {})
        weakref.finalize(run, _made.pop, id(run), None)
    return kept[1]


def _once(made: dict, key: tuple, value: Any, how: Any) -> str:
    """`value`'s item of the state as canonical JSON text, redacted: made on its first save and
    kept while the value is the same object (a finished step's output never changes), so a save
    costs what changed, not the whole run's text again (redacting was most of a save's time)."""
    kept = made.get(key)
    if kept is None or kept[0] is not value:
        text = _canonical(how(value))
        clean = redact(text)
        kept = made[key] = (value, clean if clean == text else _canonical(json.loads(clean)))
    return kept[1]


def _canonical(value: Any) -> str:
    """JSON text as the checksum reads it: sorted keys, no spaces, characters as themselves."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _encode_event(e: Event) -> list[Any]:
    return [e.time, e.kind, e.step_id, e.role, list(e.inputs), e.detail]


def _encode_slot(s: Slot) -> list[Any]:
    return [s.step_id, s.worker, s.start, s.end, s.where]


def _encode_failure(failure: tuple[str, str, Failure]) -> list[Any]:
    step_id, role, f = failure
    return [step_id, role, f.kind, f.message]


def restore(path: str | os.PathLike, run: Run, team: Mapping[str, Any]) -> float:
    """Carry `run` on from the checkpoint at `path`: finished steps keep their outputs and are
    not run again. The file must be for the run's task and first plan. Returns the clock time."""
    name = Path(path).name
    state = load(path, run.task, run.plans[0])
    try:  # the state has the schema's shape: what can still fail here is the plans meeting the team
        run.plans = [Plan.from_dict(p, team) for p in state["plans"]]
        run.plan = run.plans[-1]
        run.outputs = dict(state["outputs"])
        run.calls = [_decode_call(c) for c in state["calls"]]
        run.trace.events = [Event(t, k, i, role, tuple(ins), d) for t, k, i, role, ins, d in state["trace"]]
        run.slots = [Slot(*s) for s in state["slots"]]
        now = float(state["now"])
        run.attempts, run.used = dict(state["attempts"]), dict(state["used"])
        run.replans = int(state["replans"])
        run.failures = [(i, role, Failure(kind, message)) for i, role, kind, message in state["failures"]]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CheckpointError(f"checkpoint {name} cannot be resumed: {type(e).__name__}: {e}") from None
    if problem := _inconsistent(run):  # a file edited and sealed again with a fresh checksum
        raise CheckpointError(f"checkpoint {name} is damaged: {problem}; {_AFRESH}")
    left = [s.id for s in run.plan if s.id not in run.outputs]
    detail = f"resumed from a checkpoint: {len(run.outputs)} step(s) done, to do: {', '.join(left) or 'none'}"
    run.trace.add(Event(now, "resumed", "run", "-", (), detail))
    return now


def _inconsistent(run: Run) -> str | None:
    """What in a restored state contradicts the rest of it (a run saves none of these), or None:
    an output, attempt or failure for a step no plan has, or a step done that was never tried."""
    steps = {step.id for plan in run.plans for step in plan}
    for what, ids in (("an output", run.outputs), ("attempts", run.attempts),
                      ("a failure", [i for i, _, _ in run.failures])):
        if stray := sorted(set(ids) - steps):
            return f"it holds {what} for step {stray[0]!r}, which no plan of the run has"
    if untried := sorted(i for i in run.outputs if run.attempts.get(i, 0) < 1):
        return f"step {untried[0]!r} has an output but was never tried"
    return None


def first_plan(path: str | os.PathLike, task: str) -> Plan:
    """The plan the run saved at `path` started from (to resume it without planning again)."""
    return load(path, task)["plan0"]


def _encode_call(call: tuple[str, str, Any]) -> list[Any]:
    step_id, role, completion = call
    if isinstance(completion, Completion):
        return [step_id, role, completion_to_dict(completion)]
    try:
        json.dumps(completion)
    except TypeError:
        raise CheckpointError(
            f"cannot checkpoint a call of type {type(completion).__name__} (step {step_id!r}): "
            "calls must be llm.Completion objects or plain JSON values"
        ) from None
    return [step_id, role, {"value": completion}]


def _decode_call(raw: list[Any]) -> tuple[str, str, Any]:
    step_id, role, d = raw
    return step_id, role, d["value"] if set(d) == {"value"} else completion_from_dict(d, d["backend"])


# --- writing and reading ----------------------------------------------------------------------


def _write(path: Path, task: str, plan: Plan, parts: Mapping[str, list]) -> None:
    """Write the state for the run of `plan` on `task` to `path`, atomically. `parts`: each field
    of the state as JSON text in pieces (an object's or a list's items in a list of their own):
    joined without spaces for the checksum (`_digest` of the state read back), and one item a
    line in the file, which stays readable."""

    def joined(between: str, pieces: list) -> str:
        return "".join(between.join(p) if isinstance(p, list) else p for p in pieces)

    canonical = "{" + ",".join(f'"{name}":{joined(",", pieces)}' for name, pieces in parts.items()) + "}"
    checksum = hashlib.sha256(hash_text(canonical)).hexdigest()
    head = {"format": FORMAT, "version": VERSION, "fingerprint": fingerprint(task, plan)}
    head["checksum"] = checksum
    state = ",\n".join(f'  "{name}": {joined(_ITEM, pieces)}' for name, pieces in parts.items())
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "state": {\n' + state + "\n }\n}\n"
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: every non-ASCII character escaped instead
        data = utf8_json(json.loads(text), indent=1)
    if path.is_dir():
        raise CheckpointError(_a_directory(path))
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # on disk before it takes the old file's place
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(path: str | os.PathLike, task: str, plan: Plan | None = None) -> dict[str, Any]:
    """Read and check the state at `path`. It must be for `task` and, when `plan` is given,
    for that plan; `state["plan0"]` is the plan the run started from."""
    path = Path(path)
    name = path.name
    document = _read(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CheckpointError(f"{name} is not an agentlab checkpoint")
    if document.get("version") != VERSION:
        raise CheckpointError(
            f"checkpoint {name} has format version {document.get('version')!r}; "
            f"this kit reads version {VERSION}"
        )
    state = document.get("state")
    if not isinstance(state, dict) or document.get("checksum") != _digest(state):
        raise CheckpointError(
            f"checkpoint {name} is damaged: its state does not match its checksum (was the file edited?)"
        )
    if problem := shape_problem(state):
        raise CheckpointError(f"checkpoint {name} is damaged: {problem}; {_AFRESH}")
    stored = document.get("fingerprint")
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


def _read(path: Path) -> Any:
    """The JSON at `path`; a CheckpointError that says what is wrong if that is not what is there."""
    name = path.name
    if path.is_dir():
        raise CheckpointError(_a_directory(path))
    try:
        return json.loads(path.read_bytes().decode("utf-8"), parse_constant=_infinite, parse_float=_finite)
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


def _infinite(constant: str) -> float:
    raise CheckpointError(f"it holds {constant}, which no saved number is")


def _finite(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _infinite(text)


def _a_directory(path: Path) -> str:
    return f"the checkpoint path {str(path)!r} is a directory; give a file, e.g. {str(path / 'run.json')!r}"


def _tidy(path: Path) -> None:
    """Remove the temporary files that writes to `path` killed halfway left behind (see `_write`).
    Only the run that holds the path (`claimed`) does this: another writer's file is not stray."""
    for stray in path.parent.glob(glob.escape(path.name) + ".????????.tmp"):
        stray.unlink(missing_ok=True)


@contextlib.contextmanager
def claimed(path: str | os.PathLike | None) -> Iterator[None]:
    """Hold `path` for one run, so that no second run (another thread, process or notebook)
    writes the same checkpoint at the same time: that run is refused with a CheckpointError.
    The hold is an OS lock on `<name>.lock` beside it, released when the run ends or its
    process dies (a killed run never leaves the path held). Readers (`load`) need no hold."""
    if path is None or fcntl is None:  # no checkpoint; or Windows: no such lock, no guard
        yield
        return
    path = Path(path)
    lock = path.parent / (path.name + ".lock")
    while True:
        try:
            handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise CheckpointError(f"cannot write the checkpoint {str(path)!r}: {e.strerror or e}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise CheckpointError(
                f"checkpoint {path.name} is in use by another run that is still going (in this process "
                "or another); wait for it to end, or give this run its own checkpoint file"
            ) from None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(handle).st_ino:
                break  # locked, and still the lock file (not one its last holder just removed)
        os.close(handle)
    try:
        _tidy(path)
        yield
    finally:
        lock.unlink(missing_ok=True)  # before unlocking: a run waiting re-checks the file it locked
        os.close(handle)
