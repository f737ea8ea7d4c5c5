"""A plan is a small directed acyclic graph of steps.

Each `Step` says who does it (a role), what to do (an instruction) and which steps must finish
first (`depends_on`). A `Plan` checks all of that when it is built, so every other part of the kit
can trust a plan it is handed: it has at least one step, unique ids, known dependencies, no cycle.

Plans travel as JSON (that is what an LLM planner will emit), so this module also owns the JSON
form, its JSON Schema, the parser that turns anything malformed into a `PlanError` a learner can
read, `plan_json` (the one way the kit finds a plan's JSON in a model's reply); and hands on the
plan's own language (`agentlab.plan_refs`), in which `$s1` in a step's text stands for s1's output.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentlab.dag import below, cycle, in_order, sinks
from agentlab.plan_refs import REFERENCE, fill_in, references, resolve, walk  # noqa: F401 (kit imports)
from agentlab.valid import cut, decoded, json_problem, loads, names, number, shown

if TYPE_CHECKING:  # networkx is imported where a graph is made (agentlab/dag.py says why)
    import networkx as nx

Context = Mapping[str, str]  # what a step is given: the output of each step it depends on, by id


class PlanError(ValueError):
    """A plan is malformed. The message names the problem and the step(s)."""


@dataclass(frozen=True)
class Step:
    """One unit of work: a role, a focused instruction, and what it waits for.

    `tool` and `args` are room for a direct tool call (used from notebook 03 on);
    `duration` is how long the step takes on the virtual clock, when declared.
    """

    id: str
    role: str
    instruction: str
    depends_on: tuple[str, ...] = ()
    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    duration: float | None = None

    def __post_init__(self):
        if isinstance(self.depends_on, list):  # let Python users write depends_on=["s1"]
            object.__setattr__(self, "depends_on", tuple(self.depends_on))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "role": self.role, "instruction": self.instruction}
        d["depends_on"] = list(self.depends_on)
        if self.tool is not None:
            d["tool"] = self.tool
        if self.tool is not None or self.args:  # an agent step's args too: nothing is lost
            d["args"] = dict(self.args)
        if self.duration is not None:
            d["duration"] = self.duration
        return d


STEP_FIELDS = ("id", "role", "instruction", "depends_on", "tool", "args", "duration")
NEEDS = "ids of the steps whose outputs this step needs"
PLAN_SCHEMA_TITLE = "Plan"  # the simulated model knows a request for a plan by this title


@dataclass(frozen=True)
class Plan:
    """A validated DAG of steps, kept in the order the planner wrote them.

    Building a Plan validates it; pass `roles` to also reject unknown roles. A planner that
    pays for model calls hands them over with the plan (`calls`), so its cost travels with it.
    """

    steps: tuple[Step, ...]
    roles: frozenset[str] | None = None

    def __init__(self, steps: Iterable[Step], roles: Iterable[str] | None = None, calls: Iterable[Any] = ()):
        if isinstance(steps, str | bytes | Mapping) or not isinstance(steps, Iterable):
            hint = ": for a plan's JSON form use Plan.from_dict" if isinstance(steps, Mapping) else ""
            raise PlanError(f"a plan is built from a list of Steps, got {type(steps).__name__}{hint}")
        object.__setattr__(self, "steps", tuple(steps))
        object.__setattr__(self, "roles", None if roles is None else names(roles, "roles", PlanError))
        _validate(self.steps, self.roles)
        # not fields, so equality ignores them: the index by id, and the model calls that wrote the plan
        object.__setattr__(self, "_by_id", {s.id: s for s in self.steps})
        object.__setattr__(self, "calls", tuple(calls))

    # --- looking things up -------------------------------------------------

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, step_id: str) -> Step:
        try:
            return self._by_id[step_id]
        except KeyError:
            raise KeyError(f"no step with id {step_id!r} in this plan") from None

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.steps]

    # --- order -------------------------------------------------------------

    def topological_order(self) -> list[Step]:
        """Every step after all of its dependencies; ties keep the written order."""
        return [self._by_id[i] for i in in_order(self.steps)]

    def ready(self, done: Iterable[str]) -> list[Step]:
        """Steps not yet done whose dependencies are all done, in written order."""
        done = set(done)
        if unknown := done - set(self.ids):
            raise PlanError(f"ready() was told about unknown step(s): {sorted(unknown)}")
        return [s for s in self.steps if s.id not in done and set(s.depends_on) <= done]

    def dependants(self, step_id: str) -> list[Step]:
        """Every step that needs `step_id`, directly or through others."""
        under = below(self.steps, self[step_id].id)  # an unknown id is a KeyError that names it
        return [s for s in self.steps if s.id in under]

    @functools.cached_property  # a Plan never changes: found once, though every Run.deliverable asks
    def ends(self) -> tuple[Step, ...]:
        """The steps no step waits for, in topological order. The last is `final_step`; any other's
        output reaches nobody, which a run's text says (`trace.loose_ends`), as the editor does."""
        return tuple(self._by_id[i] for i in sinks(self.steps))

    @property
    def final_step(self) -> Step:
        """The synthesis step, the last of `ends` (last in topological order): the deliverable's."""
        return self.ends[-1]

    def critical_path(self, durations: Mapping[str, float]) -> tuple[list[str], float]:
        """The longest chain of dependencies, by summed duration: (step ids in order, its length).

        No schedule can finish sooner than this chain, however many workers it has.
        Ties go to the step written first, so the answer is the same on every run.
        """
        check_durations(self, durations, "critical_path")
        finish: dict[str, float] = {}  # earliest finish of each step with unlimited workers
        before: dict[str, str | None] = {}  # the dependency that finishes last: the chain runs through it
        for step in self.topological_order():
            last = max(step.depends_on, key=lambda d: finish[d], default=None)  # first of equals wins
            finish[step.id] = (0.0 if last is None else finish[last]) + durations[step.id]
            before[step.id] = last
        end: str | None = max(self.ids, key=lambda i: finish[i])
        length, chain = finish[end], []
        while end is not None:
            chain.append(end)
            end = before[end]
        return chain[::-1], length

    def to_networkx(self) -> nx.DiGraph:
        """A DiGraph with an edge dependency -> dependant; node attributes hold the Step."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from((s.id, {"step": s, "role": s.role}) for s in self.steps)
        g.add_edges_from((d, s.id) for s in self.steps for d in s.depends_on)
        return g

    # --- JSON --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [s.to_dict() for s in self.steps]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any, roles: Iterable[str] | None = None, calls: Iterable[Any] = ()) -> Plan:
        """Build a plan from parsed JSON; any shape problem becomes a PlanError. `calls`: as `Plan`'s."""
        if not isinstance(data, Mapping):
            raise PlanError(f"a plan must be a JSON object with a 'steps' list, got {type(data).__name__}")
        if extra := sorted((k for k in data if k != "steps"), key=repr):
            raise PlanError(f"a plan has only a 'steps' field; unexpected: {shown(extra)}")
        if "steps" not in data:
            raise PlanError("a plan needs a 'steps' list")
        if not isinstance(raw_steps := data["steps"], list):
            raise PlanError(f"'steps' must be a list, got {type(raw_steps).__name__}")
        return cls([_step_from_dict(i, raw) for i, raw in enumerate(raw_steps)], roles=roles, calls=calls)

    @classmethod
    def from_json(cls, text: str | bytes, roles: Iterable[str] | None = None) -> Plan:
        """Parse a plan from its JSON text, the whole text (what `to_json` writes). A model's
        reply, which may wrap the JSON in a ```json fence, is read with `plan_json` instead."""
        return cls.from_dict(loads(text, "the plan", PlanError), roles=roles)

    @staticmethod
    def json_schema(roles: Iterable[str] | None = None) -> dict[str, Any]:
        """The JSON Schema a model's plan output is held to (roles as an enum if given)."""
        role: dict[str, Any] = {"type": "string", "description": "who does the step"}
        if roles is not None:
            role["enum"] = sorted(names(roles, "roles", PlanError))
        step = {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "description": "unique, e.g. 's1'"},
                "role": role,
                "instruction": {"type": "string", "description": "one focused instruction"},
                "depends_on": {"type": "array", "items": {"type": "string"}, "description": NEEDS},
                "tool": {"type": "string", "description": "optional: a tool to call directly"},
                "args": {"type": "object", "description": "arguments for that tool"},
                "duration": {"type": "number", "minimum": 0, "description": "virtual seconds"},
            },
            "required": ["id", "role", "instruction", "depends_on"],
            "additionalProperties": False,
        }
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": PLAN_SCHEMA_TITLE,
            "type": "object",
            "properties": {"steps": {"type": "array", "minItems": 1, "items": step}},
            "required": ["steps"],
            "additionalProperties": False,
        }

    # --- display -----------------------------------------------------------

    def __str__(self) -> str:
        lines = [f"Plan with {len(self)} step(s):"]
        id_width = max(4, *(len(s.id) for s in self.steps))  # replanned ids (r1_s3) are longer
        role_width = max(10, *(len(s.role) for s in self.steps))
        for s in self.steps:
            after = f"  (after {', '.join(s.depends_on)})" if s.depends_on else ""
            lines.append(f"  {s.id:<{id_width}} {s.role:<{role_width}} {s.instruction}{after}")
        return "\n".join(lines)


