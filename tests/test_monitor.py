"""Detecting failure: each of the four ways a step attempt fails, and critics that can (or cannot)
tell a wrong answer from a right one."""

import time
from types import SimpleNamespace

import pytest

from agentlab import world
from agentlab.agents import Agent, StepFailed, Work, world_team
from agentlab.faults import Fault
from agentlab.llm.base import Completion, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.monitor import (
    Failure,
    agreeable_critic,
    audit,
    code_critic,
    expected_output,
    for_steps,
    inspect,
    is_sentinel,
    recompute_critic,
    run_python,
)
from agentlab.plan import Plan, Step
from agentlab.run import run_plan


def call(text="ok", tokens=10):
    return Completion(text, "sim-large", "test", Usage(tokens, 5), 0.5)


def one_step(act, seconds=1.0):
    return Plan([Step("s1", "w", "do it")]), {"w": Agent("w", act, seconds=seconds)}


def failure_of(run):
    assert run.status == "failed"
    (_, _, failure), *_ = run.failures
    return failure


# --- the four kinds -------------------------------------------------------------------------------


def test_an_agent_that_raises_is_an_error_failure_and_keeps_the_calls_it_made():
    def gives_up(step, context):
        raise StepFailed("stopped by max_turns=2", [call(), call()], seconds=3.0)

    run = run_plan(*one_step(gives_up))
    assert failure_of(run) == Failure("error", "StepFailed: stopped by max_turns=2")
    assert run.reason == "step 's1' (w) failed: StepFailed: stopped by max_turns=2"
    assert len(run.calls) == 2 and run.elapsed == 3.0  # failed work is counted, in usage and in time


def test_a_step_over_the_timeout_fails_at_the_limit_on_the_virtual_clock():
    run = run_plan(*one_step(lambda step, context: Work("late", seconds=12.0, calls=(call(),))), timeout=5.0)
    assert failure_of(run) == Failure("timeout", "no result within the 5 s limit")
    assert run.elapsed == 5.0 and run.outputs == {}  # cut off at the limit; its late output is not used
    assert len(run.calls) == 1  # the tokens were spent all the same
    assert run_plan(*one_step(lambda step, context: Work("quick", seconds=4.0)), timeout=5.0).status == "done"


def test_a_step_over_the_timeout_fails_on_the_real_clock_without_waiting_for_it():
    def stuck(step, context):
        time.sleep(0.6)
        return "too late"

    began = time.perf_counter()
    run = run_plan(*one_step(stuck), clock="real", timeout=0.05)
    assert time.perf_counter() - began < 0.5  # the run moved on; the thread finishes on its own
    assert failure_of(run).kind == "timeout" and run.outputs == {}


@pytest.mark.parametrize("answer", ["FAILED: the archive is closed", "  FAILED", "", "   "])
def test_an_answer_that_says_it_failed_is_a_sentinel_failure(answer):
    run = run_plan(*one_step(lambda step, context: answer))
    assert failure_of(run).kind == "sentinel"
    assert is_sentinel(answer) and not is_sentinel("Failed harvests: 3")  # only the marker, in capitals


def test_a_validator_for_one_step_rejects_its_output_and_no_other():
    def numeric(step, output, context):
        return None if output.isdigit() else "expected a number"

    plan = Plan([Step("a", "w", "name"), Step("b", "w", "count", ["a"])])
    team = {"w": Agent("w", lambda step, context: "Varra" if step.id == "a" else "12 ships")}
    run = run_plan(plan, team, checks=[for_steps(numeric, "b")])
    assert run.outputs == {"a": "Varra"}
    assert failure_of(run) == Failure("check", "numeric[b] rejected '12 ships': expected a number")


def test_a_check_that_crashes_rejects_rather_than_waves_through():
    def broken(step, output, context):
        raise KeyError("oops")

    failure = inspect(Step("s1", "w", "x"), "42", {}, (broken,))
    assert failure == Failure("check", "broken could not check it: KeyError: 'oops'")


def test_failure_kinds_are_checked():
    with pytest.raises(ValueError, match="unknown failure kind 'oops'"):
        Failure("oops", "")


# --- critics ------------------------------------------------------------------------------------------


def lookup(step_id, entity, attribute):
    args = {"entity": entity, "attribute": attribute}
    return Step(step_id, "researcher", f"What is the {attribute} of {entity}?", (), "lookup", args)


