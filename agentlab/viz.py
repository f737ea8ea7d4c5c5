"""Pictures of plans and runs: the DAG, and a Gantt timeline of who ran what when.

`draw_plan` lays a plan out in layers, left to right: a step's layer is the
length of the longest dependency chain leading to it, so every arrow points
right and steps in the same column could run at once. The critical path is
drawn thick. `draw_timeline` puts a run's slots on a time axis, one row per
worker (or per step, or per process that ran them); timelines stacked on a
shared time axis name it and list the roles once. Both colour steps by role
from one shared map and return the matplotlib Axes, so a notebook can add to
them or place them side by side.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from agentlab.plan import Plan
from agentlab.run import Run
from agentlab.schedule import Slot, makespan

ROLE_COLOURS = {
    "researcher": "#4c72b0",
    "coder": "#dd8452",
    "critic": "#8172b3",
    "writer": "#55a868",
    "planner": "#c44e52",
}
# Roles not listed above get a colour from this palette, picked by a stable hash of the name.
EXTRA_COLOURS = ("#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd", "#1b9e77", "#e7298a")

STATUS_COLOURS = {
    "done": "#2ca02c",
    "failed": "#d62728",
    "skipped": "#c7c7c7",
    "running": "#ffbf00",
    "pending": "#ffffff",
}
CRITICAL = "#d62728"
BY = ("worker", "step", "where")  # a timeline's rows: worker slots, steps, or processes
NORMAL_EDGE = "#9a9a9a"


def role_colour(role: str) -> str:
    """The colour of a role, the same in every picture and every session."""
    if role in ROLE_COLOURS:
        return ROLE_COLOURS[role]
    return EXTRA_COLOURS[zlib.crc32(role.encode()) % len(EXTRA_COLOURS)]


def layers(plan: Plan) -> dict[str, int]:
    """Each step's column: 0 for a step with no dependencies, else one more than its deepest dependency."""
    depth: dict[str, int] = {}
    for step in plan.topological_order():
        depth[step.id] = 1 + max((depth[d] for d in step.depends_on), default=-1)
    return depth


def layout(plan: Plan) -> dict[str, tuple[float, float]]:
    """(x, y) per step: x is its layer; within a layer, steps stack top-down in written order."""
    depth = layers(plan)
    column: dict[int, list[str]] = {}
    for step_id in plan.ids:
        column.setdefault(depth[step_id], []).append(step_id)
    return {
        step_id: (float(x), (len(ids) - 1) / 2 - row)
        for x, ids in column.items()
        for row, step_id in enumerate(ids)
    }


def node_colours(plan: Plan, status: Mapping[str, str] | None = None) -> dict[str, str]:
    """Colour per step: by role, or by status (done/failed/skipped/running/pending) when given."""
    if status is None:
        return {s.id: role_colour(s.role) for s in plan}
    unknown = sorted(set(status.values()) - set(STATUS_COLOURS))
    if unknown:
        raise ValueError(f"unknown step status {unknown}; known: {list(STATUS_COLOURS)}")
    return {s.id: STATUS_COLOURS[status.get(s.id, "pending")] for s in plan}


def unit_or_declared(plan: Plan) -> dict[str, float]:
    """Durations for a picture when none are given: declared ones, else 1 (chains counted in steps)."""
    return {s.id: 1.0 if s.duration is None else s.duration for s in plan}


def draw_plan(
    plan: Plan,
    ax: Axes | None = None,
    *,
    status: Mapping[str, str] | None = None,
    durations: Mapping[str, float] | None = None,
    highlight_critical: bool = True,
) -> Axes:
    """Draw `plan` as a layered DAG; thick red arrows and outlines mark the critical path.

    `durations` defaults to the declared ones (else 1 per step), as `unit_or_declared` says.
    """
    if ax is None:  # room for every node: wider with more layers, taller with wider ones
        depth = list(layers(plan).values())
        columns, tallest = max(depth) + 1, max(depth.count(d) for d in depth)
        _, ax = plt.subplots(figsize=(min(2 + 1.8 * columns, 14), min(1.5 + 0.8 * tallest, 9)))
    import networkx as nx  # only to draw: a kernel that never draws a plan is spared its 0.4 s import

    graph = plan.to_networkx()
    pos = layout(plan)

    chain, length = plan.critical_path(unit_or_declared(plan) if durations is None else durations)
    if not highlight_critical:
        chain = []
    on_path = set(chain)
    critical = set(zip(chain, chain[1:], strict=False))
    colours = node_colours(plan, status)
    size = 1400
    nx.draw_networkx_nodes(
        graph,
        pos,
        nodelist=plan.ids,
        node_color=[colours[i] for i in plan.ids],
        edgecolors=[CRITICAL if i in on_path else "#333333" for i in plan.ids],
        linewidths=[3.0 if i in on_path else 1.0 for i in plan.ids],
        node_size=size,
        ax=ax,
    )
    nx.draw_networkx_labels(graph, pos, font_size=9, ax=ax)
    edges = list(graph.edges)
    nx.draw_networkx_edges(
        graph,
        pos,
        edgelist=edges,
        edge_color=[CRITICAL if e in critical else NORMAL_EDGE for e in edges],
        width=[3.0 if e in critical else 1.2 for e in edges],
        arrows=True,
        arrowsize=16,
        node_size=size,
        ax=ax,
    )
    if status is None:
        roles = list(dict.fromkeys(s.role for s in plan))
        handles = [Patch(facecolor=role_colour(r), edgecolor="#333333", label=r) for r in roles]
    else:
        shown = list(dict.fromkeys(status.get(i, "pending") for i in plan.ids))
        handles = [Patch(facecolor=STATUS_COLOURS[s], edgecolor="#333333", label=s) for s in shown]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=9)
    if highlight_critical:
        ax.set_title(f"critical path {' → '.join(chain)}, length {length:g}", fontsize=10)
    ax.margins(0.15)
    ax.set_axis_off()
    return ax


