"""The checks of notebook 07's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

from pathlib import Path

import notebook_code
import numpy as np
import pytest

from agentlab.course.checks import CheckFailed, check
from agentlab.course.checks.nb07 import _pick_cases
from agentlab.course.grading import verdict
from agentlab.evidence import paired_accuracy
from agentlab.experiments import wilson_interval
from agentlab.verdicts import non_inferior

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "07_one_agent_or_a_team.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


def answer(name, marker):
    return notebook_code.answer(SOLUTION, name, marker)


@pytest.mark.parametrize("exercise", ["07.react-tokens", "07.router-share", "07.pick"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 07.react-tokens ----------------------------------------------------------------------------


def test_react_tokens_passes_the_solution(capsys):
    check("07.react-tokens", solution("predict_input_tokens"))
    assert "All 7 checks passed." in capsys.readouterr().out


def test_react_tokens_fails_n_squared_for_the_calls_before_each_call(capsys):
    def squared(run, n):
        inputs = [t.input_tokens for t in run.turns]
        g = (inputs[-1] - inputs[0]) / (len(inputs) - 1) if len(inputs) > 1 else 0
        return n * inputs[0] + g * n * n / 2

    with pytest.raises(CheckFailed, match=r"how many growth steps call t has had \(t - 1"):
        check("07.react-tokens", squared)
    out = capsys.readouterr().out
    assert "✗ notebook 07's 4-hop run, at its own 5 calls: got 2402.5 (too many)" in out
    assert "✓ a run stopped after one call" in out  # no growth, so the mistake cannot show
    assert "✓ from the 2-hop run, a real 10-hop run" in out  # 10% is too loose to see it: hence exact cases


def test_react_tokens_fails_a_one_call_run_divided_by_zero(capsys):
    def unguarded(run, n):
        inputs = [t.input_tokens for t in run.turns]
        g = (inputs[-1] - inputs[0]) / (len(inputs) - 1)
        return n * inputs[0] + g * n * (n - 1) / 2

    with pytest.raises(CheckFailed, match="1 of 7 checks failed"):
        check("07.react-tokens", unguarded)
    assert "✗ a run stopped after one call, predicting 4 calls: raised ZeroDivisionError" in (
        capsys.readouterr().out
    )


def least_squares(run, n):
    """B and g from a straight line fitted through every call, not from the first and last calls:
    the estimate the exercise does not ask for, and the check holds to the one it does."""
    inputs = np.array([t.input_tokens for t in run.turns], dtype=float)
    g, b = np.polyfit(np.arange(len(inputs)), inputs, 1) if len(inputs) > 1 else (0.0, inputs[0])
    return n * b + g * n * (n - 1) / 2


def mean_as_base(run, n):
    """Takes B as the mean input of the run's calls instead of the first call's."""
    inputs = [t.input_tokens for t in run.turns]
    g = (inputs[-1] - inputs[0]) / (len(inputs) - 1) if len(inputs) > 1 else 0
    return n * sum(inputs) / len(inputs) + g * n * (n - 1) / 2


def growth_over_every_call(run, n):
    """Divides the growth by the number of calls, not by the steps between the first and the last."""
    inputs = [t.input_tokens for t in run.turns]
    return n * inputs[0] + (inputs[-1] - inputs[0]) / len(inputs) * n * (n - 1) / 2


@pytest.mark.parametrize(
    "wrong, line",
    [
        (least_squares, "✗ a run whose last call grew far more than the others, predicting 12 calls: got"),
        (mean_as_base, "✗ notebook 07's 4-hop run, at its own 5 calls: got"),
        (growth_over_every_call, "✗ the same run, predicting 12 calls: got"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_react_tokens_catches_a_fit_through_every_call_a_mean_base_and_growth_per_call(wrong, line, capsys):
    notebook_code.caught(capsys, "07.react-tokens", wrong, line)


# --- 07.router-share ------------------------------------------------------------------------------


def test_router_share_passes_the_solution(capsys):
    check("07.router-share", solution("strong_share"))
    assert "All 11 checks passed." in capsys.readouterr().out


def test_router_share_fails_the_coin_line_for_the_perfect_router(capsys):
    def always_a_line(counts, target, router):
        if target <= counts.weak_accuracy:
            return 0.0
        if target > counts.strong_accuracy:
            return None
        return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)

    with pytest.raises(CheckFailed, match="only the strong model gets right"):
        check("07.router-share", always_a_line)
    out = capsys.readouterr().out
    assert "✓ GSM8K, a coin, to 80%\n" in out
    assert "✗ GSM8K, a perfect router, to 80%: got 0.740" in out


def test_router_share_fails_a_formula_without_its_edges(capsys):
    def no_edges(counts, target, router):
        if router == "coin":
            return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
        return target - counts.weak_accuracy

    with pytest.raises(CheckFailed, match="5 of 11 checks failed"):
        check("07.router-share", no_edges)
    out = capsys.readouterr().out
    assert "✗ GSM8K, a coin, to 90%: above the strong model: got 1.19" in out
    assert "✗ GSM8K, a coin, to 50%: the weak model is enough: got -0.63" in out


def share_of_the_only_strong(counts, target, router):
    """The perfect router's share counted among the questions only the strong model gets right,
    not among all of them."""
    if target <= counts.weak_accuracy:
        return 0.0
    if router == "coin":
        if target > counts.strong_accuracy:
            return None
        return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
    if target > counts.perfect_accuracy:
        return None
    return (target - counts.weak_accuracy) * counts.total / counts.only_strong


def strong_assumed_better(counts, target, router):
    """Never checks that the strong model is the better one: a coin's line then runs downhill."""
    if target <= counts.weak_accuracy:
        return 0.0
    if router == "coin":
        return min(1.0, (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy))
    return None if target > counts.perfect_accuracy else target - counts.weak_accuracy


