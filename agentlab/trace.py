"""What a run leaves behind: its trace (one event each time a step changes state) and the `Run`.

Times are seconds on the run's clock: the virtual clock by default (how long the
steps *declare* or *report* they take), so a stored notebook output is the same on
every machine, or the wall clock for a run made with `clock="real"`. A trace prints
as plain text in a terminal and as an HTML table in a notebook; so does a `Run`.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agentlab.llm.base import redact
from agentlab.plan import Plan, Step
from agentlab.schedule import Slot

KINDS = (
    "planned",
    "started",
    "finished",
    "failed",
    "skipped",
    # monitoring and recovery (notebook 04)
    "retried",
    "rerouted",
    "replanned",
    "stopped",
    "resumed",
    # a person approved the plan before it ran (notebook 03's editor): the decisions, in order
    "approved",
)


@dataclass(frozen=True, init=False)
class Event:
    """Step `step_id` (done by `role`) became `kind` at `time` seconds on the run's clock.

    `inputs` are the ids of the steps whose outputs it was given; `detail` is the
    instruction (planned, started), the output (finished) or the reason (failed, skipped);
    for the recovery events (retried, rerouted, replanned, stopped, resumed) what was done and
    which bound applied. Events about the whole run have the step id "run".
    """

    time: float
    kind: str
    step_id: str
    role: str
    inputs: tuple[str, ...] = ()
    detail: str = ""

    def __init__(
        self, time: float, kind: str, step_id: str, role: str, inputs: tuple[str, ...] = (), detail: str = ""
    ):
        """Written out, not generated: a run makes three events a step, and a frozen dataclass's own
        `__init__` (one `object.__setattr__` a field) took a tenth of a no-op step's time."""
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}; expected one of {KINDS}")
        fields = self.__dict__
        fields["time"], fields["kind"], fields["step_id"], fields["role"] = time, kind, step_id, role
        fields["inputs"], fields["detail"] = inputs, detail


@dataclass
class Trace:
    """An append-only list of events, in the order they happened."""

    events: list[Event] = field(default_factory=list)

    def add(self, event: Event) -> None:
        self.events.append(event)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def for_step(self, step_id: str) -> list[Event]:
        return [e for e in self.events if e.step_id == step_id]

    def to_text(self, width: int = 72) -> str:
        """One line per event: time, what happened, to which step, and a short detail."""
        lines = [f"{'t (s)':>6}  {'event':<9} {'step':<5} {'role':<10} {'inputs':<10} detail"]
        for e in self.events:
            inputs = ",".join(e.inputs) or "-"
            lines.append(
                f"{e.time:6.1f}  {e.kind:<9} {e.step_id:<5} {e.role:<10} {inputs:<10} "
                f"{_shorten(e.detail, width)}"
            )
        return "\n".join(lines)

    __str__ = to_text

    def _repr_html_(self) -> str:
        # JupyterLab right-aligns table cells: the time stays right, the text columns read from the left
        align = ['style="text-align:right"'] + ['style="text-align:left"'] * 5
        headings = ("t (s)", "event", "step", "role", "inputs", "detail")
        head = "".join(f"<th {a}>{h}</th>" for a, h in zip(align, headings, strict=True))
        rows = []
        for e in self.events:
            cells = (
                f"{e.time:.1f}",
                f'<span style="color:{_COLOURS[e.kind]}">{e.kind}</span>',
                html.escape(e.step_id),
                html.escape(e.role),
                html.escape(", ".join(e.inputs) or "–"),
                html.escape(e.detail),
            )
            row = "".join(f"<td {a}>{c}</td>" for a, c in zip(align, cells, strict=True))
            rows.append(f"<tr>{row}</tr>")
        return (
            '<table class="agentlab-trace"><thead><tr>'
            + head
            + "</tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table>"
        )