def draw_timeline(
    slots_or_run: Run | Sequence[Slot],
    ax: Axes | None = None,
    *,
    plan: Plan | None = None,
    by: str = "worker",
) -> Axes:
    """A Gantt chart: one bar per step from its start to its end, one row per worker (or per step).

    Pass a `Run` (its plan colours the bars, failed steps are hatched) or a list
    of `Slot`s from `schedule.virtual_schedule` with the `plan` they came from.
    `by="where"` gives one row per process that ran a step (`Slot.where`, "host:pid"), in the
    order they first started one: on a cluster, which machine and worker process ran what
    (a step retried after its worker died shows on both; "where unknown" when none reported).
    A run whose plan was streamed (`streaming.orchestrate_streaming`) gets a first row, the
    plan's writing, with a tick where each step was written: the steps start under it.
    """
    if by not in BY:
        raise ValueError(f"by must be one of {BY}, got {by!r}")
    failed: set[str] = set()
    unit, writing, written = "s", None, []
    if isinstance(slots_or_run, Run):
        run = slots_or_run
        slots, plan = list(run.slots), plan or run.plan
        failed = {step_id for step_id, s in run.step_status.items() if s == "failed"}
        unit = "virtual s" if run.clock == "virtual" else "wall-clock s"
        writing, written = run.writing, [e.time for e in run.trace.of_kind("planned")]
    else:
        slots = list(slots_or_run)
    roles = {s.id: s.role for s in plan} if plan is not None else {}

    if by == "worker":
        rows = sorted({slot.worker for slot in slots})
        row_of = {slot.step_id: rows.index(slot.worker) for slot in slots}
        labels = [f"worker {w}" for w in rows]
    elif by == "where":  # a retry may run elsewhere: the row is the slot's, not the step's
        rows = list(dict.fromkeys(slot.where for slot in sorted(slots, key=lambda slot: slot.start)))
        labels = [w or "where unknown" for w in rows]
    else:
        ran = list(dict.fromkeys(slot.step_id for slot in slots))  # a retried step has several slots
        order = [i for i in plan.ids if i in ran] if plan else []
        order += [i for i in ran if i not in order]  # and a replan drops steps from the plan
        row_of = {step_id: n for n, step_id in enumerate(order)}
        labels = order
    first = 0 if writing is None else 1  # the plan's writing takes the first row
    if writing is not None:
        labels = ["plan (writing)", *labels]
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.9 + 0.45 * max(len(labels), 1)))
    if writing is not None:
        span = writing[1] - writing[0]
        (bar,) = ax.barh(0, span, left=writing[0], height=0.6, color="#dddddd", edgecolor="#222222")
        bar.set_gid("plan-writing")
        ax.plot(written, [0] * len(written), "|", color="#222222", markersize=14)

    for slot in slots:
        role = roles.get(slot.step_id)
        row = first + (rows.index(slot.where) if by == "where" else row_of[slot.step_id])
        (bar,) = ax.barh(
            row,
            slot.end - slot.start,
            left=slot.start,
            height=0.6,
            color=role_colour(role) if role else "#8c8c8c",
            edgecolor="#222222",
            hatch="//" if slot.step_id in failed else None,
        )
        bar.set_gid(slot.step_id)  # so code (and tests) can find a step's bar
        if by != "step":
            ax.text((slot.start + slot.end) / 2, row, slot.step_id, ha="center", va="center")
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()  # worker 0 (or the first step, or the first process) on top
    right = max(makespan(slots), writing[1] if writing else 0, 1e-9) * 1.02
    drawn = [a for a in ax.get_shared_x_axes().get_siblings(ax) if a is not ax and a.patches]
    if drawn:  # an x axis shared with timelines already drawn: one scale, wide enough for the longest
        right = max(right, drawn[0].get_xlim()[1])
    ax.set_xlim(0, right)
    # Timelines stacked on one x axis: the lowest names it, and the roles are listed once.
    below = [a for a in drawn if a.get_position().y0 < ax.get_position().y0]
    ax.set_xlabel("" if below else f"time ({unit})")
    for above in (a for a in drawn if a not in below):
        above.set_xlabel("")
    if roles:
        shown = list(dict.fromkeys(roles[s.step_id] for s in slots if s.step_id in roles))
        listed = {t.get_text() for a in drawn if a.get_legend() for t in a.get_legend().get_texts()}
        if not set(shown) <= listed:
            handles = [Patch(facecolor=role_colour(r), edgecolor="#222222", label=r) for r in shown]
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=9)
    ax.set_title(f"makespan {makespan(slots):g} {unit}", fontsize=10)
    return ax
