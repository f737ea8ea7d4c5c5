"""Guardrails for agents that act: declared effects, a permission policy, approvals, an audit log.

A tool that only reads (lookup, search, calculate) changes nothing. A tool with side effects
(send_message, delete_record) changes the world, and each tool declares which effects it has
(`world.injection.EFFECTS`, by name, for the tool its spec describes: a tool that takes the
name of one of the kit's tools with another spec, or declares nothing, is "undeclared", never
harmless). A run has a `Policy`: the effects it may have without asking, and who to ask about
the rest. A `Guard` wraps each tool: every call is checked against the policy; a call that
needs an effect the policy does not allow goes to the policy's `approve` callback (a person at
a widget, or a function in a test); a denied call never reaches the tool's function: the caller
gets `ActionDenied`, which a tool loop shows the model and which fails a direct tool step.

The audit log records every decision, refusals included, with the arguments and the step and
role that asked, and it records it *before* the tool runs (outcome "running"), then what came
of it: an effect cut short still leaves its entry.

The guard wraps tools and leaves the executors alone: `guard.wrap(tool, step, role)` is a
`ToolFunction` like any other, so `model_agent`, `tool_loop` and the ReAct loop use it as they
use any tool. `guarded_team` builds a team that hands each step its role's tools bound to that
step, so the log can say who asked; the tools it shows (`team[role].tools`) are guarded too, and
a call the role's tools do not include (a plan's direct step, or a model's request) is logged
as refused.
"""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentlab.agents import Agent, ToolFunction, model_agent
from agentlab.llm.base import LLM, Completion
from agentlab.plan import Step
from agentlab.world import TOOLS
from agentlab.world.injection import EFFECTS, SIDE_EFFECT_TOOLS

if TYPE_CHECKING:  # imported where a panel is built: a grader or an MCP server needs no widgets
    import ipywidgets as widgets

UNDECLARED = "undeclared"  # the effect of a tool that did not declare its effects
KIT_TOOLS = TOOLS | SIDE_EFFECT_TOOLS  # the specs that the kit's declared effects (EFFECTS) are for


class ActionDenied(PermissionError):
    """A call needed an effect the policy does not allow, and it was not approved: nothing ran."""


@dataclass(frozen=True)
class Request:
    """A tool call as the guard sees it, and as an approver is shown it."""

    tool: str
    args: Mapping[str, Any]
    effects: tuple[str, ...]
    step: str
    role: str

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"step {self.step} ({self.role}): {self.tool}({args}) - effects: {', '.join(self.effects)}"


Approver = Callable[[Request], bool | tuple[bool, str]]  # True approves; a reason may come along


@dataclass(frozen=True)
class Policy:
    """What a run may do. `allow` holds the effects that need no approval (reading needs none);
    `approve` is asked about any other effect, and without one such calls are denied. It answers
    True to approve (anything else denies), or (answer, reason) to say why."""

    allow: frozenset[str] = frozenset()
    approve: Approver | None = None

    def __post_init__(self):
        if isinstance(self.allow, str):
            raise TypeError(
                f"allow is a set of effects, e.g. {{{self.allow!r}}}, not the string {self.allow!r}"
            )
        object.__setattr__(self, "allow", frozenset(self.allow))

    def decide(self, request: Request) -> tuple[str, str]:
        """("allowed" | "approved" | "denied", why)."""
        needed = [e for e in request.effects if e not in self.allow]
        if not needed:
            allowed = ", ".join(request.effects)
            return "allowed", f"the policy allows {allowed}" if allowed else "reads only"
        if self.approve is None:
            return "denied", f"the policy does not allow {', '.join(needed)}, and there is no one to ask"
        try:
            answer = self.approve(request)
        except Exception as error:  # a broken approver must not wave a call through
            return "denied", f"the approver failed ({type(error).__name__}: {error})"
        if isinstance(answer, tuple) and len(answer) != 2:
            return "denied", f"the approver's answer {answer!r:.80} is not True, False or (answer, reason)"
        approved, why = answer if isinstance(answer, tuple) else (answer, "")
        if approved is True:
            return "approved", str(why or "an approver said yes")
        return "denied", str(why or "an approver said no")


