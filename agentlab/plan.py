"""A plan is a small directed acyclic graph of steps.

Each `Step` says who does it (a role), what to do (an instruction) and which
steps must finish first (`depends_on`). A `Plan` checks all of that when it is
built, so every other part of the kit can trust a plan it is handed: if a plan
exists, it has at least one step, unique ids, known dependencies and no cycle.

Plans travel as JSON (that is what an LLM planner will emit), so this module
also owns the JSON form, its JSON Schema, and the parser that turns anything
malformed into a `PlanError` a learner can read.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx


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
        d: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "instruction": self.instruction,
            "depends_on": list(self.depends_on),
        }
        if self.tool is not None:
            d["tool"] = self.tool
            d["args"] = dict(self.args)
        if self.duration is not None:
            d["duration"] = self.duration
        return d


STEP_FIELDS = ("id", "role", "instruction", "depends_on", "tool", "args", "duration")


@dataclass(frozen=True)
class Plan:
    """A validated DAG of steps, kept in the order the planner wrote them.

    Building a Plan validates it; pass `roles` to also reject unknown roles.
    """

    steps: tuple[Step, ...]
    roles: frozenset[str] | None = None

    def __init__(self, steps: Iterable[Step], roles: Iterable[str] | None = None):
        object.__setattr__(self, "steps", tuple(steps))
        object.__setattr__(self, "roles", None if roles is None else frozenset(roles))
        _validate(self.steps, self.roles)
        object.__setattr__(self, "_by_id", {s.id: s for s in self.steps})  # not a field: eq ignores it

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
        """Every step after all of its dependencies; ties keep the written order.

        Kahn's algorithm: count each step's unmet dependencies, and repeatedly take
        the first-written step whose count is zero (a heap keeps that cheap).
        """
        position = {s.id: i for i, s in enumerate(self.steps)}
        unmet = {s.id: len(s.depends_on) for s in self.steps}
        needed_by: dict[str, list[str]] = {s.id: [] for s in self.steps}
        for s in self.steps:
            for d in s.depends_on:
                needed_by[d].append(s.id)
        ready = [position[i] for i, n in unmet.items() if n == 0]
        heapq.heapify(ready)
        order: list[Step] = []
        while ready:  # validation ruled out cycles, so every step gets here
            step = self.steps[heapq.heappop(ready)]
            order.append(step)
            for after in needed_by[step.id]:
                unmet[after] -= 1
                if unmet[after] == 0:
                    heapq.heappush(ready, position[after])
        return order

    def ready(self, done: Iterable[str]) -> list[Step]:
        """Steps not yet done whose dependencies are all done, in written order."""
        done = set(done)
        unknown = done - set(self.ids)
        if unknown:
            raise PlanError(f"ready() was told about unknown step(s): {sorted(unknown)}")
        return [s for s in self.steps if s.id not in done and set(s.depends_on) <= done]

    def dependants(self, step_id: str) -> list[Step]:
        """Every step that needs `step_id`, directly or through others."""
        below = nx.descendants(self.to_networkx(), step_id)
        return [s for s in self.steps if s.id in below]

    @property
    def final_step(self) -> Step:
        """The synthesis step: the last one in topological order. Its output is the deliverable."""
        return self.topological_order()[-1]

    def critical_path(self, durations: Mapping[str, float]) -> tuple[list[str], float]:
        """The longest chain of dependencies, by summed duration: (step ids in order, its length).

        No schedule can finish sooner than this chain, however many workers it has.
        Ties go to the step written first, so the answer is the same on every run.
        """
        check_durations(self, durations, "critical_path")
        depends_on = {s.id: s.depends_on for s in self.steps}
        finish: dict[str, float] = {}  # earliest finish of each step with unlimited workers
        before: dict[str, str | None] = {}  # the dependency that finishes last: the chain runs through it
        for step_id in nx.topological_sort(self.to_networkx()):
            last = max(depends_on[step_id], key=lambda d: finish[d], default=None)  # first of equals wins
            finish[step_id] = (0.0 if last is None else finish[last]) + durations[step_id]
            before[step_id] = last
        end: str | None = max(self.ids, key=lambda i: finish[i])
        length = finish[end]
        chain = []
        while end is not None:
            chain.append(end)
            end = before[end]
        return chain[::-1], length

    def to_networkx(self) -> nx.DiGraph:
        """A DiGraph with an edge dependency -> dependant; node attributes hold the Step."""
        g = nx.DiGraph()
        for s in self.steps:
            g.add_node(s.id, step=s, role=s.role)
        for s in self.steps:
            for d in s.depends_on:
                g.add_edge(d, s.id)
        return g

    # --- JSON --------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {"steps": [s.to_dict() for s in self.steps]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any, roles: Iterable[str] | None = None) -> Plan:
        """Build a plan from parsed JSON; any shape problem becomes a PlanError."""
        if not isinstance(data, Mapping):
            raise PlanError(f"a plan must be a JSON object with a 'steps' list, got {_kind(data)}")
        extra = set(data) - {"steps"}
        if extra:
            raise PlanError(f"a plan has only a 'steps' field; unexpected: {sorted(extra)}")
        if "steps" not in data:
            raise PlanError("a plan needs a 'steps' list")
        raw_steps = data["steps"]
        if not isinstance(raw_steps, list):
            raise PlanError(f"'steps' must be a list, got {_kind(raw_steps)}")
        return cls([_step_from_dict(i, raw) for i, raw in enumerate(raw_steps)], roles=roles)

    @classmethod
    def from_json(cls, text: str, roles: Iterable[str] | None = None) -> Plan:
        """Parse a plan from JSON text, as a model would write it."""
        if not isinstance(text, str | bytes):
            raise PlanError(f"from_json expects JSON text, got {_kind(text)}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise PlanError(
                f"the plan is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}"
            ) from None
        return cls.from_dict(data, roles=roles)

    @staticmethod
    def json_schema(roles: Iterable[str] | None = None) -> dict[str, Any]:
        """The JSON Schema a model's plan output is held to (roles as an enum if given)."""
        role: dict[str, Any] = {"type": "string", "description": "who does the step"}
        if roles is not None:
            role["enum"] = sorted(roles)
        step = {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "description": "unique, e.g. 's1'"},
                "role": role,
                "instruction": {"type": "string", "description": "one focused instruction"},
                "depends_on": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "ids of the steps whose outputs this step needs",
                },
                "tool": {"type": "string", "description": "optional: a tool to call directly"},
                "args": {"type": "object", "description": "arguments for that tool"},
                "duration": {"type": "number", "minimum": 0, "description": "virtual seconds"},
            },
            "required": ["id", "role", "instruction", "depends_on"],
            "additionalProperties": False,
        }
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Plan",
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


