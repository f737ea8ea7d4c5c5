"""The comparison harness: the same tasks through each topology, totals that are sums of calls,
and the shapes that decide the winner (token growth, latency against width, who wins where)."""

import random

import pytest

from agentlab import plots, world
from agentlab.compare import (
    TOPOLOGIES,
    Comparison,
    Outcome,
    Setup,
    compare,
    fit_polynomial,
    row,
    sweep,
)
from agentlab.llm import Completion, SimulatedLLM, Usage, cost, usage_report
from agentlab.routing import ROUTELLM_GSM8K, PairCounts, RoutePoint, random_router

TASKS = world.make_tasks(20, seed=3)


@pytest.fixture(scope="module")
def batch():
    return compare(TASKS, Setup(SimulatedLLM(seed=0, error_rate=0.1)))


def chains(rng, hops, task_id):
    return world.chain_task(rng, hops, task_id)


def fanouts(rng, width, task_id):
    return world.fanout_task(rng, width, "total", task_id)


# --- the totals -----------------------------------------------------------------------------------


def test_every_total_in_the_table_is_the_sum_of_its_calls(batch):
    for r in batch.rows():
        outcomes = batch.outcomes[r.topology]
        calls = [c for o in outcomes for _, _, c in o.calls]
        assert r.calls == len(calls) == sum(len(o.calls) for o in outcomes)
        assert r.usage == sum((c.usage for c in calls), Usage()) == sum((o.usage for o in outcomes), Usage())
        assert r.cost == pytest.approx(sum(cost(c.model, c.usage) for c in calls))
        assert r.cost == pytest.approx(usage_report([call for o in outcomes for call in o.calls]).total.cost)
        assert r.seconds == pytest.approx(sum(o.seconds for o in outcomes))
        assert r.right == sum(o.task.check(o.answer) for o in outcomes)
        assert r.mean_tokens == pytest.approx(r.usage.total_tokens / len(TASKS))


def test_the_planners_calls_are_counted_with_the_teams(batch):
    for name in ("plan-execute", "planner+workers"):
        roles = {role for o in batch.outcomes[name] for _, role, _ in o.calls}
        assert "planner" in roles and "writer" in roles
        assert all(o.calls[0][:2] == ("plan", "planner") for o in batch.outcomes[name])


def test_the_multiplier_is_tokens_over_one_calls_tokens(batch):
    chat = batch["chat"]
    assert chat.calls == len(TASKS) and chat.multiplier == pytest.approx(1.0)
    for r in batch.rows():
        assert r.multiplier == pytest.approx(r.mean_tokens / chat.mean_tokens)
    assert batch["react"].multiplier > 10  # tools, specs and the history re-read in every call


def test_a_failed_plan_still_counts_the_calls_that_made_it():
    llm = SimulatedLLM(error_rate=1.0, error_kinds=["malformed_json"])
    outcome = TOPOLOGIES["plan-execute"].solve(TASKS[0], Setup(llm))
    assert outcome.status == "failed" and outcome.answer is None and not outcome.right
    assert len(outcome.calls) == 3 and {role for _, role, _ in outcome.calls} == {"planner"}
    assert outcome.seconds == pytest.approx(sum(c.latency for _, _, c in outcome.calls))
    assert "no valid plan after 3 attempt(s)" in outcome.reason


# --- the topologies -----------------------------------------------------------------------------------


def test_parallel_workers_change_when_things_happen_never_what():
    tasks = [fanouts(random.Random(i), 5, f"f{i}") for i in range(4)]
    c = compare(tasks, Setup(SimulatedLLM(), tool_seconds=1.0), ["plan-execute", "planner+workers"])
    for one, many in zip(c.outcomes["plan-execute"], c.outcomes["planner+workers"], strict=True):
        assert one.answer == many.answer and one.calls == many.calls
        assert many.seconds < one.seconds - 3.0  # five 1 s lookups at once instead of one by one


def test_tool_seconds_reach_every_topologys_clock():
    task = chains(random.Random(0), 3, "c")
    for name in ("react", "plan-execute"):
        fast, slow = (TOPOLOGIES[name].solve(task, Setup(SimulatedLLM(), tool_seconds=s)) for s in (0.1, 2.1))
        assert slow.seconds - fast.seconds == pytest.approx(3 * 2.0)  # three lookups, each 2 s slower