# --- the audit log ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One tool call: who asked (step, role), what (tool, args, effects), the decision and why,
    and what happened: `outcome` is "not run" (denied), "running" (logged before the tool runs,
    and until it returns), then "ok", "error" (the tool ran and failed) or "interrupted"."""

    n: int
    step: str
    role: str
    tool: str
    args: Mapping[str, Any]
    effects: tuple[str, ...]
    decision: str
    reason: str
    outcome: str
    result: str

    @property
    def ran(self) -> bool:
        return self.outcome != "not run"


COLUMNS = ("#", "step", "role", "call", "decision", "outcome", "result")


class AuditLog:
    """Every call a guard saw, in the order it saw them. Steps running in parallel append under a
    lock, so nothing is lost, but their order (and numbers) then follows the threads."""

    def __init__(self, entries: Iterable[Entry] = ()):
        self.entries: list[Entry] = list(entries)
        self._lock = threading.Lock()

    def add(self, request: Request, decision: str, reason: str, outcome: str, result: str) -> Entry:
        """Log one call: the request, the decision on it and what came of it (so far)."""
        verdict = {"decision": decision, "reason": reason, "outcome": outcome, "result": result}
        with self._lock:
            entry = Entry(len(self.entries) + 1, **asdict(request), **verdict)
            self.entries.append(entry)
        return entry

    def settle(self, entry: Entry, outcome: str, result: str) -> None:
        """Write what came of a call logged as "running"."""
        with self._lock:
            self.entries[entry.n - 1] = replace(entry, outcome=outcome, result=result)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self.entries))

    def __len__(self) -> int:
        return len(self.entries)

    def to_json(self, indent: int | None = 2) -> str:
        """The log as a JSON list of objects, one per call, for keeping or for other tools."""
        return json.dumps([asdict(e) for e in self.entries], indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> AuditLog:
        return cls(Entry(**{**d, "effects": tuple(d["effects"])}) for d in json.loads(text))

    def rows(self, width: int = 48) -> list[tuple[str, ...]]:
        return [
            (str(e.n), e.step, e.role, _short(_call(e), width), e.decision, e.outcome, _short(e.result, 30))
            for e in self.entries
        ]

    def __str__(self) -> str:
        rows = [COLUMNS, *self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
        return "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        )

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows(80)
        )
        return f'<table class="agentlab-audit"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _call(entry: Entry) -> str:
    return f"{entry.tool}({', '.join(f'{k}={v!r}' for k, v in entry.args.items())})"


def _short(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


# --- the guard ------------------------------------------------------------------------------------


@dataclass
class Guard:
    """Checks, logs and (when allowed) runs tool calls. `effects` is what each tool declares,
    by name; one guard, and so one log, serves a whole run."""

    policy: Policy = field(default_factory=Policy)
    effects: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(EFFECTS))
    log: AuditLog = field(default_factory=AuditLog)

    def effects_of(self, tool: ToolFunction | str) -> tuple[str, ...]:
        """What `tool` declares it changes, by its name in `effects`; a tool that takes the name of
        one of the kit's tools (`KIT_TOOLS`) with another spec declares nothing. (The guard trusts
        a spec to say what its function does: it cannot look inside the function.)"""
        name = tool if isinstance(tool, str) else tool.name
        impostor = not isinstance(tool, str) and name in KIT_TOOLS and tool.spec != KIT_TOOLS[name]
        if name not in self.effects or impostor:
            return (UNDECLARED,)
        return tuple(self.effects[name])

    def call(self, tool: ToolFunction, args: Mapping[str, Any], step: str, role: str) -> str:
        """Decide on one call and log it, then, if it was allowed or approved, run it and log
        what came of it."""
        shown = dict(args) if isinstance(args, Mapping) else {"(not an object)": args}
        request = Request(tool.name, shown, self.effects_of(tool), step, role)
        decision, reason = self.policy.decide(request)
        if decision == "denied":
            self.log.add(request, decision, reason, "not run", "")
            raise ActionDenied(f"{tool.name} was not run: {reason}")
        entry = self.log.add(request, decision, reason, "running", "")  # intent, before the effect
        try:
            result = tool(args)
        except Exception as error:
            self.log.settle(entry, "error", f"{type(error).__name__}: {error}")
            raise
        except BaseException as error:  # cut short (an interrupt): what it did is unknown
            self.log.settle(entry, "interrupted", type(error).__name__)
            raise
        self.log.settle(entry, "ok", result)
        return result

    def refuse(self, tool: str, args: Mapping[str, Any], step: str, role: str, reason: str) -> None:
        """Log a call that is refused before any policy is asked (a tool outside the role)."""
        request = Request(tool, dict(args), self.effects_of(tool), step, role)
        self.log.add(request, "denied", reason, "not run", "")

    def wrap(self, tool: ToolFunction, step: str, role: str) -> ToolFunction:
        """`tool` as the step `step` of `role` may call it: same spec, every call through the guard
        (even one whose arguments the tool would refuse)."""
        return _Guarded(tool.spec, lambda args: self.call(tool, args, step, role), tool.seconds)

    def tools(self, tools: Iterable[ToolFunction], step: str, role: str) -> list[ToolFunction]:
        return [self.wrap(t, step, role) for t in tools]


RoleSpec = tuple[str, tuple[str, ...], str]  # (description, tool names, system prompt), as WORLD_ROLES


def guarded_team(
    llm: LLM,
    guard: Guard,
    roles: Mapping[str, RoleSpec],
    tools: Mapping[str, ToolFunction],
    *,
    model: str | None = None,
    max_turns: int = 6,
) -> dict[str, Agent]:
    """A team of `model_agent`s, one per role in `roles` (shaped like `agents.WORLD_ROLES`),
    whose every step gets its role's `tools` wrapped by `guard` and bound to that step."""
    team = {}
    for role, (description, names, system) in roles.items():
        if unknown := [n for n in names if n not in tools]:
            raise ValueError(
                f"the {role} is to use {unknown}, which are not among the tools ({', '.join(tools)})"
            )
        if misnamed := [f"{n!r} is {tools[n].name!r}" for n in names if tools[n].name != n]:
            raise ValueError(f"each tool must be listed under its own name: {', '.join(misnamed)}")
        mine = tuple(tools[n] for n in names)

        def act(step: Step, context: Mapping[str, str], role=role, system=system, mine=mine):
            watched = _Watched(llm, guard, step.id, role, mine)
            if step.tool is not None and step.tool not in watched.names:  # model_agent then refuses it
                guard.refuse(step.tool, step.args, step.id, role, watched.outside(step.tool))
            bound = guard.tools(mine, step.id, role)
            agent = model_agent(role, system, watched, bound, model=model, max_turns=max_turns)
            return agent.act(step, context)

        team[role] = Agent(role, act, description=description, tools=tuple(guard.tools(mine, "-", role)))
    return team


