"""The architecture figures: each graph has the boxes and arrows the lesson describes, and draws
them all (a box per node, an arrow per edge)."""

import itertools
import random

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentlab import diagrams, world  # noqa: E402
from agentlab.faults import Fault  # noqa: E402
from agentlab.hierarchy import Hierarchy  # noqa: E402
from agentlab.llm import SimulatedLLM  # noqa: E402
from agentlab.recovery import Replan  # noqa: E402


def edges(graph):
    return set(graph.edges())


def test_the_flat_pattern_fans_out_from_the_planner_and_back_into_the_synthesizer():
    g = diagrams.pattern(executors=3)
    workers = {f"executor{i}" for i in (1, 2, 3)}
    assert set(g.successors("planner")) == workers
    assert set(g.predecessors("synthesizer")) == workers
    assert ("task", "planner") in edges(g) and ("synthesizer", "answer") in edges(g)
    assert len(diagrams.pattern(executors=5).nodes) == len(g.nodes) + 2


def test_the_hierarchical_pattern_has_a_manager_over_leads_each_with_workers_and_a_synthesizer():
    g = diagrams.pattern(hierarchical=True)
    assert set(g.successors("manager")) == {"lead_a", "lead_b"}
    for team in "ab":
        assert set(g.successors(f"lead_{team}")) == {f"worker_{team}1", f"worker_{team}2"}
        assert set(g.predecessors(f"synth_{team}")) == {f"worker_{team}1", f"worker_{team}2"}
        assert (f"synth_{team}", "synthesizer") in edges(g)


def test_the_planner_loop_re_asks_the_model_only_on_an_invalid_plan():
    g = diagrams.planner_loop()
    assert (
        ("validate", "plan") in edges(g)
        and ("validate", "reask") in edges(g)
        and ("reask", "model") in edges(g)
    )
    assert (
        g.edges["validate", "plan"]["label"] == "valid" and g.edges["validate", "reask"]["label"] == "invalid"
    )
    assert ("task", "prompt") in edges(g) and ("prompt", "model") in edges(g)


def test_the_recovery_loop_sends_a_failure_to_retry_reroute_or_replan_and_back():
    g = diagrams.recovery_loop()
    assert set(g.successors("monitor")) == {"next", "retry", "reroute", "replan"}
    assert (
        ("retry", "step") in edges(g) and ("reroute", "step") in edges(g) and ("replan", "plan") in edges(g)
    )


def test_in_control_and_data_flow_nothing_from_the_tools_reaches_the_planner():
    g = diagrams.control_and_data()
    assert {p for p in g.predecessors("planner")} == {"task"}
    assert ("tools", "executor") in edges(g) and not any(
        b in ("planner", "plan") for a, b in edges(g) if a == "tools"
    )


def test_a_hierarchy_tree_has_a_box_per_team_and_a_leaf_per_worker_step():
    task = world.fanout_task(random.Random(1), 8, "total")
    root = Hierarchy(SimulatedLLM(seed=0), depth=3, branching=2).solve(task.question)
    g = diagrams.hierarchy_tree(root)
    teams = list(root.walk())
    assert {n for n in g.nodes if g.nodes[n]["kind"] == "planner"} == {t.path or "manager" for t in teams}
    assert all(len(t.run.plans) == 1 for t in teams)  # no replans here: one plan a team
    leaves = [n for n in g.nodes if g.out_degree(n) == 0]
    steps = sum(len(t.run.plan) for t in teams) - (len(teams) - 1)  # a sub-team's step is the team itself
    assert len(leaves) == steps
    assert set(g.successors("manager")) >= {"s1", "s2"}


def test_a_failed_team_and_its_failed_steps_are_drawn_red():
    task = world.fanout_task(random.Random(1), 8, "total")
    broken = Hierarchy(
        SimulatedLLM(seed=0),
        recovery=[Replan(max_replans=1)],
        faults={"s2": [Fault(role="researcher")]},
        tool_seconds=1.0,
    ).solve(task.question)
    g = diagrams.hierarchy_tree(broken)
    failed = {n for n in g.nodes if g.nodes[n]["kind"] == "failed"}
    assert "s2" in failed and all(n.startswith("s2") for n in failed)  # the team, and its failed lookups


@pytest.mark.parametrize(
    "make",
    [
        diagrams.pattern,
        lambda: diagrams.pattern(hierarchical=True),
        diagrams.planner_loop,
        diagrams.recovery_loop,
        diagrams.control_and_data,
        diagrams.prompt_cache,
        diagrams.capstone,
    ],
)
def test_draw_puts_every_box_and_arrow_on_the_axes(make):
    g = make()
    ax = diagrams.draw(g, title="t")
    labels = {t.get_text() for t in ax.texts}
    assert {g.nodes[n]["label"] for n in g.nodes} <= labels
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == g.number_of_edges()
    plt.close("all")


def test_the_prompt_cache_sends_the_prompt_in_the_apis_order_reads_the_prefix_and_writes_the_newest_turn():
    g = diagrams.prompt_cache()
    order = ["tools", "system", "history", "newest", "model"]
    assert all((a, b) in edges(g) for a, b in itertools.pairwise(order))
    kinds = {n: g.nodes[n]["kind"] for n in g.nodes}
    assert [kinds[n] for n in order[:3]] == ["cache_read"] * 3 and kinds["newest"] == "cache_write"
    assert kinds["short"] == "input" and g.graph["legend"]  # the colours are the prices: a legend says so
    assert ("newest", "next") in edges(g) and kinds["next"] == "cache_read"
