"""A live plan editor: change a plan by hand and watch what follows from it.

Each step is a row of fields: id, role, instruction, the ids it depends on, its duration on the
virtual clock and its chance of success. Every change rebuilds the plan from the rows and validates
it. A broken plan (a cycle, an unknown dependency, a duplicate id) shows its `PlanError`, the last
valid plan's picture stays, and nothing runs until it is fixed. For a valid plan the editor draws the
DAG with its critical path, gives the makespan on the chosen number of workers and the chance that
every step succeeds; Run executes the plan and draws who ran what when.

With `approval=True` (notebook 03) the editor is a checkpoint for a person: a planner's plan is shown
before anything runs, the learner edits it, approves it as it is or rejects it with a reason, and Run
runs exactly the approved plan. An edit after approval withdraws it until Approve is clicked again;
every decision (approved, rejected with its reason, an approval refused and why) is kept in
`editor.decisions`. What the editor shows and what a click does come from one place (`_sync`).

It is plain Python over ipywidgets: setting a field's `.value` or calling `Button.click()` does what
a learner's edit or click does, which is how the tests drive it without a browser or a kernel.

At the end, `ReliabilityExplorer` (notebook 06) puts the p^n law on sliders: chain success against
length, beside one agent's chance q.
"""

from __future__ import annotations

import html
import io
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from agentlab.agents import STUB_TEAM, Agent
from agentlab.experiments import (
    chain_success,
    check_count,
    check_probability,
    longest_winning_chain,
    plan_success,
    with_retries,
)
from agentlab.plan import Plan, PlanError, Step
from agentlab.plan_rows import COLUMNS, DEFAULT_SUCCESS, StepRow, step_row
from agentlab.planners import stub_planner
from agentlab.run import Run, run_plan
from agentlab.schedule import makespan, step_durations, virtual_schedule
from agentlab.trace import Event, loose_ends
from agentlab.valid import number
from agentlab.viz import draw_plan, draw_timeline, layers

DEFAULT_TASK = "Write a short report on planner-executor agents."
def png(draw: Callable[[Axes], object], size: tuple[float, float]) -> bytes:
    """Draw on a fresh figure and return it as PNG bytes. A bare `Figure` (not pyplot) is never
    registered with pyplot, so nothing leaks and the notebook does not also display it."""
    fig = Figure(figsize=size, layout="constrained")
    draw(fig.subplots())
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    return buffer.getvalue()


def dag_size(plan: Plan) -> tuple[float, float]:
    """A figure size (inches) that gives every node room: wider with more layers, taller with wider ones."""
    depth = layers(plan).values()
    columns, tallest = max(depth) + 1, max(Counter(depth).values())
    return min(3.5 + 1.4 * columns, 11.0), min(1.2 + 0.7 * tallest, 8.0)


@dataclass(frozen=True)
class Decision:
    """A person's decision on the plan on screen: "approved", "rejected" (with their reason) or
    "refused" (Approve on a plan that is not valid: the reason says why; no plan)."""

    action: str
    plan: Plan | None
    reason: str = ""


