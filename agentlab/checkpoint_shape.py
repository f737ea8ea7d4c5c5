"""The shape a checkpoint's state must have (`checkpoint.py` saves it, and reads it back only if
it has this shape): a JSON Schema, field by field, so that a damaged or edited file is refused
naming the first field that is wrong, never resumed into a run that crashes later; what no
saved state can say about itself (`consistency_problem`), for a file edited and sealed again;
and its text (`canonical`), one for each state, which a record's seal is the checksum of."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentlab.llm.base import redact
from agentlab.monitor import FAILURE_KINDS
from agentlab.plan import Plan
from agentlab.trace import KINDS, Run

_TEXT, _COUNT = {"type": "string"}, {"type": "integer", "minimum": 0}
_TEXT_OR_NULL = {"type": ["string", "null"]}  # a "finished" event's detail: null, the step's output
_SECONDS = {"type": "number", "minimum": 0}
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens")


def _row(*items: dict) -> dict:
    """A JSON array of exactly these items, in this order (a tuple in Python)."""
    return {"type": "array", "prefixItems": list(items), "minItems": len(items), "items": False}


def _list(items: dict) -> dict:
    return {"type": "array", "items": items}


def _map(values: dict) -> dict:
    return {"type": "object", "additionalProperties": values}


def _record(**fields: dict) -> dict:
    return {"type": "object", "required": list(fields), "properties": fields}


_COMPLETION = _record(  # as `llm.replay.completion_to_dict` writes one
    text=_TEXT,
    model=_TEXT,
    backend=_TEXT,
    usage={"type": "object", "properties": dict.fromkeys(_USAGE, _COUNT), "additionalProperties": False},
    latency=_SECONDS,
    data={},
    tool_calls=_list(_record(id=_TEXT, name=_TEXT, args={"type": "object"})),
    stop_reason=_TEXT,
)

STATE_SCHEMA = _record(  # what `save` writes, field by field
    task=_TEXT,
    plan0={"type": "object"},
    plans={"type": "array", "items": {"type": "object"}, "minItems": 1},
    outputs=_map(_TEXT),
    calls=_list(_row(_TEXT, _TEXT, {"anyOf": [{**_record(value={}), "maxProperties": 1}, _COMPLETION]})),
    trace=_list(_row(_SECONDS, {"enum": list(KINDS)}, _TEXT, _TEXT, _list(_TEXT), _TEXT_OR_NULL)),
    slots=_list({**_row(_TEXT, _COUNT, _SECONDS, _SECONDS, _TEXT), "minItems": 4}),  # older: no `where`
    now=_SECONDS,
    attempts=_map(_COUNT),
    used=_map(_map(_COUNT)),
    replans=_COUNT,
    failures=_list(_row(_TEXT, _TEXT, {"enum": list(FAILURE_KINDS)}, _TEXT)),
    status=_TEXT,
    reason=_TEXT,
)


def shape_problem(state: Any) -> str | None:
    """The first field of `state` that does not have the schema's shape, and how, or None."""
    if _FITS(state):  # the usual answer, 8x quicker than jsonschema's walk of every row and field
        return None
    # Imported here: it takes a moment, and only a state that does not fit needs it. By submodule, so
    # an earlier import cut short (an exercise's time limit) cannot leave `jsonschema.exceptions` unbound.
    from jsonschema.exceptions import best_match
    from jsonschema.validators import Draft202012Validator

    error = best_match(Draft202012Validator(STATE_SCHEMA).iter_errors(state))
    if error is None:
        return None
    where = "/".join(map(str, error.absolute_path)) or "the state"
    said = error.message if len(error.message) <= 160 else error.message[:160] + "..."
    return f"{where}: {said}"


_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "array": (list,), "object": (dict,),
          "null": (type(None),)}
_KEYWORDS = {"type", "enum", "minimum", "anyOf", "required", "properties", "additionalProperties",
             "maxProperties", "prefixItems", "items", "minItems"}  # those STATE_SCHEMA uses


