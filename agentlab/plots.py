"""Pictures for notebook 07: one agent against a team, and routing between two models.

Each function draws on the Axes it is given (or a new one), returns it, and colours a
topology the same way in every picture, so a notebook can put them side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from agentlab.compare import Comparison, Fit, Sweep
from agentlab.routing import PairCounts, RoutePoint, perfect_router, random_router

TOPOLOGY_COLOURS = {
    "chat": "#8c8c8c",
    "react": "#dd8452",
    "plan-execute": "#4c72b0",
    "planner+workers": "#55a868",
    "hierarchy": "#8172b3",
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
        axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 3.2), layout="constrained")[1]
    rows = comparison.rows()
    names = [r.topology for r in rows]
    for ax, metric in zip(axes, metrics, strict=True):
        ax.bar(names, [getattr(r, metric) for r in rows], color=[colour(n) for n in names])
        ax.set_title(METRIC_LABELS.get(metric, metric), fontsize=10)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    return axes


def token_growth(
    sweep: Sweep, fits: Mapping[str, Fit], metric: str = "mean_tokens", ax: Axes | None = None
) -> Axes:
    """Measured tokens per task against the sweep's size, with each topology's fitted curve."""
    ax = _axes(ax)
    xs = np.linspace(min(sweep.xs), max(sweep.xs), 100)
    for name, fit in fits.items():
        ax.plot(sweep.xs, sweep.series(name, metric), "o", color=colour(name))
        ax.plot(xs, fit(xs), "-", color=colour(name), label=f"{name}: {fit}")
    ax.set_xlabel(f"steps ({sweep.label})")
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.legend(fontsize=8)
    return ax


def by_size(
    sweep: Sweep, topologies: Sequence[str], metric: str = "mean_seconds", ax: Axes | None = None
) -> Axes:
    """A metric against the sweep's size, one line per topology."""
    ax = _axes(ax)
    for name in topologies:
        ax.plot(sweep.xs, sweep.series(name, metric), "o-", color=colour(name), label=name)
    ax.set_xlabel(sweep.label)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.legend(fontsize=8)
    return ax


def router_curves(
    counts: PairCounts, points: Sequence[RoutePoint] = (), title: str = "", ax: Axes | None = None
) -> Axes:
    """Accuracy against the share of queries sent to the strong model: the random and the
    perfect router computed from `counts`, and measured routers as points."""
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
    ax.set_xlabel("share of queries sent to the strong model")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return ax


def cost_quality(curves: Mapping[str, Sequence[RoutePoint]], ax: Axes | None = None) -> Axes:
    """Accuracy against USD per task, one line per family of routers (points in order)."""
    ax = _axes(ax)
    for (label, points), marker in zip(curves.items(), "os^vD", strict=False):
        ax.plot([p.cost for p in points], [p.accuracy for p in points], marker + "-", label=label)
    ax.set_xlabel("USD per task")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=8, loc="lower right")
    return ax