# --- a plan's JSON in a model's reply ---------------------------------------------------

FENCED = re.compile(r"^[ \t]*```[ \t]*(?:json)?[ \t]*\n(.*?)(?:\n[ \t]*```|```\s*\Z)", re.I | re.M | re.S)


def plan_json(text: str) -> Any:
    """The JSON value a model's reply holds, read the same way on every path: the whole reply
    (spaces around it allowed), or else the inside of its one fenced block (```json or ```, opened
    on a line of its own, closed at the start of a line or at the end), prose outside it ignored.
    Bare JSON amid prose is not hunted for: where it starts and ends would be a guess (exercise
    03.read-plan writes that lenient reader). Anything else is a PlanError saying what is wrong."""
    text = decoded(text, "the plan", PlanError)
    try:
        return loads(text, "the plan", PlanError)
    except PlanError as whole:
        blocks = FENCED.findall(text)
        if len(blocks) == 1:
            return loads(blocks[0], "the plan in the reply's fenced block", PlanError)
        if blocks or "```" in text:
            said = f"holds {len(blocks)} fenced blocks" if blocks else "opens a ``` fence that never closes"
            raise PlanError(f"the reply {said}: send one plan, whole") from None
        raise whole from None


# --- what is left of a plan, and a new plan renamed to stand beside an old one -------