def _fitting(schema: Any) -> Callable[[Any], bool]:
    """A quick test of whether a value has the shape `schema` gives, built once: True only where
    jsonschema says valid too; False where it is not, or might not be (a bool where a number
    belongs, 1.0 for an integer, a keyword not in _KEYWORDS), and jsonschema then decides."""
    if not isinstance(schema, dict) or not _KEYWORDS.issuperset(schema):
        return lambda value: False
    if not schema:  # {}: anything
        return lambda value: True
    names = [schema["type"]] if isinstance(schema.get("type"), str) else schema.get("type")
    kinds = None if names is None else {kind for name in names for kind in _TYPES.get(name, ())}
    enum = [(type(e), e) for e in schema["enum"]] if "enum" in schema else None
    low = schema.get("minimum")
    options = [_fitting(option) for option in schema["anyOf"]] if "anyOf" in schema else None
    required, most = schema.get("required", ()), schema.get("maxProperties")
    named = {key: _fitting(value) for key, value in schema.get("properties", {}).items()}
    other = _fitting(schema.get("additionalProperties", {}))
    prefix, least = [_fitting(item) for item in schema.get("prefixItems", ())], schema.get("minItems", 0)
    rest = _fitting(schema.get("items", {}))

    def fits(value: Any) -> bool:
        kind = type(value)
        if kinds is not None and kind not in kinds:
            return False
        if enum is not None and (kind, value) not in enum:
            return False
        if low is not None and not (kind in (int, float) and value >= low):
            return False
        if options is not None and not any(option(value) for option in options):
            return False
        if kind is dict:
            return (
                (most is None or len(value) <= most)
                and all(key in value for key in required)
                and all(named.get(key, other)(item) for key, item in value.items())
            )
        if kind is list:
            return (
                len(value) >= least
                and all(test(item) for test, item in zip(prefix, value, strict=False))
                and all(rest(item) for item in value[len(prefix) :])
            )
        return True

    return fits


_FITS = _fitting(STATE_SCHEMA)


def consistency_problem(run: Run, first: Plan, now: float | None = None) -> str | None:
    """What in a run restored from a state of the schema's shape contradicts the plan it started
    from (`first`), the clock it stopped at (`now`) or the rest of itself, or None. A file edited
    and sealed again has a fresh checksum, so this is what refuses it: another first plan, more
    plans than replans, a later plan that changes a step of an earlier one, an output, attempt,
    failure, call, event, slot or recovery count for a step no plan has, a step done that was
    never tried, or whose trace never says it finished (or says it finished with another output,
    before its inputs did, or after the clock), an event with other inputs than its step's.

    What it cannot see is an edit that leaves a state a genuine run could have saved: a finished
    step's output changed everywhere it is held, or a step's calls (and so their cost) dropped.
    The seal is a checksum anyone can compute again; only a keyed seal would catch those."""
    if scrubbed(run.plans[0].to_dict()) != scrubbed(first.to_dict()):
        return "its first plan is not the plan the run started from"
    if len(run.plans) != run.replans + 1:
        return f"it holds {len(run.plans)} plans, but the run replanned {run.replans} times"
    if (shown := len(run.trace.of_kind("replanned"))) != run.replans:
        return f"the run replanned {run.replans} time(s), but its trace shows {shown} replans"
    for n, plan in enumerate(run.plans[1:], 2):  # a replan keeps finished steps as they were
        earlier = {step.id: step for before in run.plans[: n - 1] for step in before}
        if changed := [step.id for step in plan if earlier.get(step.id, step) != step]:
            return f"its plan {n} changes step {changed[0]!r} of an earlier plan"
    steps = {step.id: step for plan in run.plans for step in plan}
    planning = {"plan", *(f"replan{n}" for n in range(1, run.replans + 1))}
    held = {"an output": run.outputs, "attempts": run.attempts, "a failure": [f[0] for f in run.failures],
            "a call": [c[0] for c in run.calls], "an event": [e.step_id for e in run.trace],
            "a slot": [s.step_id for s in run.slots], "recovery used": run.used}
    also = {"a call": planning, "an event": {"run", "plan"}}  # the planner's calls; the run's own events
    for what, ids in held.items():
        if stray := sorted(set(ids) - steps.keys() - also.get(what, set())):
            return f"it holds {what} for step {stray[0]!r}, which no plan of the run has"
    if untried := sorted(i for i in run.outputs if run.attempts.get(i, 0) < 1):
        return f"step {untried[0]!r} has an output but was never tried"
    finished = [e for e in run.trace if e.kind == "finished"]
    if unsaid := [e.step_id for e in finished if e.detail is None]:
        return f"its trace says step {unsaid[0]!r} finished with an output it does not hold"
    if other := [e.step_id for e in finished if run.outputs.get(e.step_id) != e.detail]:
        return f"step {other[0]!r} finished with an output other than the one it holds"
    if silent := sorted(set(run.outputs) - {e.step_id for e in finished}):
        return f"step {silent[0]!r} has an output, but its trace never says it finished"
    for done in run.outputs:
        if early := [i for i in steps[done].depends_on if i not in run.outputs]:
            return f"step {done!r} finished before its input {early[0]!r} had an output"
    return _timing_problem(run, steps, finished, now)