class PlanEditor:
    """Edit a plan in a notebook and see its DAG, critical path, makespan, predicted success and
    (after Run) its timeline, all kept up to date.

    `editor.plan` is the last valid plan and `editor.error` the current problem ("" when the rows
    form a valid plan); `editor.last_run` is the `Run` from the last click on Run. With
    `approval=True`, `editor.approved` is the plan the learner approved (None until then, and again
    after an edit) and `editor.decisions` every decision taken on it, in order."""

    def __init__(
        self,
        plan: Plan | None = None,
        team: Mapping[str, Agent] = STUB_TEAM,
        workers: int = 2,
        approval: bool = False,
    ):
        number(workers, "workers", minimum=1, whole=True)
        plan = stub_planner(DEFAULT_TASK) if plan is None else plan
        Plan(plan.steps, roles=team)  # every role needs an agent in this team, else a PlanError
        self.team = team
        self.plan = plan
        self.error = ""
        self.last_run: Run | None = None
        self.approval = approval
        self.approved: Plan | None = None
        self.decisions: list[Decision] = []
        self._withdrawn = False  # an approval was withdrawn by an edit
        self._rejected = ""  # the reason of a rejection of the plan on screen
        self._notice = ""  # what the last click on Approve or Reject could not do, until the next edit
        self._drawn: Plan | None = None  # the plan the DAG picture shows

        # each CSS class is a handle for the browser test
        self.workers = widgets.BoundedIntText(workers, min=1, max=64, description="workers")
        self.workers.add_class("agentlab-workers")
        self.add_button = widgets.Button(description="add step", icon="plus")
        self.run_button = widgets.Button(description="Run", icon="play", button_style="primary")
        self.run_button.add_class("agentlab-run")
        self.approve_button = widgets.Button(description="Approve", icon="check", button_style="success")
        self.approve_button.add_class("agentlab-approve")
        self.approve_button.on_click(lambda _: self.approve())
        self.reject_button = widgets.Button(description="Reject", icon="times", button_style="danger")
        self.reject_button.add_class("agentlab-reject")
        self.reject_button.on_click(lambda _: self.reject())
        self.reason = widgets.Text(placeholder="why reject it?", layout=widgets.Layout(width="220px"))
        self.reason.add_class("agentlab-reason")
        self.message = widgets.HTML().add_class("agentlab-message")
        self.summary = widgets.HTML().add_class("agentlab-summary")
        self.run_status = widgets.HTML().add_class("agentlab-run-status")
        self.dag = widgets.Image(format="png").add_class("agentlab-dag")
        self.timeline = widgets.Image(format="png").add_class("agentlab-timeline")

        self.rows: list[StepRow] = []
        self._rows_box = widgets.VBox()
        durations = step_durations(plan, team)
        for step in plan:
            self._add_row(step, durations[step.id], DEFAULT_SUCCESS)
        self.workers.observe(lambda _change: self.refresh(), names="value")
        self.add_button.on_click(lambda _: self.add_step())
        self.run_button.on_click(lambda _: self.run())

        header = [
            widgets.HTML(f"<b>{name}</b>", layout=widgets.Layout(width=f"{px}px"))
            for name, px in COLUMNS.items()
        ]
        approve = [self.approve_button, self.reject_button, self.reason] if approval else []
        controls = widgets.HBox([self.add_button, self.workers, *approve, self.run_button])
        shown = [self.message, self.summary, self.dag, self.run_status, self.timeline]
        self.widget = widgets.VBox([widgets.HBox(header), self._rows_box, controls, *shown])
        self.refresh()

    # --- editing -----------------------------------------------------------

    def _add_row(self, step: Step, duration: float, success: float) -> StepRow:
        row = step_row(step, list(self.team), duration, success)
        for field in row.fields:
            field.observe(lambda _change: self.refresh(), names="value")
        row.remove.on_click(lambda _: self.remove_step(row))
        self.rows.append(row)
        self._rows_box.children = [r.box for r in self.rows]
        return row

    def add_step(self) -> StepRow:
        """Append a step with a fresh id and no dependencies; wire it up by editing its row."""
        taken = {row.id.value.strip() for row in self.rows}
        n = len(self.rows) + 1
        while f"s{n}" in taken:
            n += 1
        role = next(iter(self.team))
        row = self._add_row(Step(f"s{n}", role, "a new step"), self.team[role].seconds, DEFAULT_SUCCESS)
        self.refresh()
        return row

    def remove_step(self, row: StepRow | str) -> None:
        """Remove a row (or the row whose id is `row`); steps that needed it now show an error."""
        if isinstance(row, str):
            matches = [r for r in self.rows if r.id.value.strip() == row]
            if not matches:
                raise KeyError(f"no step with id {row!r} in the editor")
            row = matches[0]
        self.rows.remove(row)
        self._rows_box.children = [r.box for r in self.rows]
        self.refresh()

    # --- what the editor shows --------------------------------------------------

    def refresh(self) -> None:
        """Rebuild the plan from the rows; show it if valid, else show why not and keep the last one."""
        self._notice = ""
        try:
            plan = Plan([row.step() for row in self.rows], roles=self.team)
        except PlanError as e:
            self.error = str(e)
            self.message.value = f'<span style="color:#b00020">&#9888; {html.escape(self.error)}</span>'
            self.summary.value = "<i>Not a valid plan: no figures until it is fixed.</i>"
            self._edited(None)
            self._sync()
            return
        self._edited(plan)
        self.plan, self.error = plan, ""
        note = f" &middot; {html.escape(said)}" if (said := loose_ends(plan)) else ""  # loose ends: named
        self.message.value = f'<span style="color:#2e7d32">&#10003; valid plan</span>{note}'
        durations = step_durations(plan, self.team)
        path, length = plan.critical_path(durations)
        k = self.workers.value
        span = makespan(virtual_schedule(plan, durations, k))
        success = plan_success(plan, {row.id.value.strip(): row.success.value for row in self.rows})
        self.summary.value = (
            f"<b>critical path</b> {' &rarr; '.join(html.escape(s) for s in path)}: {length:g} s"
            f" &middot; <b>makespan</b> on {k} worker{'s' if k != 1 else ''}: {span:g} s"
            f" (one worker: {sum(durations.values()):g} s)"
            f" &middot; <b>predicted success</b> {success:.1%}"
        )
        if plan != self._drawn:  # redraw only when the steps changed, not for workers or p
            self.dag.value = png(lambda ax: draw_plan(plan, ax, durations=durations), dag_size(plan))
            self._drawn = plan
        self._sync()

    def _edited(self, plan: Plan | None) -> None:
        """The rows now form `plan` (None: no valid plan): an approval or a rejection of another plan
        no longer holds. Only a click on Approve approves again, even if the old text is typed back."""
        if plan != self.approved and self.approved is not None:
            self.approved, self._withdrawn = None, True
        if plan != self.plan or plan is None:
            self._rejected = ""

    # --- a person's decision (approval=True) --------------------------------------

    def approve(self) -> Plan | None:
        """Approve the plan on screen as it is now; a plan that is not valid is refused, saying why."""
        if self.error:
            self.approved = None
            self.decisions.append(Decision("refused", None, self.error))
            self._notice = f"Not approved: the plan on screen is not valid: {html.escape(self.error)}."
        else:
            self.approved, self._withdrawn, self._rejected = self.plan, False, ""
            self.decisions.append(Decision("approved", self.plan))
        self._sync()
        return self.approved

    def reject(self, reason: str | None = None) -> None:
        """Reject the plan on screen, for `reason` (default: what the box beside Reject says)."""
        reason = (self.reason.value if reason is None else reason).strip()
        if not reason:
            self._notice = "Not rejected: say why in the box beside <b>Reject</b>, then click it again."
        else:
            self.approved, self._withdrawn, self._rejected = None, False, reason
            self.decisions.append(Decision("rejected", None if self.error else self.plan, reason))
        self._sync()

    # --- running -------------------------------------------------------------

    def _blocked(self) -> str:
        """Why Run must not run now ("" when it may)."""
        if self.error:
            return "Not run: the plan on screen is not valid (see the message above)."
        if self.approval and self.approved is None:
            if self._rejected:
                return (f"Not run: Rejected: {html.escape(self._rejected)}. Edit it and click "
                        "<b>Approve</b> if it can be fixed.")
            edited = "it was edited after approval" if self._withdrawn else "nobody has approved it yet"
            return f"Not run: {edited}. Check it, edit it if needed, then click <b>Approve</b>."
        return ""

    def run(self) -> Run | None:
        """Run the plan on screen on the chosen number of workers and draw its timeline; nothing runs
        (None) while it is invalid or, with approval, not (or no longer) approved: the editor says why."""
        blocked = self._blocked()
        if not blocked:
            run = self.last_run = run_plan(self.plan, self.team, workers=self.workers.value)  # == approved
            if self.approval:  # the run's record says who decided what before it ran, rejections too
                said = "; ".join(f"{d.action}: {d.reason}" if d.reason else d.action for d in self.decisions)
                run.trace.events.insert(0, Event(0.0, "approved", "run", "-", (), said))
            rows = min(run.workers, len(run.plan))
            self.timeline.value = png(lambda ax: draw_timeline(run, ax, plan=run.plan), (7, 0.8 + 0.4 * rows))
        self._sync()
        return None if blocked else self.last_run

    def _sync(self) -> None:
        """Show the state the next click acts on: Run enabled exactly when it would run, the status
        saying why not, and a timeline only of a run of the plan and workers on screen."""
        blocked, run = self._blocked(), self.last_run
        self.run_button.disabled = bool(blocked)
        current = run is not None and run.plan == self.plan and run.workers == self.workers.value
        self.timeline.layout.display = None if current and not blocked else "none"
        if blocked:
            status = blocked
        elif current:
            status = f"<b>Run</b>: {html.escape(run.summary())}"
        else:
            ready = "Approved: click" if self.approval else "Click"
            status = f"{ready} <b>Run</b> to run this plan and see its timeline."
        self.run_status.value = f"{self._notice} {status}" if self._notice else status

    # --- display in a notebook -------------------------------------------------

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = f"PlanEditor: {len(self.plan)} steps (run this cell to show the editor)"
        return bundle