# --- validation --------------------------------------------------------------


def _kind(value: Any) -> str:
    return type(value).__name__


def _step_from_dict(index: int, raw: Any) -> Step:
    where = f"step #{index + 1}"
    if not isinstance(raw, Mapping):
        raise PlanError(f"{where} must be a JSON object, got {_kind(raw)}")
    if isinstance(raw.get("id"), str) and raw["id"]:
        where = f"step {raw['id']!r}"
    extra = set(raw) - set(STEP_FIELDS)
    if extra:
        raise PlanError(f"{where} has unknown field(s) {sorted(extra)}; allowed: {list(STEP_FIELDS)}")
    missing = [k for k in ("id", "role", "instruction") if k not in raw]
    if missing:
        raise PlanError(f"{where} is missing {', '.join(repr(m) for m in missing)}")
    depends_on = raw.get("depends_on", [])
    if not isinstance(depends_on, list):
        raise PlanError(f"{where}: 'depends_on' must be a list of step ids, got {_kind(depends_on)}")
    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        raise PlanError(f"{where}: 'args' must be an object, got {_kind(args)}")
    return Step(
        id=raw["id"],
        role=raw["role"],
        instruction=raw["instruction"],
        depends_on=tuple(depends_on),
        tool=raw.get("tool"),
        args=dict(args),
        duration=raw.get("duration"),
    )


def _validate(steps: tuple[Step, ...], roles: frozenset[str] | None) -> None:
    if not steps:
        raise PlanError("the plan is empty: a plan needs at least one step")
    for s in steps:
        _check_types(s)
    seen: set[str] = set()
    for s in steps:
        if s.id in seen:
            raise PlanError(f"duplicate step id {s.id!r}: every step needs its own id")
        seen.add(s.id)
    for s in steps:
        if roles is not None and s.role not in roles:
            raise PlanError(f"step {s.id!r} has unknown role {s.role!r}; known roles: {sorted(roles)}")
        if s.id in s.depends_on:
            raise PlanError(f"step {s.id!r} depends on itself")
        for d in s.depends_on:
            if d not in seen:
                raise PlanError(f"step {s.id!r} depends on unknown step {d!r}")
        if len(set(s.depends_on)) != len(s.depends_on):
            raise PlanError(f"step {s.id!r} lists a dependency twice: {list(s.depends_on)}")
    cycle = _find_cycle(steps)
    if cycle:
        raise PlanError(f"the plan has a cycle: {' -> '.join(cycle + [cycle[0]])}")


def check_durations(plan: Plan, durations: Mapping[str, float], needed_by: str) -> None:
    """Every step of `plan` needs a duration, a number >= 0; `needed_by` names who asked."""
    for s in plan.steps:
        if s.id not in durations:
            raise PlanError(f"{needed_by} needs a duration for step {s.id!r}")
        d = durations[s.id]
        if isinstance(d, bool) or not isinstance(d, int | float) or d < 0:
            raise PlanError(f"the duration of step {s.id!r} must be a number >= 0, got {d!r}")


def _check_types(s: Step) -> None:
    if not isinstance(s.id, str) or not s.id.strip():
        raise PlanError(f"a step id must be a non-empty string, got {s.id!r}")
    for name in ("role", "instruction"):
        value = getattr(s, name)
        if not isinstance(value, str) or not value.strip():
            raise PlanError(f"step {s.id!r}: {name!r} must be a non-empty string, got {value!r}")
    if not isinstance(s.depends_on, tuple) or not all(isinstance(d, str) for d in s.depends_on):
        raise PlanError(f"step {s.id!r}: 'depends_on' must hold step ids (strings), got {s.depends_on!r}")
    if s.tool is not None and not isinstance(s.tool, str):
        raise PlanError(f"step {s.id!r}: 'tool' must be a string, got {s.tool!r}")
    if not isinstance(s.args, Mapping):
        raise PlanError(f"step {s.id!r}: 'args' must be a mapping, got {s.args!r}")
    if s.duration is not None and (
        isinstance(s.duration, bool) or not isinstance(s.duration, int | float) or s.duration < 0
    ):
        raise PlanError(f"step {s.id!r}: 'duration' must be a number >= 0, got {s.duration!r}")


def _find_cycle(steps: tuple[Step, ...]) -> list[str]:
    """Return the step ids on one cycle (in dependency order), or [] if there is none."""
    graph = nx.DiGraph((d, s.id) for s in steps for d in s.depends_on)
    if nx.is_directed_acyclic_graph(graph):  # the common case, and far cheaper than find_cycle
        return []
    return [u for u, _ in nx.find_cycle(graph)]