_COLOURS = {
    "planned": "#888888",
    "started": "#1f77b4",
    "finished": "#2ca02c",
    "failed": "#d62728",
    "skipped": "#ff7f0e",
    "retried": "#9467bd",
    "rerouted": "#9467bd",
    "replanned": "#8c564b",
    "stopped": "#d62728",
    "resumed": "#17becf",
}


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class Run:
    """What a run produced: outputs per step, the trace, who ran what when, and how it ended.

    `plan` is the plan as it stands (after any replans: the finished steps kept, then the
    new ones); `plans` every plan the run followed, the first one first. `plan` is None
    only when no plan was ever made (the planner failed). `calls` are the model calls paid
    for, as (step id, role, llm.Completion), in plan order whatever the worker count, with
    planning under "plan" and each replan under "replan1", "replan2", ... `failures` lists
    every failed attempt, including those a recovery policy made good."""

    task: str
    plan: Plan | None
    outputs: dict[str, str] = field(default_factory=dict)
    trace: Trace = field(default_factory=Trace)
    status: str = "running"  # then "done", "failed" (a step or the planner failed) or "stopped" (budget)
    reason: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    slots: list[Slot] = field(default_factory=list)  # one per attempt at a step, in start order
    workers: int = 1
    clock: str = "virtual"
    plans: list[Plan] = field(default_factory=list, repr=False)
    failures: list[tuple[str, str, Any]] = field(default_factory=list, repr=False)  # (step, role, Failure)
    # what recovery has used so far: attempts per step, {"retry": n, "reroute": n} per step, replans
    attempts: dict[str, int] = field(default_factory=dict, repr=False)
    used: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    replans: int = field(default=0, repr=False)
    writing: tuple[float, float] | None = field(default=None, repr=False)  # a streamed plan's, on the clock

    def record(self, time: float, kind: str, step: Step, detail: str, role: str | None = None) -> None:
        """Add an event about `step` to the trace."""
        self.trace.events.append(Event(time, kind, step.id, role or step.role, step.depends_on, detail))

    def close(self, now: float) -> None:
        """The loop is over: a run still running is done; any other has each step it never
        started marked skipped. The calls and slots go in plan order (`sort`)."""
        self.sort()
        if self.status == "running":
            self.status = "done"
            return
        ran = {slot.step_id for slot in self.slots}
        for step in self.plan:
            if step.id not in ran:
                self.record(now, "skipped", step, "not run: " + self.reason)

    def sort(self) -> None:
        """Put the calls and the slots in plan order (planning, the first plan's steps as written,
        then each replan and its new steps), so the record does not depend on which worker
        happened to finish first."""
        keys = ["plan"]
        for i, plan in enumerate(self.plans):
            keys += ([f"replan{i}"] if i else []) + plan.ids
        rank: dict[str, int] = {}
        for key in keys:
            rank.setdefault(key, len(rank))
        self.calls.sort(key=lambda call: rank.get(call[0], len(rank)))
        self.slots.sort(key=lambda slot: (slot.start, rank.get(slot.step_id, len(rank))))

    @property
    def deliverable(self) -> str | None:
        """The final step's output, or None if the run never reached it."""
        return None if self.plan is None else self.outputs.get(self.plan.final_step.id)

    @property
    def step_status(self) -> dict[str, str]:
        """Where each step ended up: "done", "failed", "skipped", or "pending" (not reached yet).
        Steps a replan replaced are listed too, after the current plan's."""
        status = {step_id: "pending" for step_id in (self.plan.ids if self.plan else ())}
        for event in self.trace:
            if event.kind in ("finished", "failed", "skipped"):
                status[event.step_id] = "done" if event.kind == "finished" else event.kind
        return status

    @property
    def elapsed(self) -> float:
        """Seconds (on the run's clock) from the start of the run to its last event: the makespan."""
        return max((e.time for e in self.trace), default=0.0)

    @property
    def latency(self) -> float:
        """What the run took from the task to the answer: the planner's seconds (the calls that
        wrote the first plan, under ("plan", "planner")), then the makespan."""
        if self.writing is not None:  # a streamed plan: its writing is in the makespan already
            return round(max(self.elapsed, self.writing[1]), 6)
        planning = sum(c.latency for step, role, c in self.calls if (step, role) == ("plan", "planner"))
        return round(planning + self.elapsed, 6)

    def summary(self) -> str:
        clock = "virtual" if self.clock == "virtual" else "wall clock"
        on = f", {self.workers} workers" if self.workers != 1 else ""
        steps = f"{len(self.outputs)}/{len(self.plan)} steps" if self.plan else "no plan"
        head = f"{self.status}: {steps} in {self.elapsed:.1f} s ({clock}{on})"
        return head + (f" - {redact(self.reason)}" if self.reason else "")

    # A run's text is shown with every credential in it redacted (`llm.redact`), wherever it came
    # from: a failure's message is redacted when it is made, an output or a task may not be.

    def __str__(self) -> str:
        plan = str(self.plan) if self.plan else "(no plan)"
        parts = [f"Task: {self.task}", plan, "", str(self.trace), "", self.summary()]
        note = loose_ends(self.plan) if self.plan else ""
        return redact("\n".join(parts) + f"\nDeliverable: {self.deliverable}" + (f"\n{note}" if note else ""))

    def _repr_html_(self) -> str:
        shown = Trace([replace(e, detail=redact(e.detail)) for e in self.trace])
        deliverable = html.escape(redact(str(self.deliverable))).replace("\n", "<br>")
        note = loose_ends(self.plan) if self.plan else ""  # a plan with several ends says so
        return (
            f"<p><b>Task:</b> {html.escape(redact(self.task))}<br>"
            f"<b>Run:</b> {html.escape(self.summary())}</p>"
            f"{shown._repr_html_()}"
            f"<p><b>Deliverable:</b><br><code>{deliverable}</code></p>"
            + (f"<p><i>{html.escape(note)}</i></p>" if note else "")
        )


def loose_ends(plan: Plan) -> str:
    """A plan with one end: "". With several: a sentence naming them and the one delivered.

    Only `plan.final_step`'s output is the deliverable, so another end's output reaches nobody:
    the third latent bug of the textbook's Code 32.3.1, which delivers whichever subtask is listed
    last. The kit does not refuse such a plan (a model may write one, and a replanned run keeps
    finished steps the new ones do not need); it says so wherever the run is shown."""
    if len(plan.ends) < 2:
        return ""
    *others, last = [s.id for s in plan.ends]
    one = len(others) == 1
    left = " and ".join(f"{i}'s" for i in others) + (" is" if one else " are")
    return (
        f"Note: steps {', '.join(others)} and {last} {'both' if one else 'all'} end the plan (no step "
        f"waits for them); only {last}'s output is delivered (it comes last in order), {left} left "
        f"out. To deliver {'both' if one else 'all of them'}, add a step that waits for each."
    )
