"""Pictures of plans and runs: right layout, right colours, the critical path where it belongs."""

import os
import random
import socket

import matplotlib

matplotlib.use("Agg")  # headless: no window, no display needed

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from agentlab.agents import STUB_TEAM, Agent  # noqa: E402
from agentlab.plan import Plan, Step  # noqa: E402
from agentlab.planners import stub_planner  # noqa: E402
from agentlab.run import run_plan  # noqa: E402
from agentlab.schedule import Slot, step_durations, virtual_schedule  # noqa: E402
from agentlab.viz import (  # noqa: E402
    CRITICAL,
    EXTRA_COLOURS,
    ROLE_COLOURS,
    STATUS_COLOURS,
    draw_plan,
    draw_timeline,
    layers,
    layout,
    role_colour,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


REPORT = stub_planner("Write a report")


def edge_colours(ax, plan):
    """Arrow colour per dependency edge, in the order networkx draws them."""
    arrows = [p for p in ax.patches if type(p).__name__ == "FancyArrowPatch"]
    return dict(zip(plan.to_networkx().edges, (a.get_edgecolor() for a in arrows), strict=True))


def red_edges(ax, plan):
    return {e for e, colour in edge_colours(ax, plan).items() if colour == to_rgba(CRITICAL)}


def test_roles_have_one_stable_colour_everywhere():
    assert role_colour("researcher") == ROLE_COLOURS["researcher"]
    assert role_colour("astrologer") == role_colour("astrologer") in EXTRA_COLOURS
    run = run_plan(REPORT, workers=2)
    nodes = draw_plan(REPORT).collections[0].get_facecolors()
    bars = {b.get_gid(): b.get_facecolor() for b in draw_timeline(run).patches}
    for step, node in zip(REPORT, nodes, strict=True):
        assert tuple(node) == to_rgba(role_colour(step.role)) == bars[step.id]


def test_layers_are_longest_path_depths_and_arrows_point_right():
    assert layers(REPORT) == {"s1": 0, "s2": 0, "s3": 1, "s4": 2}  # s4 waits for s3, which waits for s1
    rng = random.Random(7)
    steps = [
        Step(f"s{i}", "writer", "x", [f"s{j}" for j in range(i) if rng.random() < 0.3]) for i in range(12)
    ]
    plan = Plan(steps)
    pos = layout(plan)
    for s in plan:
        for d in s.depends_on:
            assert pos[d][0] < pos[s.id][0]
    assert len(set(pos.values())) == len(plan)  # no two steps drawn on top of each other


def test_the_critical_path_is_drawn_red_and_follows_the_durations():
    ax = draw_plan(REPORT, durations=step_durations(REPORT, STUB_TEAM))
    assert red_edges(ax, REPORT) == {("s1", "s3"), ("s3", "s4")}
    assert "s1 → s3 → s4, length 6" in ax.get_title()
    slow_coder = {"s1": 1.0, "s2": 9.0, "s3": 1.0, "s4": 1.0}
    ax = draw_plan(REPORT, durations=slow_coder)
    assert red_edges(ax, REPORT) == {("s2", "s4")}
    assert red_edges(draw_plan(REPORT, highlight_critical=False), REPORT) == set()


def test_status_colours_replace_role_colours():
    def broken(step, context):
        raise RuntimeError("offline")

    run = run_plan(REPORT, dict(STUB_TEAM, critic=Agent("critic", broken)))
    assert run.step_status == {"s1": "done", "s2": "done", "s3": "failed", "s4": "skipped"}
    nodes = draw_plan(REPORT, status=run.step_status).collections[0].get_facecolors()
    assert [tuple(c) for c in nodes] == [to_rgba(STATUS_COLOURS[run.step_status[i]]) for i in REPORT.ids]
    with pytest.raises(ValueError, match=r"unknown step status \['exploded'\]"):
        draw_plan(REPORT, status={"s1": "exploded"})


def test_a_one_step_plan_draws():
    ax = draw_plan(Plan([Step("only", "writer", "do it all")]))
    assert "critical path only" in ax.get_title()


def test_timeline_has_one_row_per_worker_and_bars_as_long_as_steps():
    run = run_plan(REPORT, workers=2)
    ax = draw_timeline(run)
    bars = {b.get_gid(): b for b in ax.patches}
    for slot in run.slots:
        assert bars[slot.step_id].get_x() == slot.start
        assert bars[slot.step_id].get_width() == slot.end - slot.start
        assert bars[slot.step_id].get_y() + bars[slot.step_id].get_height() / 2 == slot.worker
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker 0", "worker 1"]
    assert ax.get_xlabel() == "time (virtual s)"


def test_timeline_by_step_from_a_predicted_schedule():
    slots = virtual_schedule(REPORT, step_durations(REPORT, STUB_TEAM), workers=1)
    ax = draw_timeline(slots, plan=REPORT, by="step")
    assert [t.get_text() for t in ax.get_yticklabels()] == REPORT.ids
    assert "makespan 8" in ax.get_title()
    with pytest.raises(ValueError, match=r"by must be one of \('worker', 'step', 'where'\), got 'role'"):
        draw_timeline(slots, by="role")


def test_timeline_by_where_has_one_row_per_process_and_a_retry_elsewhere_on_its_own_row():
    slots = [  # s2's first worker died (nobody reported where); its retry ran on the other process
        Slot("s1", 0, 0.0, 3.0, "node-a:11"),
        Slot("s2", 1, 0.0, 2.0, ""),
        Slot("s2", 1, 2.0, 4.0, "node-b:22"),
        Slot("s3", 0, 3.0, 4.0, "node-a:11"),
    ]
    ax = draw_timeline(slots, plan=REPORT, by="where")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["node-a:11", "where unknown", "node-b:22"]
    rows = [(b.get_gid(), b.get_x(), b.get_y() + b.get_height() / 2) for b in ax.patches]
    assert rows == [("s1", 0.0, 0), ("s2", 0.0, 1), ("s2", 2.0, 2), ("s3", 3.0, 0)]
    assert [t.get_text() for t in ax.texts] == ["s1", "s2", "s2", "s3"]


def test_a_run_on_threads_ran_every_step_in_this_process():
    run = run_plan(REPORT, workers=2)
    here = f"{socket.gethostname()}:{os.getpid()}"
    assert {slot.where for slot in run.slots} == {here}
    ax = draw_timeline(run, by="where")
    assert [t.get_text() for t in ax.get_yticklabels()] == [here]
    assert run.slots == virtual_schedule(REPORT, step_durations(REPORT, STUB_TEAM), 2)  # `where` aside


def test_a_failed_step_is_hatched_on_the_timeline():
    def broken(step, context):
        raise RuntimeError("offline")

    run = run_plan(REPORT, dict(STUB_TEAM, coder=Agent("coder", broken)), workers=2)
    hatches = {b.get_gid(): b.get_hatch() for b in draw_timeline(run).patches}
    assert hatches == {"s1": None, "s2": "//"}


def test_timelines_on_a_shared_axis_keep_room_for_the_longest_run():
    plan = stub_planner("Write a short report on planning agents.")
    one, two = run_plan(plan, STUB_TEAM, workers=1), run_plan(plan, STUB_TEAM, workers=2)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True)
    draw_timeline(one, top)
    draw_timeline(two, bottom)  # the shorter run, drawn second, must not cut the first one off
    assert bottom.get_xlim()[1] >= one.elapsed == 8.0
    fig, ax = plt.subplots()
    draw_timeline(two, ax)  # on its own axis the scale fits its own run
    assert ax.get_xlim()[1] == pytest.approx(two.elapsed * 1.02)
    plt.close("all")


def test_stacked_timelines_on_a_shared_axis_name_it_and_show_the_roles_once():
    plan = stub_planner("Write a short report on planning agents.")
    one, two = run_plan(plan, STUB_TEAM, workers=1), run_plan(plan, STUB_TEAM, workers=2)
    for order in ((0, 1), (1, 0)):  # whichever is drawn first
        fig, axes = plt.subplots(2, 1, sharex=True)
        for i in order:
            draw_timeline((one, two)[i], axes[i])
        top, bottom = axes
        assert (top.get_xlabel(), bottom.get_xlabel()) == ("", "time (virtual s)")
        assert [ax.get_legend() is not None for ax in axes].count(True) == 1
        assert "makespan 8" in top.get_title() and "makespan 6" in bottom.get_title()  # each says its own
    fig, (left, right) = plt.subplots(1, 2)  # side by side, not sharing: each is a whole picture
    draw_timeline(one, left)
    draw_timeline(two, right)
    assert left.get_xlabel() == right.get_xlabel() == "time (virtual s)"
    assert left.get_legend() is not None and right.get_legend() is not None
