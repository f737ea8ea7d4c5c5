"""Hierarchical teams: the tree's shape and bounds, recovery inside a sub-team before escalation,
usage that adds up through every level, and the same tree whatever the worker count."""

import json
import random

import pytest

from agentlab import world
from agentlab.agents import Agent, Work, world_team
from agentlab.budget import Budget
from agentlab.compare import TOPOLOGIES, Setup
from agentlab.faults import Fault
from agentlab.hierarchy import LEAD, LEAD_DESCRIPTION, Hierarchy, ManagerPlanner, Node, rollup
from agentlab.llm import Completion, SimulatedLLM, Usage, usage_report
from agentlab.plan import Plan, Step
from agentlab.planners import PlanningFailed
from agentlab.recovery import Replan, Retry
from agentlab.run import run_plan

WIDE = world.fanout_task(random.Random(1), 8, "total")  # the total population of eight islands
FOUR = world.fanout_task(random.Random(4), 4, "total")


def solve(task=WIDE, **options):
    return Hierarchy(SimulatedLLM(seed=0), tool_seconds=1.0, **options).solve(task.question)


def manager_plan(question, parts=2):
    """The plan a manager writes on the simulator for `question`, allowed `parts` sub-teams."""
    workers = world_team(SimulatedLLM())
    lead = Agent(LEAD, lambda step, context: "", description=LEAD_DESCRIPTION.format(parts=parts))
    team = {LEAD: lead, "analyst": workers["analyst"], "writer": workers["writer"]}
    return ManagerPlanner(SimulatedLLM(), team, parts=parts)(question)


def parts_of(plan):
    return [s.instruction for s in plan if s.role == LEAD]


# --- the shape of the tree ---------------------------------------------------------------------


def test_a_manager_splits_the_task_and_each_sub_team_plans_its_part_for_workers():
    root = solve(FOUR, depth=2, branching=2)
    assert root.answer == FOUR.answer and root.level == 1 and root.path == ""
    assert [s.role for s in root.run.plan] == [LEAD, LEAD, "analyst", "writer"]
    assert FOUR.question == "What is the total area of Solace, Varra, Marrowdeep and Brindle?"
    first, second = root.children
    assert first.task == "What is the total area of Solace and Varra?"
    assert second.task == "What is the total area of Marrowdeep and Brindle?"
    assert (first.path, second.path, first.level) == ("s1", "s2", 2)
    assert {s.role for s in first.run.plan} == {"researcher", "analyst", "writer"}  # workers, no sub-teams
    assert first.children == [] and second.children == []
    expected = float(first.answer) + float(second.answer)
    assert root.run.outputs["s3"] == world.tools.format_number(expected)  # the manager joins the parts


def test_depth_counts_planning_levels_and_branching_bounds_each_teams_parts():
    for depth, teams in ((1, 1), (2, 3), (3, 7)):
        root = solve(depth=depth, branching=2)
        nodes = list(root.walk())
        assert root.answer == WIDE.answer and len(nodes) == teams
        assert max(n.level for n in nodes) == depth
        assert all(len(n.children) <= 2 for n in nodes)
        assert all((n.children == []) == (n.level == depth) for n in nodes)
    root = solve(depth=2, branching=4)
    assert [len(c.task.split(", ")) for c in root.children] == [1, 1, 1, 1]  # 8 items: pairs "A and B"


def test_a_flat_hierarchy_is_the_planner_and_workers_team_call_for_call():
    setup = Setup(SimulatedLLM(seed=0), tool_seconds=1.0)
    flat = TOPOLOGIES["planner+workers"].solve(WIDE, setup)
    flat_team = Hierarchy(SimulatedLLM(seed=0), depth=1, tool_seconds=1.0, manager_model="sim-large")
    root = flat_team.solve(WIDE.question)
    assert [c for _, _, c in root.calls()] == [c for _, _, c in flat.calls]
    assert root.seconds == flat.seconds and root.answer == flat.answer