def test_chat_cannot_look_anything_up():
    outcome = TOPOLOGIES["chat"].solve(TASKS[1], Setup(SimulatedLLM()))
    assert len(outcome.calls) == 1 and outcome.calls[0][2].tool_calls == ()
    assert not outcome.right


def test_agent_steps_make_the_team_pay_a_model_call_for_every_lookup():
    task = fanouts(random.Random(2), 4, "f")
    tool_steps = TOPOLOGIES["plan-execute"].solve(task, Setup(SimulatedLLM()))
    agent_steps = TOPOLOGIES["plan-execute"].solve(task, Setup(SimulatedLLM(), tool_steps=False))
    assert tool_steps.right and agent_steps.right
    assert len(tool_steps.calls) == 2  # the plan and the writer
    assert len(agent_steps.calls) > 4 * 2  # each lookup: a call to choose it, one to read it


# --- the shapes that decide the winner ----------------------------------------------------------


def test_react_tokens_grow_with_the_square_of_the_steps_and_plan_execute_linearly():
    s = sweep("hops", chains, range(1, 9), Setup(SimulatedLLM()), ["react", "plan-execute"], per_x=2)
    react, planned = s.series("react"), s.series("plan-execute")
    react_fit, planned_fit = fit_polynomial(s.xs, react, 2), fit_polynomial(s.xs, planned, 2)
    assert react_fit.coefficients[0] > 10  # tokens per step squared: the re-read history
    assert fit_polynomial(s.xs, react, 2).r2 > fit_polynomial(s.xs, react, 1).r2
    assert abs(planned_fit.coefficients[0]) < 0.05 * planned_fit.coefficients[1]  # no curve to speak of
    assert fit_polynomial(s.xs, planned, 1).r2 > 0.99
    ratios = [a / b for a, b in zip(react, planned, strict=True)]
    assert ratios[0] < 1 < ratios[-1] and ratios[-1] > 3  # ReAct cheaper for one hop, far dearer for eight


def test_parallel_latency_falls_against_sequential_as_the_fan_out_widens():
    setup = Setup(SimulatedLLM(), tool_seconds=1.0)
    s = sweep("width", fanouts, [2, 4, 6, 8], setup, ["react", "plan-execute", "planner+workers"], per_x=2)
    sequential, parallel = (
        s.series("plan-execute", "mean_seconds"),
        s.series("planner+workers", "mean_seconds"),
    )
    speedups = [a / b for a, b in zip(sequential, parallel, strict=True)]
    assert all(b > a for a, b in zip(speedups, speedups[1:], strict=False))
    react = s.series("react", "mean_seconds")
    assert react[-1] / parallel[-1] > 1.4


def test_one_agent_wins_short_sequential_tasks_and_the_team_wins_wide_independent_ones():
    rng = random.Random(5)
    short = [world.single_task(rng, f"s{i}") for i in range(6)]
    wide = [fanouts(rng, 8, f"w{i}") for i in range(4)]
    setup = Setup(SimulatedLLM(), tool_seconds=1.0)
    names = ["react", "planner+workers"]
    small, big = compare(short, setup, names), compare(wide, setup, names)
    one, team = small["react"], small["planner+workers"]
    assert one.accuracy == team.accuracy == 1.0
    assert one.mean_tokens < team.mean_tokens and one.mean_seconds < team.mean_seconds
    assert one.mean_cost < team.mean_cost
    one, team = big["react"], big["planner+workers"]
    assert team.mean_seconds < one.mean_seconds and team.mean_tokens < one.mean_tokens


# --- fits, filters, tables, bad input ----------------------------------------------------------------


def test_a_fit_recovers_a_known_polynomial_and_reports_its_r_squared():
    xs = [1, 2, 3, 4, 5]
    fit = fit_polynomial(xs, [3 * x * x + 2 * x + 7 for x in xs], 2)
    assert fit.coefficients == pytest.approx((3, 2, 7)) and fit.r2 == pytest.approx(1.0)
    assert fit(10) == pytest.approx(327) and str(fit).startswith("3.0 n² + 2.0 n + 7.0")
    assert fit_polynomial(xs, [1, 3, 2, 5, 4], 1).r2 < 1
    with pytest.raises(ValueError, match="a degree-2 fit needs more than 2 points"):
        fit_polynomial([1, 2], [1, 2], 2)


