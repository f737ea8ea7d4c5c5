"""A trace is the story of a run: one event each time a step changes state.

Times are seconds on a virtual clock (how long the steps *declare* they take),
never the wall clock, so a stored notebook output is the same on every machine.
A trace prints as plain text in a terminal and as an HTML table in a notebook.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field

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
)


@dataclass(frozen=True)
class Event:
    """Step `step_id` (done by `role`) became `kind` at virtual time `time`.

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

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown event kind {self.kind!r}; expected one of {KINDS}")


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
        head = "".join(f"<th>{h}</th>" for h in ("t (s)", "event", "step", "role", "inputs", "detail"))
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
            rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
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