def remaining(plan: Plan, done: set[str]) -> Plan | None:
    """The steps of `plan` not yet done, as a plan of their own (dependencies on done steps
    dropped: their outputs are already there). None when nothing is left."""
    left = [s for s in plan if s.id not in done]
    left = [replace(s, depends_on=tuple(d for d in s.depends_on if d not in done)) for s in left]
    return Plan(left) if left else None


def renamed(plan: Plan, prefix: str) -> list[Step]:
    """The plan's steps with every id (and every reference to one) prefixed, so a replanned
    's1' becomes 'r1_s1' and cannot be mistaken for the first plan's 's1'."""
    new = {step_id: prefix + step_id for step_id in plan.ids}

    def rename(value: Any) -> Any:
        return walk(value, lambda m: "$" + new.get(m.group(1), m.group(1)))

    steps = [replace(s, instruction=rename(s.instruction), args=rename(dict(s.args))) for s in plan]
    return [replace(s, id=new[s.id], depends_on=tuple(new[d] for d in s.depends_on)) for s in steps]


# --- validation --------------------------------------------------------------


def _step_from_dict(index: int, raw: Any) -> Step:
    """A step's JSON object, as the schema has it: optional fields are left out, never null."""
    where = f"step #{index + 1}"
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where} must be a JSON object, got {type(raw).__name__}")
    if isinstance(raw.get("id"), str) and raw["id"].strip():
        where = f"step {shown(raw['id'])}"
    if extra := sorted((k for k in raw if k not in STEP_FIELDS), key=repr):
        raise PlanError(f"{where} has unknown field(s) {shown(extra)}; allowed: {list(STEP_FIELDS)}")
    if missing := [k for k in ("id", "role", "instruction") if k not in raw]:
        raise PlanError(f"{where} is missing {', '.join(repr(m) for m in missing)}")
    if "depends_on" not in raw:
        raise PlanError(f"{where} is missing 'depends_on' ([] for a step that waits for none)")
    if null := [k for k in ("tool", "args", "duration") if k in raw and raw[k] is None]:
        raise PlanError(f"{where}: {null[0]!r} is null; leave it out instead")
    depends_on, args = raw["depends_on"], raw.get("args", {})
    if not isinstance(depends_on, list):
        raise PlanError(f"{where}: 'depends_on' must be a list of step ids, got {type(depends_on).__name__}")
    if not isinstance(args, Mapping):
        raise PlanError(f"{where}: 'args' must be an object, got {type(args).__name__}")
    fields = (raw["id"], raw["role"], raw["instruction"], tuple(depends_on), raw.get("tool"), dict(args))
    return Step(*fields, duration=raw.get("duration"))