def test_a_comparison_can_be_narrowed_to_one_family(batch):
    chains_only = batch.where(lambda t: t.family == "chain")
    assert {t.family for t in chains_only.tasks} == {"chain"}
    assert all(len(v) == len(chains_only.tasks) for v in chains_only.outcomes.values())
    with pytest.raises(ValueError, match="no task of this comparison passes the filter"):
        batch.where(lambda t: False)


def test_the_table_prints_and_renders_one_row_per_topology(batch):
    text, page = batch.to_text(), batch._repr_html_()
    assert text.splitlines()[0].split()[:2] == ["topology", "accuracy"]
    for name in TOPOLOGIES:
        assert name in text and f"<td>{name}</td>" in page
    assert "Means per task over 20 tasks" in text
    names = "chat, react, plan-execute, planner+workers, hierarchical, handoff"
    assert repr(batch) == f"Comparison(20 tasks, topologies: {names})"


def test_an_unpriced_model_counts_as_zero_dollars_and_is_named():
    task = TASKS[0]
    free = Outcome(task, "x", (("chat", "agent", _completion("local-llama")),), 1.0)
    c = Comparison([task], {"chat": [free]})
    assert c["chat"].cost == 0.0 and "No price for local-llama" in c.to_text()


def _completion(model):
    return Completion("x", model, "local", Usage(10, 2), 1.0)


def test_bad_requests_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="unknown topology 'swarm'; known: chat, react"):
        compare(TASKS[:1], Setup(SimulatedLLM()), ["swarm"])
    with pytest.raises(ValueError, match="compare needs at least one task"):
        compare([], Setup(SimulatedLLM()))
    with pytest.raises(ValueError, match="tool_seconds must be a number of seconds >= 0, got -1"):
        Setup(SimulatedLLM(), tool_seconds=-1)
    with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
        Setup(SimulatedLLM(), workers=0)
    with pytest.raises(ValueError, match="no outcomes for 'react'"):
        row("react", [])


# --- the pictures ---------------------------------------------------------------------------------


@pytest.fixture
def headless():
    import matplotlib.pyplot as plt

    plt.switch_backend("Agg")  # no window, no display needed
    yield
    plt.close("all")


def test_the_bars_show_each_topologys_row(batch, headless):
    axes = plots.comparison_bars(batch, ("accuracy", "mean_tokens"))
    rows = batch.rows()
    for ax, metric in zip(axes, ("accuracy", "mean_tokens"), strict=True):
        heights = [bar.get_height() for bar in ax.patches]
        assert heights == pytest.approx([getattr(r, metric) for r in rows])
        assert [t.get_text() for t in ax.get_xticklabels()] == [r.topology for r in rows]


def test_the_growth_plot_shows_the_measurements_and_the_fitted_curves(headless):
    s = sweep("hops", chains, [1, 2, 3, 4], Setup(SimulatedLLM()), ["react", "plan-execute"], per_x=1)
    fits = {name: fit_polynomial(s.xs, s.series(name), 2) for name in ("react", "plan-execute")}
    ax = plots.token_growth(s, fits)
    points, curves = ax.lines[0::2], ax.lines[1::2]
    assert list(points[0].get_ydata()) == s.series("react")
    assert curves[1].get_label() == f"plan-execute: {fits['plan-execute']}"
    ax = plots.by_size(s, ["react"], "mean_seconds")
    assert list(ax.lines[0].get_ydata()) == s.series("react", "mean_seconds")


def test_the_router_plot_draws_the_random_and_perfect_curves_from_the_counts(headless):
    counts = ROUTELLM_GSM8K
    point = RoutePoint("half", 0.5, 0.6, 0.9, 0.01)
    ax = plots.router_curves(counts, [point], "GSM8K")
    coin, perfect, ends, measured = ax.lines
    assert coin.get_ydata()[100] == pytest.approx(random_router(counts, 0.5))
    assert max(perfect.get_ydata()) == pytest.approx(counts.perfect_accuracy)
    assert list(ends.get_ydata()) == [counts.weak_accuracy, counts.strong_accuracy]
    assert list(measured.get_xdata()) == [0.5]
    ax = plots.cost_quality({"by steps": [point]})
    assert list(ax.lines[0].get_xdata()) == [0.01]


