"""The checks of notebook 07's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

from pathlib import Path

import notebook_code
import pytest

from agentlab.checks import CheckFailed, check
from agentlab.experiments import wilson_interval

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
    assert "All 5 checks passed." in capsys.readouterr().out


def test_react_tokens_fails_n_squared_for_the_calls_before_each_call(capsys):
    def squared(run, n):
        inputs = [t.input_tokens for t in run.turns]
        g = (inputs[-1] - inputs[0]) / (len(inputs) - 1) if len(inputs) > 1 else 0
        return n * inputs[0] + g * n * n / 2

    with pytest.raises(CheckFailed, match=r"not g\*n²/2"):
        check("07.react-tokens", squared)
    out = capsys.readouterr().out
    assert "✗ notebook 07's 4-hop run, at its own 5 calls → 2,330 tokens: got 2402.5" in out
    assert "✓ a run stopped after one call" in out  # no growth, so the mistake cannot show
    assert "✓ from the 2-hop run, a real 10-hop run" in out  # 10% is too loose to see it: hence exact cases


def test_react_tokens_fails_a_one_call_run_divided_by_zero(capsys):
    def unguarded(run, n):
        inputs = [t.input_tokens for t in run.turns]
        g = (inputs[-1] - inputs[0]) / (len(inputs) - 1)
        return n * inputs[0] + g * n * (n - 1) / 2

    with pytest.raises(CheckFailed, match="1 of 5 checks failed"):
        check("07.react-tokens", unguarded)
    assert "✗ a run stopped after one call, predicting 4 calls → 1,632 tokens: raised ZeroDivisionError" in (
        capsys.readouterr().out
    )


# --- 07.router-share ------------------------------------------------------------------------------


def test_router_share_passes_the_solution(capsys):
    check("07.router-share", solution("strong_share"))
    assert "All 10 checks passed." in capsys.readouterr().out


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
    assert "✓ GSM8K, a coin, to 80% → 74.0%" in out
    assert "✗ GSM8K, a perfect router, to 80% → 16.2%: got 0.740" in out


def test_router_share_fails_a_formula_without_its_edges(capsys):
    def no_edges(counts, target, router):
        if router == "coin":
            return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
        return target - counts.weak_accuracy

    with pytest.raises(CheckFailed, match="5 of 10 checks failed"):
        check("07.router-share", no_edges)
    out = capsys.readouterr().out
    assert "✗ GSM8K, a coin, to 90%: above the strong model → None (out of reach): got 1.19" in out
    assert "✗ GSM8K, a coin, to 50%: the weak model is enough → 0.0%: got -0.63" in out


# --- 07.pick --------------------------------------------------------------------------------------


def test_pick_passes_the_solution(capsys):
    check("07.pick", solution("pick"))
    assert "All 5 checks passed." in capsys.readouterr().out


def test_pick_fails_the_cheapest_row_whatever_its_accuracy(capsys):
    def cheapest(comparison):
        return min(comparison.rows(), key=lambda r: (r.mean_cost, r.mean_seconds)).topology

    with pytest.raises(CheckFailed, match="1 of 5 checks failed"):
        check("07.pick", cheapest)
    assert "✗ section 4: 50 tasks, four topologies, 5% errors → planner+workers: got 'chat'" in (
        capsys.readouterr().out
    )


def test_pick_fails_the_most_accurate_row_when_its_lead_is_noise(capsys):
    def most_accurate(comparison):
        return max(comparison.rows(), key=lambda r: (r.accuracy, -r.mean_cost, -r.mean_seconds)).topology

    with pytest.raises(CheckFailed, match="1 of 5 checks failed"):
        check("07.pick", most_accurate)
    assert "✗ short tasks, 5% errors: one agent a task behind the team → react: got 'plan-execute'" in (
        capsys.readouterr().out
    )


def test_pick_fails_without_the_latency_tie_break(capsys):
    def cost_only(comparison):
        rows = comparison.rows()
        best = max(rows, key=lambda r: r.accuracy)
        low, _ = wilson_interval(best.right, best.tasks)
        return min(
            (r for r in rows if wilson_interval(r.right, r.tasks)[1] >= low), key=lambda r: r.mean_cost
        )

    with pytest.raises(CheckFailed, match="on equal cost, the lowest mean latency"):
        check("07.pick", lambda c: cost_only(c).topology)
    out = capsys.readouterr().out
    assert "✗ section 7: wide and independent → planner+workers: got 'plan-execute'" in out


# --- 07.shapes ------------------------------------------------------------------------------------


def test_shapes_passes_the_solution(capsys):
    check("07.shapes", answer("choice", 'check("07.shapes"'))
    assert "All 5 checks passed." in capsys.readouterr().out


def test_shapes_accepts_either_planned_topology_for_a_chain(capsys):
    check("07.shapes", {"A": "react", "B": "planner+workers", "C": "planner+workers", "D": "react"})
    assert "All 5 checks passed." in capsys.readouterr().out


def test_shapes_fails_a_team_for_everything(capsys):
    with pytest.raises(CheckFailed, match="2 of 5 checks failed. Hint: ask of each task"):
        check("07.shapes", dict.fromkeys("ABCD", "planner+workers"))
    out = capsys.readouterr().out
    assert "✗ task A: got 'planner+workers'" in out and "✗ task D" in out


def test_shapes_names_the_choices_when_a_name_is_unknown(capsys):
    with pytest.raises(CheckFailed):
        check(
            "07.shapes",
            {"A": "ReAct", "B": "planner+workers", "C": "plan-execute", "D": "react", "E": "chat"},
        )
    out = capsys.readouterr().out
    assert "✗ task A: got 'ReAct'; choose from react, plan-execute, planner+workers" in out
    assert "✗ no other tasks: unexpected keys ['E']" in out


def test_shapes_fails_an_answer_that_is_not_a_dict(capsys):
    with pytest.raises(CheckFailed, match="1 of 1 checks failed"):
        check("07.shapes", ["react", "planner+workers", "plan-execute", "react"])
    assert "✗ a dict from task letter to topology name: got list" in capsys.readouterr().out