def as_percentages(counts, target, router):
    """The right shares, as percentages."""
    share = solution("strong_share")(counts, target, router)
    return None if share is None else 100 * share


@pytest.mark.parametrize(
    "wrong, line",
    [
        (share_of_the_only_strong, "✗ GSM8K, a perfect router, to 80%: got 0.556"),
        (strong_assumed_better, "✗ a weak model better than the strong one, a coin, to 85%: got"),
        (as_percentages, "✗ GSM8K, a coin, to 80%: got 74."),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_router_share_catches_the_wrong_denominator_a_downhill_coin_and_percentages(wrong, line, capsys):
    notebook_code.caught(capsys, "07.router-share", wrong, line)


# --- 07.pick --------------------------------------------------------------------------------------


def test_pick_passes_the_solution(capsys):
    check("07.pick", solution("pick"))
    assert "All 14 checks passed." in capsys.readouterr().out


def rights(comparison, row):
    return [o.right for o in comparison.outcomes[row.topology]]


def pick_by(keep, run_more=True, key=lambda r: (r.mean_cost, r.mean_seconds)):
    """pick with another rule: `keep(comparison, row, best, margin)` for the contenders instead of
    non-inferiority; with `run_more`, "run more" when a cheaper row is neither kept nor worse."""

    def pick(comparison, margin):
        rows = comparison.rows()
        best = max(rows, key=lambda r: r.accuracy)
        kept = [r for r in rows if r is best or keep(comparison, r, best, margin)]
        choice = min(kept, key=key)
        if run_more:
            for r in rows:
                verdict = non_inferior(
                    paired_accuracy(rights(comparison, r), rights(comparison, best)), margin
                )
                if r not in kept and not verdict.worse and key(r) < key(choice):
                    return "run more"
        return choice.topology

    return pick


def non_inferior_rule(comparison, r, best, margin):
    return non_inferior(paired_accuracy(rights(comparison, r), rights(comparison, best)), margin).kept


def not_measurably_worse(comparison, r, best, margin):
    """The rule this exercise used to teach: keep what the exact test cannot separate from the best."""
    return not paired_accuracy(rights(comparison, r), rights(comparison, best)).clear()


def within_points(comparison, r, best, margin):
    """A margin on the totals: no interval, no pairing."""
    return r.accuracy >= best.accuracy - margin


def overlapping(comparison, r, best, margin):
    low, high = wilson_interval(best.right, best.tasks)
    r_low, r_high = wilson_interval(r.right, r.tasks)
    return r_high >= low and r_low <= high


def always_five_points(comparison, r, best, margin):
    return non_inferior_rule(comparison, r, best, 0.05)


def run_more_whenever_undecided(comparison, margin):
    """Right contenders, but "run more" whenever any row is undecided, even a costlier one."""
    rows = comparison.rows()
    best = max(rows, key=lambda r: r.accuracy)
    for r in rows:
        verdict = non_inferior(paired_accuracy(rights(comparison, r), rights(comparison, best)), margin)
        if r is not best and not verdict.kept and not verdict.worse:
            return "run more"
    return pick_by(non_inferior_rule)(comparison, margin)


def cheapest(comparison, margin):
    return min(comparison.rows(), key=lambda r: (r.mean_cost, r.mean_seconds)).topology


def most_accurate(comparison, margin):
    return max(comparison.rows(), key=lambda r: (r.accuracy, -r.mean_cost, -r.mean_seconds)).topology


TWENTY = "✗ 20 tasks: a costly topology right on all 20, a cheap one on 16: got"
THOUSAND = "✗ 1,000 tasks: a costly one right on 960, a cheap one on 920: got 'react'"
MARGIN_10 = "✗ the same 1,000 tasks, margin 10 points: got"
FOUR_HUNDRED = "✗ 400 tasks: the cheap one a point behind, margin 5 points: got 'planner+workers'"
OVERLAP = (
    "✗ 200 tasks, 130 against 110 right: the intervals overlap, but all 20 disagreements go one way: got"
)
SECTION_4 = "✗ section 4: 50 tasks, four topologies, 5% errors: got"
CHEAP_BEST = "✗ 40 tasks: the cheap one also the most accurate: got 'run more'"
FASTER = "✗ 1,000 tasks, equal cost and accuracy, one twice as fast: got 'planner+workers'"


@pytest.mark.parametrize(
    "wrong, lines",
    [
        (pick_by(not_measurably_worse, run_more=False), [TWENTY + " 'react'", MARGIN_10, SECTION_4]),
        (pick_by(not_measurably_worse), [TWENTY + " 'react'", MARGIN_10 + " 'run more'"]),
        (pick_by(within_points, run_more=False), [THOUSAND, SECTION_4]),
        (pick_by(overlapping, run_more=False), [OVERLAP, TWENTY]),
        (pick_by(non_inferior_rule, run_more=False), [TWENTY + " 'planner+workers'", SECTION_4]),
        (pick_by(always_five_points), [MARGIN_10 + " 'run more'"]),
        (run_more_whenever_undecided, [CHEAP_BEST]),
        (pick_by(non_inferior_rule, key=lambda r: r.mean_cost), [FASTER]),
        (cheapest, [SECTION_4 + " 'chat'"]),
        (most_accurate, [FOUR_HUNDRED, SECTION_4]),
    ],
    ids=[
        "no-measurable-difference",
        "no-measurable-difference-with-run-more",
        "points-on-the-totals",
        "overlapping-intervals",
        "never-run-more",
        "margin-fixed-at-5-points",
        "run-more-for-a-costlier-row",
        "no-latency-tie-break",
        "cheapest-row",
        "most-accurate-row",
    ],
)
def test_pick_catches_no_difference_as_equal_margins_on_totals_and_overlaps(wrong, lines, capsys):
    notebook_code.caught(capsys, "07.pick", wrong, *lines)


def test_the_hand_made_pairs_are_what_their_names_say():
    cases = {what: (c, margin) for what, c, margin in _pick_cases()}
    overlap = next(c for what, (c, _) in cases.items() if what.startswith("200 tasks"))
    costly, cheap = overlap["planner+workers"], overlap["react"]
    assert (costly.right, cheap.right) == (130, 110)
    assert wilson_interval(cheap.right, 200)[1] >= wilson_interval(costly.right, 200)[0]  # they overlap
    assert paired_accuracy(rights(overlap, costly), rights(overlap, cheap)).p_value < 0.001
    twenty = next(c for what, (c, _) in cases.items() if what.startswith("20 tasks"))
    paired = paired_accuracy(rights(twenty, twenty["react"]), rights(twenty, twenty["planner+workers"]))
    assert not paired.clear() and paired.interval[0] < -0.05  # not separable, not shown within 5 points


def test_the_grader_adds_pick_cases_of_its_own(capsys):
    from agentlab.course.hidden import cases_for

    (grader,) = cases_for("07.pick")
    answers = [case.passed for case in grader(solution("pick"))]
    assert len(answers) == 5 and all(answers)
    assert not all(case.passed for case in grader(cheapest))


# --- 07.shapes ------------------------------------------------------------------------------------


def marked(choice):
    """(status, detail) the grader gives a choice: the kit's feedback check, then the key it holds."""
    result = verdict("07.shapes", choice)
    return result.status, result.detail


def test_shapes_feedback_checks_the_form_and_the_grader_marks_the_solution_right(capsys):
    solution = answer("choice", 'check("07.shapes"')
    check("07.shapes", solution)
    out = capsys.readouterr().out
    assert "The form is right; your instructor's grader marks the choices." in out and "passed" not in out
    assert marked(solution) == ("passed", "")


def test_shapes_accepts_either_planned_topology_for_a_chain():
    assert marked({"A": "react", "B": "planner+workers", "C": "planner+workers", "D": "react"})[0] == "passed"


@pytest.mark.parametrize(
    "choice",
    [
        dict.fromkeys("ABCD", "planner+workers"),  # a team for everything
        dict.fromkeys("ABCD", "react"),  # one agent for everything
        {"A": "react", "B": "react", "C": "plan-execute", "D": "planner+workers"},
        {"A": "plan-execute", "B": "planner+workers", "C": "plan-execute", "D": "react"},  # A planned
    ],
)
def test_shapes_the_grader_fails_wrong_choices_without_saying_how_many_are_right(choice, capsys):
    check("07.shapes", choice)  # well formed: the learner's own check cannot tell, so it cannot leak
    assert marked(choice) == ("failed", "1 of 4 cases failed: the four tasks: not all right")


def test_shapes_names_the_choices_when_a_name_is_unknown(capsys):
    with pytest.raises(CheckFailed):
        check(
            "07.shapes",
            {"A": "ReAct", "B": "planner+workers", "C": "plan-execute", "D": "react", "E": "chat"},
        )
    out = capsys.readouterr().out
    assert "✗ every task gets one topology's name: got {'A': 'ReAct'}; choose from react, plan-execute" in out
    assert "✗ no other tasks: unexpected keys ['E']" in out


def test_shapes_fails_an_answer_that_is_not_a_dict(capsys):
    with pytest.raises(CheckFailed, match="1 of 1 checks failed"):
        check("07.shapes", ["react", "planner+workers", "plan-execute", "react"])
    assert "✗ a dict from task letter to topology name: got list" in capsys.readouterr().out


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def every_token(run, n):
    """Reads each call's input and output tokens, where the exercise asks for what a call reads."""
    totals = [t.completion.usage.total_tokens for t in run.turns]
    g = (totals[-1] - totals[0]) / (len(totals) - 1) if len(totals) > 1 else 0
    return n * totals[0] + g * n * (n - 1) / 2


def growth_steps_counted_from_one(run, n):
    """Gives call t a growth of g*t instead of g*(t - 1): n(n + 1)/2 growth steps over n calls."""
    inputs = [t.input_tokens for t in run.turns]
    g = (inputs[-1] - inputs[0]) / (len(inputs) - 1) if len(inputs) > 1 else 0
    return n * inputs[0] + g * n * (n + 1) / 2


def growth_of_the_last_call(run, n):
    """Takes g as the growth of the last call alone, not the mean over the run."""
    inputs = [t.input_tokens for t in run.turns]
    g = inputs[-1] - inputs[-2] if len(inputs) > 1 else 0
    return n * inputs[0] + g * n * (n - 1) / 2


@pytest.mark.parametrize(
    "wrong, line",
    [
        (every_token, "✗ notebook 07's 4-hop run, at its own 5 calls: got"),
        (growth_steps_counted_from_one, "✗ the same run, predicting 12 calls: got"),
        (growth_of_the_last_call, "✗ a run whose last call grew far more than the others, predicting 12"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_react_tokens_catches_output_tokens_an_extra_growth_step_and_the_last_call_s_growth(
    wrong, line, capsys
):
    notebook_code.caught(capsys, "07.react-tokens", wrong, line)


def unreachable_at_the_strong_model(counts, target, router):
    """Says a coin cannot reach the strong model's own accuracy (>= where > belongs): it can, at 1.0."""
    if target <= counts.weak_accuracy:
        return 0.0
    if router == "coin":
        if target >= counts.strong_accuracy:
            return None
        return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
    return None if target > counts.perfect_accuracy else target - counts.weak_accuracy


def perfect_on_a_line_to_the_ceiling(counts, target, router):
    """Moves the perfect router along a straight line from the weak model to the ceiling, as a coin
    moves to the strong model."""
    if target <= counts.weak_accuracy:
        return 0.0
    top = counts.strong_accuracy if router == "coin" else counts.perfect_accuracy
    return None if target > top else (target - counts.weak_accuracy) / (top - counts.weak_accuracy)


def perfect_pays_for_the_both_questions(counts, target, router):
    """Sends the questions both models get right to the strong model too."""
    if target <= counts.weak_accuracy:
        return 0.0
    if router == "coin":
        if target > counts.strong_accuracy:
            return None
        return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
    if target > counts.perfect_accuracy:
        return None
    return (target * counts.total - counts.only_weak) / counts.total


@pytest.mark.parametrize(
    "wrong, line",
    [
        (unreachable_at_the_strong_model, "✗ GSM8K, a coin, to the strong model's accuracy: got None"),
        (perfect_on_a_line_to_the_ceiling, "✗ GSM8K, a perfect router, to 80%: got"),
        (perfect_pays_for_the_both_questions, "✗ GSM8K, a perfect router, to 80%: got"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_router_share_catches_a_strict_edge_a_line_to_the_ceiling_and_paying_for_both(wrong, line, capsys):
    notebook_code.caught(capsys, "07.router-share", wrong, line)


def tokens_for_dollars(comparison, margin):
    """Keeps the right contenders, then takes the fewest tokens a task instead of the lowest cost."""
    return pick_by(non_inferior_rule, key=lambda r: (r.mean_tokens, r.mean_seconds))(comparison, margin)


def the_row_itself(comparison, margin):
    """The right choice, handed back as its whole Row instead of the topology's name."""
    chosen = solution("pick")(comparison, margin)
    return next((r for r in comparison.rows() if r.topology == chosen), chosen)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            pick_by(non_inferior_rule, key=lambda r: (r.mean_seconds, r.mean_cost)),
            "✗ the same at 400 tasks: got",
        ),
        (
            tokens_for_dollars,
            "✗ short tasks, 5% errors: one agent a task behind the team: got 'plan-execute'",
        ),
        (the_row_itself, "✗ section 7: short and sequential: got Row("),
    ],
    ids=["latency-before-cost", "tokens-for-dollars", "the-row-itself"],
)
def test_pick_catches_latency_first_tokens_for_dollars_and_a_row_for_a_name(wrong, line, capsys):
    notebook_code.caught(capsys, "07.pick", wrong, line)
