"""Checkpoints: a run's state on disk after every step, so a run that dies can resume.

A run that is killed at step 9 of 10 should not pay for steps 1 to 8 again. With
`run_plan(..., checkpoint=path)` the run writes its state (the plan as it stands,
every finished step's output, every model call so far, the trace and its
recovery counters) to `path` after each step. `run_plan(..., checkpoint=path,
resume=True)` reads it back and carries on: finished steps keep their outputs and
are not run again; a step that was running when the process died runs again.

The file is JSON, so you can read it. It is written to a temporary file first and
then renamed over the old one (`os.replace`, atomic), so a kill mid-write leaves
the previous checkpoint whole, never half a file. It carries a format version, a
fingerprint of the task and the plan it belongs to, and a checksum of its state:
resuming a different task or plan, a newer format, or a damaged file is a
`CheckpointError` that says which, never a run that silently mixes two.

The whole state is rewritten after every step: simple and safe, and quick enough
for plans of tens or hundreds of steps (a longer run would append to a log instead).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlab.llm.base import Completion
from agentlab.llm.replay import completion_from_dict, completion_to_dict
from agentlab.plan import Plan, PlanError
from agentlab.schedule import Slot
from agentlab.trace import Event

VERSION = 1
FORMAT = "agentlab-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: unreadable, damaged, or from another task or plan."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _short(value: Any) -> str:
    return _digest(value)[:16]


def fingerprint(task: str, plan: Plan) -> dict[str, str]:
    """Short hashes of the task and of the plan a run started from."""
    return {"task": _short(task), "plan": _short(plan.to_dict())}


# --- the run's parts as JSON -----------------------------------------------------------------


def encode_call(call: tuple[str, str, Any]) -> list[Any]:
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


def decode_call(raw: list[Any]) -> tuple[str, str, Any]:
    step_id, role, d = raw
    return step_id, role, d["value"] if set(d) == {"value"} else completion_from_dict(d, d["backend"])


def encode_event(e: Event) -> list[Any]:
    return [e.time, e.kind, e.step_id, e.role, list(e.inputs), e.detail]


def decode_event(raw: list[Any]) -> Event:
    time, kind, step_id, role, inputs, detail = raw
    return Event(time, kind, step_id, role, tuple(inputs), detail)


def encode_slot(s: Slot) -> list[Any]:
    return [s.step_id, s.worker, s.start, s.end]


def decode_slot(raw: list[Any]) -> Slot:
    return Slot(*raw)


# --- writing and reading ----------------------------------------------------------------------


def save(path: str | os.PathLike, task: str, plan: Plan, state: Mapping[str, Any]) -> None:
    """Write `state` for the run of `plan` on `task` to `path`, atomically."""
    path = Path(path)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "fingerprint": fingerprint(task, plan),
        "checksum": _digest(state),
        "state": state,
    }
    text = json.dumps(document, indent=1, ensure_ascii=False)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
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
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CheckpointError(
            f"checkpoint {name} is damaged: not valid JSON ({e.msg}: line {e.lineno}, column {e.colno}); "
            "delete it to start the run afresh"
        ) from None
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
    stored = document.get("fingerprint") or {}
    if stored.get("task") != _short(task):
        raise CheckpointError(
            f"checkpoint {name} belongs to a different task ({state.get('task', '?')[:60]!r}), "
            f"not {task[:60]!r}; use another checkpoint file, or resume=False to start over"
        )
    if plan is not None and stored.get("plan") != _short(plan.to_dict()):
        raise CheckpointError(
            f"checkpoint {name} belongs to a different plan than the one given; "
            "use another checkpoint file, or resume=False to start over"
        )
    try:
        state["plan0"] = Plan.from_dict(state["plan0"])
    except (KeyError, PlanError) as e:
        raise CheckpointError(f"checkpoint {name} holds no valid starting plan: {e}") from None
    return state
