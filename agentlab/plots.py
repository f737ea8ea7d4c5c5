"""Pictures for notebooks 07 and 08: one agent against a team, routing between two models, and what
one context has to hold.

Each function draws on the Axes it is given (or a new one), returns it, gives it a title (or a
title per panel), colours a topology the same way in every picture, so a notebook can put them
side by side, and labels each measured router with its name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from agentlab.compare import Comparison, Fit, Sweep
from agentlab.routing import PairCounts, RoutePoint, perfect_router, random_router
from agentlab.world import steps_needed

TOPOLOGY_COLOURS = {
    "chat": "#8c8c8c",
    "react": "#dd8452",
    "plan-execute": "#4c72b0",
    "planner+workers": "#55a868",
    "hierarchical": "#8172b3",
    "handoff": "#c44e52",
}
METRIC_LABELS = {
    "accuracy": "accuracy",
    "mean_calls": "model calls per task",
    "mean_tokens": "tokens per task",
    "mean_input": "input tokens per task",
    "mean_cost": "USD per task",
    "mean_seconds": "latency per task (s, virtual)",
}


def colour(topology: str) -> str:
    return TOPOLOGY_COLOURS.get(topology, "#937860")


def _axes(ax: Axes | None, size: tuple[float, float] = (6, 4)) -> Axes:
    return plt.subplots(figsize=size)[1] if ax is None else ax


def comparison_bars(
    comparison: Comparison,
    metrics: Sequence[str] = ("accuracy", "mean_tokens", "mean_cost", "mean_seconds"),
    axes: Sequence[Axes] | None = None,
) -> Sequence[Axes]:
    """One bar chart per metric, a bar per topology."""
    if axes is None:
        size = (3.2 * len(metrics), 3.2)
        axes = plt.subplots(1, len(metrics), figsize=size, layout="constrained", squeeze=False)[1].ravel()
    rows = comparison.rows()
    names = [r.topology for r in rows]
    for ax, metric in zip(axes, metrics, strict=True):
        ax.bar(names, [getattr(r, metric) for r in rows], color=[colour(n) for n in names])
        ax.set_title(METRIC_LABELS.get(metric, metric), fontsize=10)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    return axes


def token_growth(
    sweep: Sweep,
    fits: Mapping[str, Fit],
    metric: str = "mean_tokens",
    ax: Axes | None = None,
    title: str = "Tokens per task as the task grows, and the fitted curves",
) -> Axes:
    """Measured tokens per task against the sweep's size, with each topology's fitted curve."""
    ax = _axes(ax)
    xs = np.linspace(min(sweep.xs), max(sweep.xs), 100)
    for name, fit in fits.items():
        ax.plot(sweep.xs, sweep.series(name, metric), "o", color=colour(name))
        ax.plot(xs, fit(xs), "-", color=colour(name), label=f"{name}: {fit}")
    ax.set_xlabel(f"steps ({sweep.label})")
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return ax


def by_size(
    sweep: Sweep,
    topologies: Sequence[str],
    metric: str = "mean_seconds",
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """A metric against the sweep's size, one line per topology (titled "<metric> by <size>")."""
    ax = _axes(ax)
    for name in topologies:
        ax.plot(sweep.xs, sweep.series(name, metric), "o-", color=colour(name), label=name)
    ax.set_xlabel(sweep.label)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_title(title or f"{METRIC_LABELS.get(metric, metric).capitalize()} by {sweep.label}", fontsize=10)
    ax.legend(fontsize=8)
    return ax