def _validate(steps: tuple[Step, ...], roles: frozenset[str] | None) -> None:
    if not steps:
        raise PlanError("the plan is empty: a plan needs at least one step")
    seen: set[str] = set()
    for position, s in enumerate(steps, 1):
        _check_types(s, position)
        if s.id in seen:
            raise PlanError(f"duplicate step id {shown(s.id)}: every step needs its own id")
        seen.add(s.id)
    for s in steps:
        name = shown(s.id)
        if roles is not None and s.role not in roles:
            raise PlanError(f"step {name} has unknown role {shown(s.role)}; known roles: {sorted(roles)}")
        if s.id in s.depends_on:
            raise PlanError(f"step {name} depends on itself")
        if unknown := [d for d in s.depends_on if d not in seen]:
            raise PlanError(f"step {name} depends on unknown step {shown(unknown[0])}")
        if len(set(s.depends_on)) != len(s.depends_on):
            raise PlanError(f"step {name} lists a dependency twice: {shown(list(s.depends_on))}")
    if loop := cycle(steps):
        raise PlanError(f"the plan has a cycle: {cut(' -> '.join(loop + [loop[0]]), 200)}")


def check_durations(plan: Plan, durations: Mapping[str, float], needed_by: str) -> None:
    """Every step of `plan` needs a duration, a finite number >= 0; `needed_by` names who asked."""
    for s in plan.steps:
        if s.id not in durations:
            raise PlanError(f"{needed_by} needs a duration for step {shown(s.id)}")
        number(durations[s.id], f"the duration of step {shown(s.id)}", minimum=0, error=PlanError)


def _check_types(s: Step, position: int) -> None:
    if not isinstance(s, Step):
        hint = ": for dicts use Plan.from_dict({'steps': [...]})" if isinstance(s, Mapping) else ""
        raise PlanError(f"step #{position} must be a Step, got {type(s).__name__}{hint}")
    if not isinstance(s.id, str) or not s.id.strip():
        raise PlanError(f"step #{position}: a step id must be a non-empty string, got {shown(s.id)}")
    name = shown(s.id)
    for field_name in ("role", "instruction"):
        value = getattr(s, field_name)
        if not isinstance(value, str) or not value.strip():
            raise PlanError(f"step {name}: {field_name!r} must be a non-empty string, got {shown(value)}")
    if not isinstance(s.depends_on, tuple) or not all(isinstance(d, str) for d in s.depends_on):
        got = shown(s.depends_on)  # for a lone id, show what it should look like
        like = f", like [{got}]" if isinstance(s.depends_on, str) else " (strings)"
        raise PlanError(f"step {name}: 'depends_on' must be a list of step ids{like}, got {got}")
    if s.tool is not None and not isinstance(s.tool, str):
        raise PlanError(f"step {name}: 'tool' must be a string, got {shown(s.tool)}")
    if not isinstance(s.args, Mapping):
        raise PlanError(f"step {name}: 'args' must be a mapping, got {shown(s.args)}")
    if s.args and (problem := json_problem(s.args)):  # no args (most steps): nothing to walk
        raise PlanError(f"step {name}: 'args' {problem}")
    if s.duration is not None:
        number(s.duration, f"step {name}: 'duration'", minimum=0, error=PlanError)