# --- the reliability explorer --------------------------------------------------------------


class ReliabilityExplorer:
    """Sliders for a step's chance p, the chain length n, one agent's chance q and the retries per
    step; a plot of chain success against length, with the single agent's line and the last length
    at which the chain still wins.

    A step with r retries succeeds with probability 1 - (1 - p) ** (r + 1) (failures are noticed and
    tries are independent). `explorer.crossover` is that last winning length (0: one agent always
    wins; math.inf: it never does)."""

    def __init__(self, p: float = 0.9, n: int = 5, q: float = 0.6, retries: int = 0, max_n: int = 30):
        max_n = check_count("max_n", max_n, least=2)
        p, q = check_probability("p", p), check_probability("q", q)
        n, retries = check_count("n", n), check_count("retries", retries, least=0)
        if n > max_n:
            raise ValueError(f"n must be at most max_n ({max_n}), got {n}")
        slider = {"continuous_update": True, "style": {"description_width": "70px"}}
        self.p = widgets.FloatSlider(
            p, min=0, max=1, step=0.005, readout_format=".3f", description="p (step)", **slider
        )
        self.n = widgets.IntSlider(n, min=1, max=max_n, description="n (steps)", **slider)
        self.q = widgets.FloatSlider(q, min=0, max=1, step=0.01, description="q (single)", **slider)
        self.retries = widgets.IntSlider(retries, min=0, max=max(5, retries), description="retries", **slider)
        self.summary = widgets.HTML().add_class("agentlab-reliability-summary")
        self.plot = widgets.Image(format="png").add_class("agentlab-reliability-plot")
        for slider_widget in self.sliders:
            slider_widget.observe(lambda _change: self.refresh(), names="value")
        self.widget = widgets.VBox(
            [widgets.HBox([self.p, self.n]), widgets.HBox([self.q, self.retries]), self.summary, self.plot]
        )
        self.refresh()

    @property
    def sliders(self) -> list[widgets.ValueWidget]:
        return [self.p, self.n, self.q, self.retries]

    @property
    def step_success(self) -> float:
        """One step's chance with its retries."""
        return with_retries(self.p.value, self.retries.value + 1)

    @property
    def chain(self) -> float:
        """The chance that the whole chain of n steps succeeds."""
        return chain_success(self.step_success, self.n.value)

    @property
    def crossover(self) -> int | float:
        """The longest chain that still beats the single agent."""
        return longest_winning_chain(self.step_success, self.q.value)

    def refresh(self) -> None:
        """Recompute the figures and redraw the plot for the sliders' current values."""
        n, q, step = self.n.value, self.q.value, self.step_success
        tie = math.isclose(self.chain, q, rel_tol=1e-9, abs_tol=1e-12)  # within rounding: neither wins
        winner = "it is a tie" if tie else "the chain wins" if self.chain > q else "one agent wins"
        if self.crossover == 0 and math.isclose(step, q, rel_tol=1e-9, abs_tol=1e-12):
            verdict = "a tie at every length" if q == 1 else "the chain never wins (a tie at n = 1)"
        elif self.crossover == 0:
            verdict = "one agent wins at every length"
        elif self.crossover == math.inf:
            verdict = "the chain never falls below one agent"
        else:
            verdict = f"the chain wins up to n = {self.crossover} steps"
        retries = self.retries.value
        tries = f" with {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
        self.summary.value = (
            f"<b>step</b> {step:.1%}{html.escape(tries)} &middot; <b>chain of {n}</b> {self.chain:.1%}"
            f" &middot; <b>one agent</b> {q:.1%} &middot; at n = {n} {winner} &middot; {verdict}"
        )
        self.plot.value = png(self.draw, (8, 3.4))

    def draw(self, ax: Axes) -> Axes:
        """Chain success against length, the single agent's line, the crossover and n."""
        lengths = np.arange(1, self.n.max + 1)
        step, q, n = self.step_success, self.q.value, self.n.value
        if self.retries.value:
            ax.plot(lengths, self.p.value**lengths, color="#9a9a9a", linestyle=":", label="chain, no retries")
        ax.plot(lengths, step**lengths, color="#4c72b0", marker=".", label=f"chain at {step:.3f} per step")
        ax.axhline(q, color="#dd8452", label=f"one agent, q = {q:.2f}")
        if 0 < self.crossover <= self.n.max:
            label = f"chain wins up to n = {self.crossover}"
            ax.axvline(self.crossover, color="#c44e52", linestyle="--", label=label)
        ax.plot([n], [self.chain], "o", color="#2ca02c", markersize=9, label=f"n = {n}: {self.chain:.1%}")
        ax.set_xlabel("steps in the chain (n)")
        ax.set_ylabel("chance the whole chain succeeds")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(0.5, self.n.max + 0.5)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        return ax

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = "ReliabilityExplorer (run this cell to show its sliders)"
        return bundle
