"""The checks of notebook 11's exercises: each passes on the solution notebook's own code, stops with
a verdict on the untouched stub, and catches the plausible mistakes named below (each by the case
that should catch it); the grader's own cases agree."""

from pathlib import Path

import notebook_code
import pytest

from agentlab.course.checks import check
from agentlab.course.forbidden import FORBIDDEN
from agentlab.course.hidden import cases_for

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "11_caching_and_streaming.ipynb"


def solution(name):
    return notebook_code.define(SOLUTION, name)


def caught(capsys, exercise, wrong, *cases):
    """The wrong answer fails its check, with a ✗ line for each of `cases` (the start of its text)."""
    return notebook_code.caught(capsys, exercise, wrong, *(f"✗ {case}" for case in cases))


@pytest.mark.parametrize("exercise", ["11.cache-bill", "11.first-step"])
def test_an_untouched_stub_stops_with_a_verdict(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


@pytest.mark.parametrize("exercise, name", [("11.cache-bill", "bill"), ("11.first-step", "streamed_finish")])
def test_the_solution_passes_its_checks_and_the_graders_cases(exercise, name, capsys):
    answer = solution(name)
    check(exercise, answer)
    assert "checks passed." in capsys.readouterr().out
    graders = [case for cases in cases_for(exercise) for case in cases(answer)]
    assert len(graders) >= 4 and all(case.passed for case in graders)


def test_the_grader_refuses_the_kit_helpers_that_are_the_answer():
    assert "agentlab.llm.usage:cost" in FORBIDDEN["11.cache-bill"]
    assert "agentlab.plan:Plan.critical_path" in FORBIDDEN["11.first-step"]


# --- 11.cache-bill: wrong answers ---------------------------------------------------------------


def priced(rule):
    """A bill from a per-call rule (price, usage, the 1-hour rate) -> dollars, each call on its own."""

    def bill(calls, prices):
        total = 0.0
        for call in calls:
            p, u = prices[call.model], call.usage
            hour = 2 * p.input if p.cache_write_1h is None else p.cache_write_1h
            total += rule(p, u, hour) / 1_000_000
        return total

    return bill


def full(p, u, hour):
    return (
        u.input_tokens * p.input
        + u.output_tokens * p.output
        + u.cache_read_tokens * p.cache_read
        + u.cache_write_tokens * p.cache_write
        + u.cache_write_1h_tokens * hour
    )


def tier(p, u, dollars, tokens=None):
    tokens = u.prompt_tokens if tokens is None else tokens
    return dollars * p.long_factor if p.long_above is not None and tokens > p.long_above else dollars


def test_a_bill_that_charges_reads_as_fresh_input_is_caught(capsys):
    def reads_in_full(p, u, hour):
        return tier(p, u, full(p, u, hour) + u.cache_read_tokens * (p.input - p.cache_read))

    caught(capsys, "11.cache-bill", priced(reads_in_full), "a six-hop ReAct run", "a Haiku call")


def test_a_bill_that_leaves_out_the_one_hour_writes_is_caught(capsys):
    def no_hour(p, u, hour):
        return tier(p, u, full(p, u, hour) - u.cache_write_1h_tokens * hour)

    caught(capsys, "11.cache-bill", priced(no_hour), "the ReAct run cached for an hour")


def test_a_bill_that_prices_one_hour_writes_at_the_five_minute_rate_is_caught(capsys):
    def five_minutes(p, u, hour):
        return tier(p, u, full(p, u, p.cache_write))

    caught(capsys, "11.cache-bill", priced(five_minutes), "the ReAct run cached for an hour")


def test_a_bill_that_always_takes_twice_the_input_rate_for_an_hour_is_caught(capsys):
    def twice_input(p, u, hour):
        return tier(p, u, full(p, u, 2 * p.input))

    failed = caught(capsys, "11.cache-bill", priced(twice_input), "a model whose 1-hour writes")
    assert not any(line.startswith("✗ the ReAct run cached for an hour") for line in failed)


def test_a_bill_that_decides_the_long_tier_by_fresh_input_alone_is_caught(capsys):
    def fresh_only(p, u, hour):
        return tier(p, u, full(p, u, hour), tokens=u.input_tokens)

    caught(capsys, "11.cache-bill", priced(fresh_only), "a Haiku call of 123,000 prompt tokens")


def test_a_bill_that_decides_the_long_tier_on_the_whole_batch_is_caught(capsys):
    def batch_tier(calls, prices):
        dollars = priced(lambda p, u, hour: full(p, u, hour))(calls, prices)
        prompt = sum(c.usage.prompt_tokens for c in calls)
        haiku = prices.get("claude-haiku-5-5")
        long = calls and calls[0].model == "claude-haiku-5-5" and prompt > haiku.long_above
        return dollars * haiku.long_factor if long else dollars

    caught(capsys, "11.cache-bill", batch_tier, "three Haiku calls")


def test_a_bill_that_ignores_the_table_it_is_given_is_caught(capsys):
    from agentlab.llm.usage import PRICES

    def own_table(calls, prices):
        return priced(lambda p, u, hour: tier(p, u, full(p, u, hour)))(calls, {**prices, **PRICES})

    caught(capsys, "11.cache-bill", own_table, "the team's run priced from a table of your own")


def test_a_bill_without_output_tokens_is_caught(capsys):
    def no_output(p, u, hour):
        return tier(p, u, full(p, u, hour) - u.output_tokens * p.output)

    failed = caught(capsys, "11.cache-bill", priced(no_output), "a six-hop ReAct run")
    assert not any(line.startswith("✗ no calls at all") for line in failed)


def test_the_graders_bills_catch_a_five_minute_rate_for_an_hour(capsys):
    wrong = priced(lambda p, u, hour: tier(p, u, full(p, u, p.cache_write)))
    assert not all(case.passed for cases in cases_for("11.cache-bill") for case in cases(wrong))


# --- 11.first-step: wrong answers ---------------------------------------------------------------


def finish(start):
    """A finish from a rule for a step's start: (step, its written time, the ends so far) -> start."""

    def streamed_finish(plan, durations, written):
        end = {}
        for step in plan:
            end[step.id] = start(step, written[step.id], end) + durations[step.id]
        return max(end.values())

    return streamed_finish


def test_a_finish_that_forgets_the_writing_is_caught(capsys):
    critical_path = finish(lambda step, at, end: max((end[d] for d in step.depends_on), default=0.0))
    caught(capsys, "11.first-step", critical_path, "a five-hop chain", "a step that waits for nothing")


def test_a_finish_that_waits_for_the_whole_plan_is_caught(capsys):
    def waiting(plan, durations, written):
        last = max(written.values())
        return finish(lambda step, at, end: max([last, *(end[d] for d in step.depends_on)]))(
            plan, durations, written
        )

    caught(capsys, "11.first-step", waiting, "a five-hop chain", "a fan-out of four lookups")


def test_a_finish_that_starts_each_step_when_written_is_caught(capsys):
    caught(capsys, "11.first-step", finish(lambda step, at, end: at), "a four-hop chain of slow steps")


def test_a_finish_that_adds_the_writing_to_the_inputs_is_caught(capsys):
    added = finish(lambda step, at, end: at + max((end[d] for d in step.depends_on), default=0.0))
    caught(capsys, "11.first-step", added, "a five-hop chain")


def test_a_finish_that_runs_the_steps_one_after_another_is_caught(capsys):
    def in_order(plan, durations, written):
        now = 0.0
        for step in plan:
            now = max(now, written[step.id]) + durations[step.id]
        return now

    caught(capsys, "11.first-step", in_order, "a slow first step, written first")


def test_a_finish_that_is_the_end_of_the_step_written_last_is_caught(capsys):
    def last_written(plan, durations, written):
        end = {}
        for step in plan:
            end[step.id] = max([written[step.id], *(end[d] for d in step.depends_on)]) + durations[step.id]
        return end[plan.steps[-1].id]

    caught(capsys, "11.first-step", last_written, "a slow first step, written first")


def test_a_finish_that_changes_the_dicts_it_is_handed_is_caught(capsys):
    right = solution("streamed_finish")

    def careless(plan, durations, written):
        answer = right(plan, durations, written)
        written.clear()
        return answer

    failed = caught(capsys, "11.first-step", careless, "a five-hop chain")
    assert all("changed the dicts" in line for line in failed)


def test_the_graders_plans_catch_a_finish_that_forgets_the_writing(capsys):
    wrong = finish(lambda step, at, end: max((end[d] for d in step.depends_on), default=0.0))
    assert not all(case.passed for cases in cases_for("11.first-step") for case in cases(wrong))


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


def test_hidden_case_catches_the_long_prompt_tier_at_exactly_the_threshold():
    import graded

    wrong = graded.changed("11", "bill", ("prompt > p.long_above", "prompt >= p.long_above"))
    assert graded.hidden_failures("11.cache-bill", wrong) == ["a prompt of exactly the long-prompt threshold"]
    assert graded.graded("11.cache-bill", wrong).status == "failed"