@pytest.mark.parametrize(
    "question, parts, expected",
    [
        (
            "What is the total crew of Silver Heron, Moth Queen, Tidewalker, Gull Wing and Brine Star?",
            2,
            [
                "What is the total crew of Silver Heron, Moth Queen and Tidewalker?",
                "What is the total crew of Gull Wing and Brine Star?",
            ],
        ),
        (
            "How much greater is the area of Brindle than that of Tamsk?",
            2,
            ["What is the area of Brindle?", "What is the area of Tamsk?"],
        ),
        (  # the groups' winners meet in one more part, so three parts for two groups
            "Which has the highest price: Amberfish, Bluetin, Emberpeat or Saltcod?",
            3,
            [
                "Which has the highest price: Amberfish or Bluetin?",
                "Which has the highest price: Emberpeat or Saltcod?",
                "Which has the highest price: $s1 or $s2?",
            ],
        ),
        ("Which has the highest price: Amberfish, Bluetin, Emberpeat or Saltcod?", 2, None),
        (  # a chain: consecutive segments, the second starting from the first one's answer
            "Who is the leader of the guild of the governor of the origin of Emberpeat?",
            2,
            ["Who is the governor of the origin of Emberpeat?", "Who is the leader of the guild of $s1?"],
        ),
        ("What is the population of Varra?", 3, None),
        ("What is 2140 + 3875?", 3, None),
    ],
)
def test_the_simulated_manager_hands_out_whole_sub_questions(question, parts, expected):
    plan = manager_plan(question, parts)
    assert parts_of(plan) == (expected or [question])  # None: the question does not split
    assert plan.final_step.role == "writer"


def test_a_manager_that_hands_out_too_many_parts_is_asked_again_then_refused():
    class Eager:
        """Always three parts, however few it is allowed."""

        backend = "fake"

        def complete(self, **request):
            steps = [
                {"id": f"s{i}", "role": LEAD, "instruction": "What is 1 + 1?", "depends_on": []}
                for i in (1, 2, 3)
            ]
            text = json.dumps({"steps": steps})
            return Completion(text, "eager", "fake", Usage(10, 5), 1.0, json.loads(text))

    team = {LEAD: Agent(LEAD, lambda step, context: "2")}
    planner = ManagerPlanner(Eager(), team, parts=2)
    with pytest.raises(
        PlanningFailed, match="hands 3 parts to sub-teams .s1, s2, s3.; at most 2 are allowed"
    ):
        planner("What is 1 + 1?")
    assert len(planner.calls) == planner.max_attempts  # asked again, a bounded number of times


def test_bad_shapes_and_options_are_refused_with_the_reason():
    llm = SimulatedLLM()
    with pytest.raises(ValueError, match="depth must be a whole number >= 1, got 0"):
        Hierarchy(llm, depth=0)
    with pytest.raises(ValueError, match="branching must be a whole number >= 1, got '2'"):
        Hierarchy(llm, branching="2")
    with pytest.raises(ValueError, match="give Replan\\(\\) without a planner"):
        Hierarchy(llm, recovery=[Replan(planner=ManagerPlanner(llm, {}))])
    with pytest.raises(TypeError, match="faults maps a team's path"):
        Hierarchy(llm, faults={"s1": ["error"]})
    with pytest.raises(ValueError, match="the task must be a non-empty string"):
        Hierarchy(llm).solve("  ")


# --- recovery: inside the sub-team first, then up ----------------------------------------------


def test_a_sub_team_replans_its_own_part_and_the_manager_never_hears_of_it():
    root = solve(recovery=[Replan()], faults={"s2": [Fault(step="s3")]})  # every attempt at s3 fails
    broken = root.children[1]
    assert root.answer == WIDE.answer and len(root.children) == 2
    assert [e.kind for e in broken.run.trace.of_kind("replanned")] == ["replanned"]
    assert broken.status == "done" and broken.run.failures[0][0] == "s3"
    assert root.run.failures == [] and not root.run.trace.of_kind("replanned")
    replan = [c for step_id, _, c in broken.run.calls if step_id == "replan1"]
    assert len(replan) == 1  # one small plan for one part, not the whole task again


def test_a_sub_team_that_cannot_recover_escalates_and_the_manager_replans_around_it():
    root = solve(recovery=[Replan(max_replans=1)], faults={"s2": [Fault(role="researcher")]})
    assert root.answer == WIDE.answer
    gave_up = root.children[1]
    assert gave_up.path == "s2" and gave_up.status == "failed"
    assert "recovery exhausted: Replan(max_replans=1): 1 of 1 replans used" in gave_up.run.reason
    assert root.run.failures[0][:2] == ("s2", LEAD)
    assert "the sub-team could not finish its part" in root.run.failures[0][2].message
    assert [c.path for c in root.children] == ["s1", "s2", "r1_s1"]  # a fresh sub-team takes the part
    assert root.children[2].status == "done" and root.children[2].run.failures == []
    assert len(root.run.plans) == 2 and root.run.plans[1]["r1_s2"].tool == "calculate"
    assert root.children[0].answer in root.run.plans[1]["r1_s2"].args["expression"]  # finished part kept


