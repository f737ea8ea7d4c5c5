"""Routing: the difficulty signal, the simulator's weak model slipping more on harder requests,
the RouteLLM reference counts, random and perfect routers, and a router that really routes."""

import math
import random

import pytest

from agentlab import prompts, world
from agentlab.compare import Outcome, Setup, compare
from agentlab.llm import SimulatedLLM, usage_report
from agentlab.llm.simulated import PROFILES, TYPICAL_STEPS
from agentlab.routing import (
    ROUTELLM_GSM8K,
    PairCounts,
    RoutedLLM,
    at_random,
    by_difficulty,
    by_size,
    perfect_router,
    random_router,
    route,
    route_point,
    split,
    stage_errors,
)
from agentlab.trace import Event, Run, Trace


def test_steps_needed_counts_lookups_and_the_join():
    assert world.steps_needed("What is the population of Varra?") == 1
    assert world.steps_needed("What is the age of the governor of the home island of Jory Pike?") == 3
    assert world.steps_needed("What is the total crew of Silver Heron, Moth Queen and Tidewalker?") == 4
    assert world.steps_needed("How much greater is the area of Brindle than that of Tamsk?") == 3
    assert world.steps_needed("What is 2140 + 3875?") == 1


def test_values_already_known_and_results_to_report_need_no_lookup():
    assert (
        world.steps_needed("Which has the highest price: Amberfish (3), Bluetin (5) or Emberpeat (2)?") == 1
    )
    report = f"Report the answer: What is the age of Varra? {world.RESULT_TO_REPORT} 41."
    assert world.steps_needed(report) == 0
    assert world.steps_needed("Say hello to the class.") == 0


def test_the_small_model_slips_more_the_more_steps_a_request_needs():
    small, large = PROFILES["sim-small"], PROFILES["sim-large"]
    assert [large.errs_times(s) for s in (0, 1, 3, 6)] == [1.0, 1.0, 1.0, 1.0]
    assert [small.errs_times(s) for s in (0, 1, TYPICAL_STEPS, 6)] == [1.0, 1.0, 3.0, 6.0]


def test_on_one_step_requests_both_models_slip_equally_often_and_on_long_ones_the_small_far_more():
    def slips(model, questions):
        llm = SimulatedLLM(seed=3, error_rate=0.1, model=model)
        tools = [world.TOOLS["lookup"], world.TOOLS["calculate"]]
        for q in questions:
            llm.complete(system="Answer.", messages=[{"role": "user", "content": q}], tools=tools)
        return len(llm.injected)

    rng = random.Random(0)
    easy = [world.single_task(rng).question for _ in range(400)]
    hard = [world.chain_task(rng, 6).question for _ in range(400)]
    margin = 3 * math.sqrt(0.1 * 0.9 * 400)
    assert abs(slips("sim-small", easy) - slips("sim-large", easy)) < 2 * margin
    assert slips("sim-small", hard) > 4 * slips("sim-large", hard)


# --- what a router could achieve: RouteLLM's published counts ---------------------------------------


def test_the_routellm_gsm8k_counts_reproduce_the_published_accuracies():
    counts = ROUTELLM_GSM8K
    assert counts.total == 1319
    assert round(100 * counts.weak_accuracy, 1) == 63.8
    assert round(100 * counts.strong_accuracy, 1) == 85.7
    assert round(100 * counts.perfect_accuracy, 1) == 92.9


def test_a_random_router_draws_a_straight_line_between_the_two_models():
    counts = ROUTELLM_GSM8K
    assert random_router(counts, 0) == counts.weak_accuracy
    assert random_router(counts, 1) == counts.strong_accuracy
    middle = (counts.weak_accuracy + counts.strong_accuracy) / 2
    assert random_router(counts, 0.5) == pytest.approx(middle)


def test_a_perfect_router_spends_strong_calls_only_where_they_turn_wrong_into_right():
    counts = ROUTELLM_GSM8K
    assert perfect_router(counts, 0) == pytest.approx(counts.weak_accuracy)
    assert perfect_router(counts, 1) == pytest.approx(counts.strong_accuracy)  # forced to lose the only-weak
    enough = counts.only_strong / counts.total  # 29% of the queries
    assert perfect_router(counts, enough) == pytest.approx(counts.perfect_accuracy)
    assert perfect_router(counts, 0.5) == pytest.approx(counts.perfect_accuracy)
    matches_strong = counts.strong_accuracy - counts.weak_accuracy  # each strong call fixes one query
    assert perfect_router(counts, matches_strong) == pytest.approx(counts.strong_accuracy)
    assert round(100 * matches_strong, 1) == 21.8
    for share in [i / 20 for i in range(21)]:
        assert perfect_router(counts, share) >= random_router(counts, share) - 1e-12


