"""The checks of notebook 07's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

from pathlib import Path

import notebook_code
import numpy as np
import pytest

from agentlab.course.checks import CheckFailed, check
from agentlab.course.checks.nb07 import _pick_cases
from agentlab.course.grading import verdict
from agentlab.evidence import paired_accuracy, sign_test
from agentlab.experiments import wilson_interval

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
    assert "All 9 checks passed." in capsys.readouterr().out


def test_pick_fails_the_cheapest_row_whatever_its_accuracy(capsys):
    def cheapest(comparison):
        return min(comparison.rows(), key=lambda r: (r.mean_cost, r.mean_seconds)).topology

    with pytest.raises(CheckFailed, match="3 of 9 checks failed"):
        check("07.pick", cheapest)
    assert "✗ section 4: 50 tasks, four topologies, 5% errors: got 'chat'" in capsys.readouterr().out


def test_pick_fails_the_most_accurate_row_when_its_lead_is_noise(capsys):
    def most_accurate(comparison):
        return max(comparison.rows(), key=lambda r: (r.accuracy, -r.mean_cost, -r.mean_seconds)).topology

    with pytest.raises(CheckFailed, match="3 of 9 checks failed"):
        check("07.pick", most_accurate)
    assert "✗ short tasks, 5% errors: one agent a task behind the team: got 'plan-execute'" in (
        capsys.readouterr().out
    )


def rights(comparison, row):
    return [o.right for o in comparison.outcomes[row.topology]]


def paired_with_the_best(comparison, r, best):
    return r is best or not paired_accuracy(rights(comparison, r), rights(comparison, best)).clear()


def test_pick_fails_without_the_latency_tie_break(capsys):
    def cost_only(comparison):
        rows = comparison.rows()
        best = max(rows, key=lambda r: r.accuracy)
        keep = [r for r in rows if paired_with_the_best(comparison, r, best)]
        return min(keep, key=lambda r: r.mean_cost)

    with pytest.raises(CheckFailed, match="on equal cost at latency"):
        check("07.pick", lambda c: cost_only(c).topology)
    out = capsys.readouterr().out
    assert "✗ section 7: wide and independent: got 'plan-execute'" in out


def pick_by(keep):
    """pick with another rule for the contenders: `keep(comparison, row, best)` instead of the paired test."""

    def pick(comparison):
        rows = comparison.rows()
        best = max(rows, key=lambda r: r.accuracy)
        contenders = [r for r in rows if keep(comparison, r, best)]
        return min(contenders, key=lambda r: (r.mean_cost, r.mean_seconds)).topology

    return pick


def within_points(points):
    return lambda comparison, r, best: r.accuracy >= best.accuracy - points / 100


def inside_the_best_interval(comparison, r, best):
    low, high = wilson_interval(best.right, best.tasks)
    return low <= r.accuracy <= high


def overlapping(z):
    """The rule this exercise used to teach: keep every row whose interval overlaps the best one's."""

    def keep(comparison, r, best):
        low, high = wilson_interval(best.right, best.tasks, z=z)
        r_low, r_high = wilson_interval(r.right, r.tasks, z=z)
        return r_high >= low and r_low <= high

    return keep


def sign_test_on_the_totals(comparison, r, best):
    """The right test on the wrong counts: all the rights, not the disagreements."""
    return sign_test(best.right, r.right) >= 0.05


def one_sided(comparison, r, best):
    return r is best or paired_accuracy(rights(comparison, r), rights(comparison, best)).p_value / 2 >= 0.05


COSTLY_PERFECT = "✗ 20 tasks: a costly topology right on all 20, a cheap one on 16: got 'planner+workers'"
THOUSAND = "✗ 1,000 tasks: a costly topology right on 960, a cheap one on 920: got 'react'"
OVERLAP = (
    "✗ 200 tasks, 130 against 110 right: the intervals overlap, but all 20 disagreements go one way: "
    "got 'react'"
)
APART = (
    "✗ 100 tasks, 60 against 40 right: the intervals do not overlap, but every task is a disagreement: "
    "got 'planner+workers'"
)


@pytest.mark.parametrize(
    "rule, lines",
    [
        (overlapping(1.959963984540054), [OVERLAP, APART]),
        (overlapping(1.0), [COSTLY_PERFECT, APART]),
        (sign_test_on_the_totals, [THOUSAND, OVERLAP]),
        (one_sided, [APART]),
        (within_points(3), [COSTLY_PERFECT, APART]),
        (within_points(5), [COSTLY_PERFECT, THOUSAND, APART]),
        (within_points(25), [THOUSAND, OVERLAP]),
        (inside_the_best_interval, [COSTLY_PERFECT, APART]),
    ],
    ids=[
        "95%-intervals-overlap",
        "68%-intervals-overlap",
        "sign-test-on-totals",
        "one-sided",
        "3-points",
        "5-points",
        "25-points",
        "inside-the-best-interval",
    ],
)
def test_pick_catches_overlapping_intervals_unpaired_counts_and_margins(rule, lines, capsys):
    notebook_code.caught(capsys, "07.pick", pick_by(rule), *lines)


def test_the_hand_made_pairs_are_what_their_names_say():
    overlap, apart = (c for what, c in _pick_cases() if what.startswith(("200 tasks", "100 tasks")))
    costly, cheap = overlap["planner+workers"], overlap["react"]
    assert (costly.right, cheap.right) == (130, 110)
    assert wilson_interval(cheap.right, 200)[1] >= wilson_interval(costly.right, 200)[0]  # they overlap
    assert paired_accuracy(rights(overlap, costly), rights(overlap, cheap)).p_value < 0.001
    costly, cheap = apart["planner+workers"], apart["react"]
    assert wilson_interval(cheap.right, 100)[1] < wilson_interval(costly.right, 100)[0]  # apart
    p_value = paired_accuracy(rights(apart, costly), rights(apart, cheap)).p_value
    assert p_value == pytest.approx(0.0569, abs=1e-4)  # 60 to 40 of 100 disagreements: not below 0.05


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


def latency_before_cost(comparison):
    """Keeps the right contenders, then takes the fastest, with cost only to break a tie."""
    rows = comparison.rows()
    best = max(rows, key=lambda r: r.accuracy)
    keep = [r for r in rows if paired_with_the_best(comparison, r, best)]
    return min(keep, key=lambda r: (r.mean_seconds, r.mean_cost)).topology


def tokens_for_dollars(comparison):
    """Keeps the right contenders, then takes the fewest tokens a task instead of the lowest cost."""
    rows = comparison.rows()
    best = max(rows, key=lambda r: r.accuracy)
    keep = [r for r in rows if paired_with_the_best(comparison, r, best)]
    return min(keep, key=lambda r: (r.mean_tokens, r.mean_seconds)).topology


def the_row_itself(comparison):
    """The right choice, handed back as its whole Row instead of the topology's name."""
    chosen = solution("pick")(comparison)
    return next(r for r in comparison.rows() if r.topology == chosen)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (latency_before_cost, "✗ section 4: 50 tasks, four topologies, 5% errors: got 'react'"),
        (tokens_for_dollars, "✗ section 7: short and sequential: got 'plan-execute'"),
        (the_row_itself, "✗ section 4: 50 tasks, four topologies, 5% errors: got Row("),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_pick_catches_latency_first_tokens_for_dollars_and_a_row_for_a_name(wrong, line, capsys):
    notebook_code.caught(capsys, "07.pick", wrong, line)