def test_a_retried_part_keeps_every_attempt_in_the_tree():
    root = solve(recovery=[Retry(1)], faults={"s1": [Fault(step="s1", times=1)]})
    assert root.answer == WIDE.answer
    tried = root.children[0]
    assert tried.status == "done" and tried.run.trace.of_kind("retried")  # fixed inside, by a retry
    root = solve(recovery=[Retry(1)], faults={"s1": [Fault(role="researcher")]})
    assert [(c.path, c.attempt, c.status) for c in root.children] == [
        ("s1", 1, "failed"),
        ("s2", 1, "done"),  # the children are in the order they started
        ("s1", 2, "failed"),
    ]
    assert root.status == "failed" and "recovery exhausted: Retry(times=1)" in root.run.reason


# --- usage through every level --------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"depth": 3, "branching": 2},
        {"depth": 2, "branching": 3, "manager_model": "sim-large", "lead_model": "sim-small"},
        {
            "depth": 2,
            "recovery": [Retry(1), Replan(max_replans=1)],
            "faults": {"s2": [Fault(role="researcher")]},
        },
        {"depth": 3, "tool_steps": False, "worker_model": "sim-small"},
    ],
)
def test_usage_rolled_up_per_level_role_and_model_equals_the_sum_of_the_parts(options):
    root = solve(**options)
    bill = [c for _, _, c in root.run.calls]  # what the manager's run recorded, sub-teams included
    parts = [c for node in root.walk() for _, _, c in node.own_calls()]
    assert sorted(map(id, parts)) == sorted(map(id, bill))  # every call once: none lost, none twice
    assert len(bill) > len(root.own_calls())  # the sub-teams' calls are in the bill
    r = rollup(root)
    for groups in (r.by_level, r.by_role, r.by_model):
        assert sum(t.calls for t in groups.values()) == r.parts.calls == r.total.calls == len(bill)
        assert sum((t.usage for t in groups.values()), Usage()) == r.parts.usage == r.total.usage
        assert sum(t.cost for t in groups.values()) == pytest.approx(r.total.cost)
    assert r.total.usage == sum((c.usage for c in bill), Usage())
    assert r.by_level["level 1"].calls == len(root.own_calls())
    depth = options["depth"]
    assert list(r.by_level) == [f"level {n}" for n in range(1, depth + 1)]
    assert usage_report(root.calls()).total.usage == r.total.usage


def test_each_call_is_named_by_its_team_and_its_planners_by_rank():
    root = solve(depth=3, branching=2, manager_model="sim-large", lead_model="sim-small")
    calls = root.calls()
    assert calls[0][:2] == ("plan", "manager") and calls[0][2].model == "sim-large"
    assert ("s1/plan", "lead") in {c[:2] for c in calls} and ("s2/s1/plan", "lead") in {c[:2] for c in calls}
    assert {c.model for _, role, c in calls if role == "lead"} == {"sim-small"}
    assert list(rollup(root).by_role) == ["manager", "lead", "writer"]  # lookups and sums are tool steps


def test_the_hierarchical_topology_reports_the_tree_s_calls_and_latency():
    outcome = TOPOLOGIES["hierarchical"].solve(FOUR, Setup(SimulatedLLM(seed=0), tool_seconds=1.0))
    models = {"manager_model": "sim-large", "lead_model": "sim-large", "worker_model": "sim-large"}
    root = Hierarchy(SimulatedLLM(seed=0), tool_seconds=1.0, **models).solve(FOUR.question)
    assert outcome.right and outcome.calls == tuple(root.calls()) and outcome.seconds == root.seconds
    assert len(outcome.calls) == 6  # three teams, each a plan and a report


# --- the same tree whatever the threads do ------------------------------------------------------------