def world_plan():
    """Two lookups and a sum as direct tool steps, then a writer: Varra's and Brindle's population."""
    add = Step("s3", "analyst", "What is $s1 + $s2?", ("s1", "s2"), "calculate", {"expression": "$s1 + $s2"})
    report = Step("s4", "writer", f"Report the total population. {world.RESULT_TO_REPORT} $s3.", ("s3",))
    return Plan([lookup("s1", "Varra", "population"), lookup("s2", "Brindle", "population"), add, report])


def test_the_agreeable_critic_passes_a_wrong_sum_and_the_recomputing_critic_catches_it():
    team = world_team(SimulatedLLM())
    gold = world.gold_answer("What is the total population of Varra and Brindle?")
    wrong_sum = [Fault(step="s3", kind="wrong")]
    fooled = run_plan(world_plan(), team, checks=[agreeable_critic], faults=wrong_sum)
    assert fooled.status == "done" and fooled.deliverable != gold  # approved, and wrong
    caught = run_plan(world_plan(), team, checks=[recompute_critic], faults=wrong_sum)
    failure = failure_of(caught)
    assert failure.kind == "check" and "recompute critic rejected" in failure.message
    assert f"re-running the tools on its inputs gives {gold!r}" in failure.message
    assert run_plan(world_plan(), team, checks=[recompute_critic]).deliverable == gold  # right work passes


def test_the_recomputing_critic_catches_a_writer_reporting_the_wrong_result():
    team = world_team(SimulatedLLM())
    run = run_plan(world_plan(), team, checks=[recompute_critic], faults=[Fault(step="s4", kind="wrong")])
    assert run.failures[0][0] == "s4" and "gives" in run.failures[0][2].message


def test_the_recomputing_critic_abstains_on_steps_it_cannot_rederive():
    assert recompute_critic(Step("s1", "writer", "Write a haiku."), "anything at all", {}) is None


ADD = "def add(a, b):\n    return a + b\n"
TESTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0"


def test_the_code_critic_runs_the_code_and_its_tests_in_a_subprocess():
    critic = code_critic(TESTS, timeout=5.0)
    step = Step("s1", "coder", "Write add(a, b).")
    assert critic(step, f"Here it is:\n```python\n{ADD}```", {}) is None
    wrong = critic(step, ADD.replace("a + b", "a - b"), {})
    assert wrong.startswith("running it with the tests: AssertionError")
    broken = critic(step, "def add(a, b) return a + b", {})
    assert "SyntaxError" in broken
    assert (
        agreeable_critic(step, "def add(a, b) return a + b", {}) is None
    )  # it approves what does not compile


def test_code_that_never_ends_is_stopped_by_the_timeout():
    began = time.perf_counter()
    verdict = code_critic("assert True", timeout=0.5)(Step("s1", "coder", "x"), "while True:\n    pass", {})
    assert verdict == "running it with the tests: still running after 0.5 s, so it was stopped"
    assert time.perf_counter() - began < 3.0


def test_run_python_reports_what_the_code_printed():
    assert run_python("print(6 * 7)").output == "42"
    assert not run_python("import sys; sys.exit(3)").ok


# --- what a step should have output, and auditing a run ---------------------------------------------


def test_expected_output_reads_a_step_the_way_the_records_answer_it():
    question = Step("s2", "researcher", "What is the age of $s1?", ("s1",))
    assert expected_output(question, {"s1": "Wren Tally"}) == "33"
    report = Step("s3", "writer", f"Report the answer: What is ...? {world.RESULT_TO_REPORT} $s2.", ("s2",))
    assert expected_output(report, {"s2": "33"}) == "33"
    tool = Step("s1", "analyst", "Add them up.", tool="calculate", args={"expression": "$s1 + 1"})
    assert expected_output(tool, {"s1": "41"}) == "42"
    assert expected_output(Step("s1", "writer", "Write a poem."), {}) is None


def test_audit_names_each_step_whose_output_its_inputs_contradict():
    plan = Plan(
        [
            Step("s1", "researcher", "What is the mentor of Wren Tally?"),
            Step("s2", "researcher", "What is the age of $s1?", ("s1",)),
            Step("s3", "writer", f"Report it. {world.RESULT_TO_REPORT} $s2.", ("s2",)),
        ]
    )
    right = SimpleNamespace(plan=plan, outputs={"s1": "Petra Quist", "s2": "49", "s3": "49"})
    assert audit(right) == []
    wrong = SimpleNamespace(plan=plan, outputs={"s1": "Petra Quist", "s2": "49", "s3": "52"})
    assert audit(wrong) == [("s3", "49", "52")]
