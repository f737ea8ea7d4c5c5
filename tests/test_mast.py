"""MAST: the kit's failures sorted into the paper's three categories, and measured over a batch."""

from dataclasses import replace

import pytest

from agentlab import Plan, orchestrate, run_plan, world
from agentlab.agents import world_team
from agentlab.faults import Fault
from agentlab.llm import SimulatedLLM
from agentlab.llm.simulated import InjectedError
from agentlab.mast import CATEGORIES, PAPER, classify, table, tally
from agentlab.planners import LLMPlanner
from agentlab.recovery import Replan, Retry

CLEAN = SimulatedLLM(seed=0)
TEAM = world_team(CLEAN)
CHAIN = world.sample_tasks()[1]  # three hops, then a report


def plan_for(task):
    return LLMPlanner(CLEAN, TEAM)(task.question)


def test_the_papers_shares_are_the_neurips_versions_and_add_up_to_one():
    assert PAPER == {"specification": 0.442, "misalignment": 0.323, "verification": 0.235}
    assert sum(PAPER.values()) == pytest.approx(1.0)
    assert list(CATEGORIES) == list(PAPER)


def test_a_clean_run_that_answers_right_has_no_failures():
    run = run_plan(plan_for(CHAIN), TEAM, CHAIN.question)
    assert run.deliverable == CHAIN.answer and classify(run, CHAIN) == []


def test_a_retry_that_repeats_a_call_that_cannot_work_is_step_repetition():
    plan = plan_for(CHAIN)
    misspelt = Plan([replace(s, args={**s.args, "entity": "Kellowey"}) if s.id == "s1" else s for s in plan])
    run = run_plan(misspelt, TEAM, CHAIN.question, recovery=[Retry(2)])
    [finding] = classify(run, CHAIN)
    assert (finding.category, finding.mode) == ("specification", "FM-1.3 step repetition")
    assert finding.evidence.startswith("3 times: ") and "Kellowey" in finding.evidence


def test_a_failure_the_world_caused_is_not_an_agents_and_is_left_out():
    plan = plan_for(CHAIN)
    run = run_plan(plan, TEAM, CHAIN.question, recovery=[Retry(3)], faults=[Fault(step="s2")])
    assert run.status == "failed" and len(run.failures) == 4
    assert classify(run, CHAIN) == []


def test_a_wrong_answer_delivered_as_done_is_a_verification_failure():
    plan = plan_for(CHAIN)
    run = run_plan(plan, TEAM, CHAIN.question, faults=[Fault(step="s3", kind="wrong")])
    assert run.status == "done" and not CHAIN.check(run.deliverable)
    [finding] = classify(run, CHAIN)
    assert (finding.category, finding.mode) == ("verification", "FM-3.2 no or incomplete verification")
    assert repr(run.deliverable) in finding.evidence and CHAIN.answer in finding.evidence
    assert classify(run) == []  # without the task there is no telling right from wrong


@pytest.mark.parametrize(
    ("kind", "category"),
    [
        ("malformed_json", "specification"),
        ("wrong_tool_argument", "specification"),
        ("dropped_dependency", "misalignment"),
        ("finished_too_early", "verification"),
    ],
)
def test_each_kind_of_planning_mistake_lands_in_its_category(kind, category):
    llm = SimulatedLLM(seed=1, error_rate=1.0, error_kinds=[kind])
    run = orchestrate(CHAIN.question, LLMPlanner(llm, TEAM), TEAM)
    findings = classify(run, CHAIN, llm.injected)
    assert llm.injected and {f.category for f in findings[: len(llm.injected)]} == {category}


def test_an_agents_mistakes_are_misalignment_and_stopping_early_is_verification():
    made = {
        "wrong_tool_argument": InjectedError("sim-small", "turn", "wrong_tool_argument", "called lookup ..."),
        "hallucinated_answer": InjectedError("sim-small", "turn", "hallucinated_answer", "answered '12'"),
        "finished_too_early": InjectedError("sim-small", "turn", "finished_too_early", "answered early"),
        "followed_injection": InjectedError("sim-small", "replan", "followed_injection", "a note asked"),
    }
    run = run_plan(plan_for(CHAIN), TEAM, CHAIN.question)
    found = {kind: classify(run, CHAIN, [m])[0] for kind, m in made.items()}
    assert found["wrong_tool_argument"].mode == "FM-2.6 reasoning-action mismatch"
    assert found["hallucinated_answer"].category == "misalignment"
    assert found["finished_too_early"].mode == "FM-3.1 premature termination"
    assert found["followed_injection"].mode == "FM-2.3 task derailment"


def test_a_mistake_of_a_kind_it_does_not_know_is_refused_with_its_name():
    run = run_plan(plan_for(CHAIN), TEAM, CHAIN.question)
    with pytest.raises(ValueError, match="no MAST mode for a 'typo' mistake in a plan"):
        classify(run, CHAIN, [InjectedError("sim-large", "plan", "typo", "")])


def test_a_batch_gives_each_run_its_own_mistakes_and_shares_that_add_up():
    tasks = world.make_tasks(30, seed=4)
    llm = SimulatedLLM(seed=0, error_rate=0.3)
    team = world_team(llm)
    planner = LLMPlanner(llm, team)
    batch = tally(tasks, lambda t: orchestrate(t.question, planner, team, recovery=[Retry(1), Replan()]), llm)
    read_off_the_run = ("FM-1.3 step repetition", "FM-3.2 no or incomplete verification")
    mistakes = [f for f in batch.findings if f.mode not in read_off_the_run]
    assert len(mistakes) == len(llm.injected) > 0
    assert sum(batch.shares().values()) == pytest.approx(1.0)
    assert sum(batch.counts().values()) == len(batch.findings) == sum(batch.modes().values())
    unchecked = batch.modes()["FM-3.2 no or incomplete verification"]
    assert 0 < unchecked <= batch.wrong <= batch.tasks == 30
    text = table({"kit": batch})
    assert "44.2%" in text and "32.3%" in text and "23.5%" in text and "41-86.7%" in text


def test_an_empty_batch_has_no_shares_to_divide():
    batch = tally([], lambda t: None, CLEAN)
    assert batch.shares() == dict.fromkeys(CATEGORIES, 0.0) and batch.wrong == 0