def test_the_tree_its_answers_and_calls_are_the_same_at_any_worker_count():
    options = {"depth": 3, "recovery": [Replan()], "faults": {"s2/s1": [Fault(step="s2")]}}
    one, many, again = (solve(workers=w, **options) for w in (1, 8, 8))
    for other in (many, again):
        assert [n.path for n in other.walk()] == [n.path for n in one.walk()]
        assert [n.answer for n in other.walk()] == [n.answer for n in one.walk()]
        assert other.calls() == one.calls()
    assert str(many) == str(again) and rollup(many) == rollup(again)
    assert one.seconds > many.seconds  # one worker per team runs the parts one after another


# --- the display ------------------------------------------------------------------------------------


def test_the_tree_shows_who_delegated_what_to_whom_and_where_it_failed():
    root = solve(recovery=[Replan(max_replans=1)], faults={"s2": [Fault(role="researcher")]})
    text = str(root)
    lines = text.splitlines()
    assert lines[0].startswith(f"manager: {WIDE.question[:40]}") and f"= {WIDE.answer}" in lines[0]
    assert "replanned 1x" in lines[0]
    assert any(line.startswith("├─ s1 lead, level 2: What is the total population of") for line in lines)
    assert any(line.startswith("│  ├─ s1 researcher: lookup(") for line in lines)
    assert any("x s1 researcher: lookup(" in line and "InjectedFault" in line for line in lines)
    assert any(line.startswith("├─ r1_s1 lead, level 2:") for line in lines)
    page = root._repr_html_()
    assert page.startswith('<ul class="agentlab-tree"')
    assert page.count("<ul") == 1 + 4  # the tree, then one list of steps per team
    assert "s2 lead, level 2: " in page and "&lt;" not in text
    assert "by level" in str(rollup(root)) and "<th>calls</th>" in rollup(root)._repr_html_()


# --- a budget for the whole tree -----------------------------------------------------------------------

GIVING_UP = [Fault(role="researcher", kind="sentinel"), Fault(role="writer", kind="sentinel")]
EVERY_TEAM = {path: GIVING_UP for path in ("", "s1", "s2", "s1/s1", "s1/s2", "s2/s1", "s2/s2")}


def failing_tree(**options):
    """Three levels whose workers pay for their model calls and then give up, with recovery at
    every team: without a cap, 358 calls on the way to failing (422 with 16 workers per team)."""
    recovery = [Retry(1), Replan(max_replans=1)]
    options |= {"depth": 3, "recovery": recovery, "tool_steps": False, "faults": EVERY_TEAM}
    return Hierarchy(SimulatedLLM(seed=0), **options)


def test_a_budget_caps_the_calls_of_the_whole_tree_all_teams_together():
    for cap in (30, 61, 100):
        root = failing_tree(workers=1, budget=Budget(calls=cap)).solve(WIDE.question)
        calls = len(root.calls())
        # one attempt is in flight at a time (one worker per team), and it finishes: a worker's
        # tool loop pays at most max_turns=6 calls, so the tree ends at most 5 calls over its cap
        assert cap <= calls <= cap + 5, (cap, calls)
        assert root.status == "stopped"
        assert root.run.reason == f"budget reached: {calls} model calls (cap {cap}), all teams together"
        r = rollup(root)
        assert r.parts.calls == r.total.calls == calls  # the bill still adds up, part by part
        stopped = [n for n in root.walk() if n.status == "stopped"]
        assert len(stopped) >= 2  # sub-teams stopped too, not just the manager


def test_with_the_budget_spent_no_sub_team_is_formed_and_a_tree_without_one_is_unchanged():
    root = failing_tree(workers=1, budget=Budget(calls=1)).solve(WIDE.question)  # the manager's plan
    assert len(root.calls()) == 1 and root.children == [] and root.status == "stopped"
    plain = solve(depth=2)
    assert solve(depth=2, budget=Budget(calls=10_000)).calls() == plain.calls()
    with pytest.raises(TypeError, match="budget must be a Budget, got int"):
        Hierarchy(SimulatedLLM(), budget=5)


def test_a_step_called_plan_is_not_counted_as_the_teams_planning_time():
    planning = Completion("plan", "sim-large", "test", Usage(1, 1), 2.0)
    work = Completion("work", "sim-large", "test", Usage(1, 1), 5.0)
    agent = Agent("a", lambda step, context: Work("done", 5.0, (work,)))
    run = run_plan(Plan([Step("plan", "a", "go")]), {"a": agent}, "t", planning_calls=[planning])
    assert Node("", 1, "t", run).seconds == 2.0 + 5.0  # its planning, then its run: not 12