class _Guarded(ToolFunction):
    """A guarded tool: its `fn` is the guard's, and takes the arguments as they come."""

    def __call__(self, args: Mapping[str, Any]) -> str:
        return self.fn(args)


@dataclass
class _Watched:
    """`llm` as one step of a guarded team calls it: a tool call the model asks for that is not
    among the role's tools is logged as refused (the tool loop then tells the model so)."""

    llm: LLM
    guard: Guard
    step: str
    role: str
    tools: tuple[ToolFunction, ...]

    def __post_init__(self):
        self.backend, self.names = self.llm.backend, [t.name for t in self.tools]

    def outside(self, tool: str) -> str:
        return f"{tool} is not among the {self.role}'s tools ({', '.join(self.names) or 'none'})"

    def complete(self, **request: Any) -> Completion:
        reply = self.llm.complete(**request)
        for call in reply.tool_calls:
            if call.name not in self.names:
                self.guard.refuse(call.name, call.args, self.step, self.role, self.outside(call.name))
        return reply


# --- approving in a notebook ---------------------------------------------------------------------------


@dataclass(eq=False)
class ApprovalRow:
    """One request in the panel: what is asked, and its two buttons."""

    request: Request
    label: widgets.HTML
    approve: widgets.Button
    deny: widgets.Button


class ApprovalPanel:
    """Approve and Deny buttons for the calls a run asks about; use it as a policy's `approve`.

    A cell cannot wait for a click while it runs, so approving takes two passes. The run asks
    the panel; a request with no decision yet is denied for now and appears here with its
    buttons. Click, then run again: the same request (same step, role, tool and arguments) gets
    the answer you gave. Clicking is plain Python (`row.approve.click()`), so tests need no browser.
    """

    def __init__(self):
        import ipywidgets as widgets

        self.decisions: dict[str, bool] = {}
        self.rows: list[ApprovalRow] = []
        self.widget = widgets.VBox([widgets.HTML("<b>Approvals</b>: no requests yet.")])

    def __call__(self, request: Request) -> tuple[bool, str]:
        key = _key(request)
        if key in self.decisions:
            approved = self.decisions[key]
            return approved, f"{'approved' if approved else 'denied'} in the approval panel"
        if all(_key(row.request) != key for row in self.rows):
            self._add(request)
        return False, "waiting for a decision in the approval panel (decide, then run again)"

    def decide(self, request: Request, approved: bool) -> None:
        """Record a decision for `request` (what the buttons do)."""
        self.decisions[_key(request)] = approved
        for row in self.rows:
            if _key(row.request) == _key(request):
                row.label.value = _label(request, "approved" if approved else "denied")
                row.approve.disabled = row.deny.disabled = True

    @property
    def pending(self) -> list[Request]:
        return [row.request for row in self.rows if _key(row.request) not in self.decisions]

    def _add(self, request: Request) -> None:
        import ipywidgets as widgets

        label = widgets.HTML(_label(request, "waiting"))
        approve = widgets.Button(description="Approve", button_style="success")
        deny = widgets.Button(description="Deny", button_style="danger")
        approve.on_click(lambda _button: self.decide(request, True))
        deny.on_click(lambda _button: self.decide(request, False))
        self.rows.append(ApprovalRow(request, label, approve, deny))
        head = widgets.HTML("<b>Approvals</b>: decide, then run again.")
        self.widget.children = [head] + [widgets.HBox([r.approve, r.deny, r.label]) for r in self.rows]

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        decided = len(self.rows) - len(self.pending)
        shown = f"ApprovalPanel: {len(self.pending)} waiting, {decided} decided"
        bundle["text/plain"] = f"{shown} (run this cell to show its buttons)"
        return bundle


def _key(request: Request) -> str:
    return json.dumps([request.step, request.role, request.tool, dict(request.args)], sort_keys=True)


def _label(request: Request, state: str) -> str:
    return f"<code>{html.escape(str(request))}</code> - <i>{state}</i>"