def router_curves(
    counts: PairCounts,
    points: Sequence[RoutePoint] = (),
    title: str = "Routers between a weak and a strong model",
    ax: Axes | None = None,
) -> Axes:
    """Accuracy against the share of queries sent to the strong model: the random and the
    perfect router computed from `counts`, and measured routers as points, each labelled."""
    ax = _axes(ax)
    shares = np.linspace(0, 1, 201)
    ax.plot(shares, [random_router(counts, s) for s in shares], "--", color="#8c8c8c", label="random router")
    ax.plot(shares, [perfect_router(counts, s) for s in shares], "-", color="#2ca02c", label="perfect router")
    ax.plot(
        [0, 1], [counts.weak_accuracy, counts.strong_accuracy], "s", color="#333333", label="one model only"
    )
    if points:
        measured = [p.task_share for p in points], [p.accuracy for p in points]
        ax.plot(*measured, "o-", color="#dd8452", label="measured")
        _label(ax, [(p.task_share, p.accuracy, p.label) for p in points])
    ax.set_xlabel("share of queries sent to the strong model")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def cost_quality(
    curves: Mapping[str, Sequence[RoutePoint]],
    ax: Axes | None = None,
    title: str = "Accuracy against cost, router by router",
) -> Axes:
    """Accuracy against USD per task, one line per family of routers (points in order, labelled)."""
    ax = _axes(ax)
    for (label, points), marker in zip(curves.items(), "os^vD", strict=False):
        ax.plot([p.cost for p in points], [p.accuracy for p in points], marker + "-", label=label)
        _label(ax, [(p.cost, p.accuracy, p.label) for p in points])
    ax.set_xlabel("USD per task")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return ax


LABEL_PLACES = (((4, -10), "left"), ((4, 5), "left"), ((-4, -12), "right"), ((-4, 5), "right"))


def _label(ax: Axes, points: Sequence[tuple[float, float, str]]) -> None:
    """Write each point's label beside it, small, so a curve of routers says which is which: below
    and to the right if there is room, else in the first of the other three corners where it
    overlaps no label already written and stays inside the axes."""
    renderer = ax.figure.canvas.get_renderer()
    taken: list = []
    for x, y, text in points:
        for offset, align in LABEL_PLACES:
            note = ax.annotate(
                text, (x, y), xytext=offset, textcoords="offset points", fontsize=7, color="#555555", ha=align
            )
            box = note.get_window_extent(renderer)
            inside = ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0
            if inside and not any(box.overlaps(other) for other in taken):
                break
            note.remove()
        else:
            note = ax.annotate(
                text, (x, y), xytext=(4, -10), textcoords="offset points", fontsize=7, color="#555555"
            )
            box = note.get_window_extent(renderer)
        taken.append(box)


def accuracy_by_steps(
    comparison: Comparison,
    topologies: Sequence[str],
    ax: Axes | None = None,
    title: str = "Accuracy by the steps a task needs",
) -> Axes:
    """Each topology's accuracy over the tasks that need n steps (`world.steps_needed`), for every n
    in the batch: where one agent wins and where a team does."""
    ax = _axes(ax)
    sizes = sorted({steps_needed(t.question) for t in comparison.tasks})
    for name in topologies:
        shares = []
        for n in sizes:
            right = [o.right for o in comparison.outcomes[name] if steps_needed(o.task.question) == n]
            shares.append(sum(right) / len(right))
        ax.plot(sizes, shares, "o-", color=colour(name), label=name)
    ax.set_xlabel("steps the task needs")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return ax


def context_growth(
    sizes: Sequence[int],
    contexts: Mapping[str, Sequence[float]],
    limit: tuple[float, str] | None = None,
    line: Fit | None = None,
    ax: Axes | None = None,
    xlabel: str = "hops",
    title: str = "The largest context one call reads",
) -> Axes:
    """Input tokens of the largest call of each agent (`contexts`: label -> one value per size),
    against the task's size. `limit` is a (tokens, label) line marking a context size models handle
    well; `line`, a straight line fitted to the first series, is drawn on until it passes the limit."""
    ax = _axes(ax)
    for (label, values), marker in zip(contexts.items(), "os^vD", strict=False):
        ax.plot(sizes, values, marker + "-", label=label)
    if limit is not None:
        ax.axhline(limit[0], color="#d62728", linestyle=":", label=limit[1])
    if line is not None and limit is not None and line.degree == 1 and line.coefficients[0] > 0:
        reach = (limit[0] - line.coefficients[1]) / line.coefficients[0]
        xs = np.linspace(max(sizes), max(reach, max(sizes)) + 1, 50)
        ax.plot(xs, line(xs), "--", color="#1f77b4", alpha=0.6, label=f"fitted and extended: {line}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("input tokens of one call")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return ax