def test_every_measured_router_point_is_labelled_with_its_router(headless):
    points = [
        RoutePoint("steps >= 4", 0.36, 0.45, 0.855, 0.003),
        RoutePoint("steps >= 3", 0.66, 0.77, 0.895, 0.005),
    ]
    ax = plots.router_curves(ROUTELLM_GSM8K, points, "measured")
    labels = {t.get_text(): t.xy for t in ax.texts}
    assert labels == {"steps >= 4": (0.36, 0.855), "steps >= 3": (0.66, 0.895)}
    ax = plots.cost_quality({"by steps needed": points})
    assert {t.get_text(): t.xy for t in ax.texts} == {
        "steps >= 4": (0.003, 0.855),
        "steps >= 3": (0.005, 0.895),
    }


def test_every_plot_has_a_title_and_each_topology_its_own_colour(batch, headless):
    s = sweep("hops", chains, [1, 2], Setup(SimulatedLLM()), ["react"], per_x=1)
    axes = [
        plots.token_growth(s, {"react": fit_polynomial(s.xs, s.series("react"), 1)}),
        plots.by_size(s, ["react"]),
        plots.router_curves(ROUTELLM_GSM8K),
        plots.cost_quality({"coin": [RoutePoint("coin", 0.5, 0.5, 0.8, 0.002)]}),
        *plots.comparison_bars(batch, ("accuracy",)),
    ]
    assert all(ax.get_title() for ax in axes), [ax.get_title() for ax in axes]
    colours = [plots.colour(name) for name in TOPOLOGIES]
    assert len(set(colours)) == len(colours)  # no topology falls back to the default colour


def test_accuracy_by_steps_draws_each_topologys_share_right_per_size(batch, headless):
    ax = plots.accuracy_by_steps(batch, ["react", "chat"])
    sizes = sorted({world.steps_needed(t.question) for t in batch.tasks})
    react_line = ax.lines[0]
    assert list(react_line.get_xdata()) == sizes
    for size, share in zip(sizes, react_line.get_ydata(), strict=True):
        outcomes = [o for o in batch.outcomes["react"] if world.steps_needed(o.task.question) == size]
        assert share == pytest.approx(sum(o.right for o in outcomes) / len(outcomes))


def test_the_context_plot_extends_the_fitted_line_until_it_passes_the_limit(headless):
    line = fit_polynomial([1, 2, 3], [1000, 2000, 3000], 1)
    ax = plots.context_growth([1, 2, 3], {"one agent": [1000, 2000, 3000]}, (10_000, "limit"), line)
    measured, limit, extended = ax.lines
    assert list(limit.get_ydata()) == [10_000, 10_000]
    assert extended.get_xdata()[0] == 3 and extended.get_ydata()[-1] >= 10_000  # drawn on to the limit
    assert ax.get_title() == "The largest context one call reads"


def test_router_labels_never_overlap_and_stay_inside_the_plot(headless):
    """Notebook 07's measured routers: 'steps >= 2' sat on 'all strong', and 'all weak' fell off the axes."""
    points = [
        RoutePoint("all weak", 0.0, 0.0, 0.73, 0.001),
        RoutePoint("steps >= 5", 0.105, 0.12, 0.755, 0.002),
        RoutePoint("steps >= 4", 0.36, 0.45, 0.855, 0.003),
        RoutePoint("steps >= 3", 0.655, 0.77, 0.895, 0.005),
        RoutePoint("steps >= 2", 0.8, 0.85, 0.91, 0.006),
        RoutePoint("all strong", 1.0, 1.0, 0.905, 0.007),
    ]
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    plots.router_curves(ROUTELLM_GSM8K, title="published", ax=left)
    ax = plots.router_curves(PairCounts(both=130, only_strong=50, only_weak=13, neither=7), points, ax=right)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = {t.get_text(): t.get_window_extent(renderer) for t in ax.texts}
    assert set(boxes) == {p.label for p in points}
    clashes = [(a, b) for a in boxes for b in boxes if a < b and boxes[a].overlaps(boxes[b])]
    assert not clashes, clashes
    outside = [n for n, box in boxes.items() if not ax.bbox.contains(box.x0, box.y0) or box.x1 > ax.bbox.x1]
    assert not outside, outside
    plt.close(fig)