def _timing_problem(run: Run, steps: dict, finished: list, now: float | None) -> str | None:
    """The checks of `consistency_problem` on what the trace says happened when, and how often."""
    for e in run.trace:
        step = steps.get(e.step_id) if e.kind in ("started", "finished", "failed") else None
        if step is not None and e.inputs != step.depends_on:
            return f"its trace gives step {e.step_id!r} inputs {list(e.inputs)}, not {list(step.depends_on)}"
    late = [e.time for e in run.trace if now is not None and e.time > now]
    late += [s.end for s in run.slots if now is not None and s.end > now]
    if late:
        return f"its trace has an event at {max(late):g} s, after the run's clock ({now:g} s)"
    when = {e.step_id: e.time for e in finished}
    for e in finished:
        if early := [i for i in e.inputs if when.get(i, -1.0) > e.time]:
            return f"step {e.step_id!r} finished at {e.time:g} s, before its input {early[0]!r} did"
    tried = {s.step_id for s in run.slots}
    if unslotted := sorted(set(run.outputs) - tried):
        return f"step {unslotted[0]!r} has an output, but no attempt at it (a slot) is recorded"
    for done in run.outputs:
        failed, tried = sum(1 for i, _, _ in run.failures if i == done), run.attempts[done]
        if tried < failed + 1:
            return f"step {done!r} failed {failed} time(s), then finished, but was tried {tried} time(s)"
    return None


def scrubbed(value: Any) -> Any:
    """`value` (JSON: dicts, lists, text, numbers) with every credential in it redacted, as it is
    saved. (`redact` keeps JSON text valid, and one pass over the whole text is quicker than one
    per string.)"""
    return json.loads(redact(json.dumps(value, ensure_ascii=False)))


# --- a state's text ---------------------------------------------------------------------------

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_ESCAPES = [(b"\\", b"\\\\"), (b'"', b'\\"')]  # each character JSON escapes, and how (the backslash first)
_ESCAPES += [(bytes([c]), _CANONICAL.encode(chr(c))[1:-1].encode()) for c in range(32)]
_LONG = 1000  # characters: text this long is escaped by `canonical_utf8`'s own quick way


def canonical(value: Any) -> str:
    """JSON text as a record's seal reads it: sorted keys, no spaces, characters as themselves."""
    return _CANONICAL.encode(value)


def canonical_utf8(value: Any) -> bytes:
    """`canonical(value)` in UTF-8 (a lone surrogate raises UnicodeEncodeError), only quicker on
    long text: json steps through text a character at a time, where this looks for each character
    JSON escapes with one search at memory speed (`bytes.replace`): 10 times quicker on 200 KB."""
    parts: list[bytes] = []

    def add(value: Any) -> None:
        if isinstance(value, str) and len(value) > _LONG:
            text = value.encode("utf-8")
            for char, escaped in _ESCAPES:  # the backslash first: every escape holds one
                if char in text:
                    text = text.replace(char, escaped)
            parts.extend((b'"', text, b'"'))
        elif not _holds_long_text(value):
            parts.append(canonical(value).encode("utf-8"))
        elif isinstance(value, dict) and all(isinstance(key, str) for key in value):
            for n, key in enumerate(sorted(value)):
                parts.append((b"," if n else b"{") + canonical(key).encode("utf-8") + b":")
                add(value[key])
            parts.append(b"}")
        elif isinstance(value, (list, tuple)):
            for n, item in enumerate(value):
                parts.append(b"," if n else b"[")
                add(item)
            parts.append(b"]")
        else:
            parts.append(canonical(value).encode("utf-8"))

    add(value)
    return b"".join(parts)


def _holds_long_text(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > _LONG
    if isinstance(value, dict):
        return any(map(_holds_long_text, value.values()))
    return isinstance(value, (list, tuple)) and any(map(_holds_long_text, value))