def test_counts_come_from_per_query_results_and_bad_input_is_refused():
    assert PairCounts.from_results([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == PairCounts(2, 1, 1, 1)
    with pytest.raises(ValueError, match="one result per query for each model: got 2 weak, 1 strong"):
        PairCounts.from_results([True, False], [True])
    with pytest.raises(ValueError, match="only_weak must be a count"):
        PairCounts(1, 2, -3, 4)
    with pytest.raises(ValueError, match="needs at least one query"):
        PairCounts(0, 0, 0, 0)
    with pytest.raises(ValueError, match=r"share must be a fraction of the queries in \[0, 1\], got 1.5"):
        random_router(ROUTELLM_GSM8K, 1.5)


# --- routing requests ---------------------------------------------------------------------------------


def test_a_routed_llm_sends_every_call_of_a_task_to_the_model_its_difficulty_picks():
    rng = random.Random(1)
    easy, hard = world.single_task(rng, "e"), world.chain_task(rng, 4, "h")
    llm = RoutedLLM(SimulatedLLM(), by_difficulty(3))
    outcomes = route([easy, hard], Setup(SimulatedLLM()), {"by steps": by_difficulty(3)})["by steps"]
    assert {c.model for _, _, c in outcomes[0].calls} == {"sim-small"}
    assert {c.model for _, _, c in outcomes[1].calls} == {"sim-large"}
    reply = llm.complete(system="s", messages=[{"role": "user", "content": easy.question}], model="sim-large")
    assert reply.model == "sim-small" and llm.sent == {"sim-small": 1}  # the router overrules the caller


def test_a_random_router_is_a_fair_coin_per_goal_and_the_same_goal_lands_on_the_same_model():
    choose = at_random(0.3, seed=4)
    goals = [t.question for t in world.make_tasks(400, seed=8)]
    strong = sum(choose(g) == "sim-large" for g in goals)
    assert abs(strong / len(goals) - 0.3) < 3 * math.sqrt(0.3 * 0.7 / len(goals))
    assert all(choose(g) == choose(g) for g in goals[:20])


@pytest.fixture(scope="module")
def routed():
    tasks = world.make_tasks(150, seed=2)
    setup = Setup(SimulatedLLM(seed=0, error_rate=0.05))
    routers = {"weak": by_difficulty(math.inf), "steps >= 4": by_difficulty(4), "strong": by_difficulty(0)}
    return tasks, route(tasks, setup, routers)


def test_routing_a_task_to_a_model_gives_what_that_model_alone_gives(routed):
    tasks, runs = routed
    for task, mixed, weak, strong in zip(
        tasks, runs["steps >= 4"], runs["weak"], runs["strong"], strict=True
    ):
        alone = strong if world.steps_needed(task.question) >= 4 else weak
        assert mixed.answer == alone.answer and mixed.calls == alone.calls


def test_routing_by_difficulty_beats_a_coin_at_the_same_share_of_strong_calls(routed):
    tasks, runs = routed
    counts = PairCounts.from_results([o.right for o in runs["weak"]], [o.right for o in runs["strong"]])
    point = route_point("steps >= 4", runs["steps >= 4"])
    assert 0 < point.task_share < 1 and point.call_share > point.task_share  # hard tasks take more calls
    assert point.accuracy > random_router(counts, point.task_share) + 0.02
    assert point.accuracy <= perfect_router(counts, point.task_share)
    weak, strong = route_point("weak", runs["weak"]), route_point("strong", runs["strong"])
    assert weak.cost < point.cost < strong.cost
    assert (weak.task_share, strong.task_share, strong.call_share) == (0, 1, 1)


def test_a_strong_planner_with_cheap_executors_costs_less_than_strong_everywhere():
    tasks = world.make_tasks(10, seed=4)
    llm = SimulatedLLM()
    strong = compare(tasks, Setup(llm, tool_steps=False), ["planner+workers"])["planner+workers"]
    mixed_setup = Setup(llm, executor_model="sim-small", tool_steps=False)
    mixed = compare(tasks, mixed_setup, ["planner+workers"])
    by_model = usage_report([c for o in mixed.outcomes["planner+workers"] for c in o.calls]).by_model
    assert by_model["sim-large"].calls == len(tasks)  # one plan per task
    assert mixed["planner+workers"].cost < 0.6 * strong.cost
    assert mixed["planner+workers"].accuracy == strong.accuracy == 1.0


# --- routing tasks between topologies: the migration case ------------------------------------------

MIGRATIONS = [world.single_task(random.Random(i), f"s{i}") for i in range(6)]
MIGRATIONS += [world.chain_task(random.Random(i), 6, f"c{i}") for i in range(3)]
MIGRATIONS += [world.fanout_task(random.Random(i), 6, "total", f"f{i}") for i in range(3)]


def traced(task, *events):
    """An outcome whose run's trace holds `events`: (kind, step id, role, detail)."""
    trace = Trace([Event(0.0, kind, step_id, role, (), detail) for kind, step_id, role, detail in events])
    return Outcome(task, None, (), 0.0, run=Run(task.question, None, trace=trace))


AGE = world.Task(
    "t1",
    "chain",
    "What is the age of the governor of Varra?",
    world.gold_answer("What is the age of the governor of Varra?"),
    2,
)
GOVERNOR = world.lookup("Varra", "governor")
OTHER = next(n for n, e in world.ENTITIES.items() if e.kind == "person" and n != GOVERNOR)
PLAN = [
    ("planned", "s1", "researcher", "Who is the governor of Varra?"),
    ("planned", "s2", "researcher", "What is the age of $s1?"),
    ("planned", "s3", "writer", prompts.report_instruction(AGE.question, "$s2")),
]


def test_stage_errors_charge_a_mistake_to_the_step_that_made_it_not_to_those_after():
    wrong_first = traced(
        AGE,
        *PLAN,
        ("finished", "s1", "researcher", OTHER),  # the wrong governor
        ("finished", "s2", "researcher", world.lookup(OTHER, "age")),  # right, for the question it was asked
        ("finished", "s3", "writer", world.lookup(OTHER, "age")),
    )
    stages = stage_errors([wrong_first])
    assert {name: (s.ran, s.wrong) for name, s in stages.items()} == {
        "planner": (1, 0),
        "researcher": (2, 1),
        "writer": (1, 0),
    }
    assert stages["researcher"].rate == 0.5


def test_a_plan_that_stops_early_is_the_planners_error_and_a_failed_step_its_roles():
    early = traced(AGE, *PLAN[:1], ("finished", "s1", "researcher", GOVERNOR))  # answers the governor
    failed = traced(
        AGE, *PLAN, ("finished", "s1", "researcher", GOVERNOR), ("failed", "s2", "researcher", "x")
    )
    unreadable = traced(  # a step asked about something the records do not hold is not judged
        AGE, *PLAN, ("finished", "s1", "researcher", "Nobody"), ("finished", "s2", "researcher", "40")
    )
    stages = stage_errors([early, failed, unreadable])
    assert (stages["planner"].ran, stages["planner"].wrong) == (3, 1)
    assert (stages["researcher"].ran, stages["researcher"].wrong) == (4, 2)  # the failed s2, the wrong s1


def test_stage_errors_on_real_runs_are_nothing_without_errors_and_need_a_trace():
    tasks = world.make_tasks(10, seed=1)
    clean = compare(tasks, Setup(SimulatedLLM(), tool_steps=False), ["planner+workers"])
    stages = stage_errors(clean.outcomes["planner+workers"])
    assert stages["planner"].ran == 10 and all(s.wrong == 0 for s in stages.values())
    assert sum(s.ran for s in stages.values()) == 10 + sum(
        len(o.run.outputs) for o in clean.outcomes["planner+workers"]
    )
    with pytest.raises(ValueError, match="stage errors need a planned team's runs; t01 has no trace"):
        stage_errors(compare(tasks[:1], Setup(SimulatedLLM()), ["react"]).outcomes["react"])


def test_routing_by_size_sends_small_tasks_to_one_agent_and_large_ones_to_the_team():
    tasks = [world.single_task(random.Random(1)), world.chain_task(random.Random(2), 5)]
    setup = Setup(
        SimulatedLLM(seed=0, error_rate=0.1, model="sim-small"),
        agent_model="sim-small",
        planner_model="sim-small",
        executor_model="sim-small",
        tool_steps=False,
    )
    hybrid = by_size(3)
    assert hybrid.name == "by size >= 3" and "react below 3 steps" in hybrid.summary
    both = compare(tasks, setup, ["react", "planner+workers", hybrid])
    mixed = both.outcomes["by size >= 3"]
    assert mixed[0].calls == both.outcomes["react"][0].calls  # 1 step: one agent
    assert mixed[1].calls == both.outcomes["planner+workers"][1].calls  # 5 steps: the team
    assert split(both, 3) == mixed  # replayed from the two topologies' outcomes, no new runs
    assert split(both, 1) == both.outcomes["planner+workers"] and split(both, 6) == both.outcomes["react"]
    with pytest.raises(ValueError, match="unknown topology 'team'"):
        by_size(3, above="team")
