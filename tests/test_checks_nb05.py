"""The checks of notebook 05's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

import random
from pathlib import Path

import notebook_code
import pytest

from agentlab import world
from agentlab.checks import CheckFailed, check
from agentlab.hierarchy import LEAD, Hierarchy
from agentlab.llm import SimulatedLLM

SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "05_hierarchical_teams.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["05.team-calls", "05.rollup", "05.shape"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 05.team-calls --------------------------------------------------------------------------------


def test_team_calls_passes_the_solution(capsys):
    check("05.team-calls", solution("predict_calls"))
    assert "All 8 checks passed." in capsys.readouterr().out


def test_team_calls_fails_the_full_tree_formula(capsys):
    def full_tree(width, depth, branching):  # 1 + b + b² + ... teams, as if every part always split
        return 2 * sum(branching**level for level in range(depth))

    with pytest.raises(CheckFailed, match="still goes down, whole, to the bottom"):
        check("05.team-calls", full_tree)
    out = capsys.readouterr().out
    assert "✓ a sum of 8 items, depth 3, branching 2 → 14 calls" in out  # 8 items fill the tree
    assert "✗ a sum of 3 items, depth 3, branching 3 → 14 calls: got 26" in out
    assert "✗ a sum of 6 items, depth 2, branching 4 → 10 calls" not in out  # 1 + 4 teams either way


def test_team_calls_fails_parts_of_one_item_that_stop_where_they_are(capsys):
    def stops_early(width, depth, branching):
        def team(items, level):
            if level == depth or items < 2 or branching < 2:  # the mistake: a part of one is a leaf
                return 2
            parts = min(branching, items)
            size, extra = divmod(items, parts)
            return 2 + sum(team(size + (i < extra), level + 1) for i in range(parts))

        return team(width, 1)

    with pytest.raises(CheckFailed, match="3 of 8 checks failed"):
        check("05.team-calls", stops_early)
    out = capsys.readouterr().out
    assert "✗ a sum of 3 items, depth 3, branching 3 → 14 calls: got 8" in out
    assert "✗ a sum of 6 items, depth 3, branching 4 → 22 calls: got 18" in out
    assert "✗ a sum of 4 items, depth 3, branching 1 → 6 calls: got 2" in out


# --- 05.rollup -----------------------------------------------------------------------------------


def test_rollup_passes_the_solution(capsys):
    check("05.rollup", solution("tokens_by_level"))
    assert "All 5 checks passed." in capsys.readouterr().out


def test_rollup_fails_adding_up_every_teams_run(capsys):
    def every_run(root):
        levels = {}
        for team in root.walk():
            levels[team.level] = levels.get(team.level, 0) + sum(
                c.usage.total_tokens for *_, c in team.run.calls
            )
        return levels

    with pytest.raises(CheckFailed, match="take only the calls not made under the role LEAD"):
        check("05.rollup", every_run)
    out = capsys.readouterr().out
    assert "✓ one level: a flat team" in out  # no sub-teams, nothing counted twice
    assert "✗ two levels, a sum of 4: 3,235 tokens in all → {1: 938, 2: 2297}: got {1: 3235, 2: 2297}" in out


def test_rollup_fails_leaving_out_the_sub_teams_that_gave_up(capsys):
    def finished_only(root):
        levels = {}
        for team in root.walk():
            if team.status == "done":
                own = sum(c.usage.total_tokens for _, role, c in team.run.calls if role != LEAD)
                levels[team.level] = levels.get(team.level, 0) + own
        return levels

    with pytest.raises(CheckFailed, match="2 of 5 checks failed"):
        check("05.rollup", finished_only)
    out = capsys.readouterr().out
    assert "✓ three levels, a sum of 8" in out
    assert "✗ two levels, a part tried twice and given up" in out
    assert "✗ three levels, a sub-team that gave up and was replaced" in out


# --- 05.shape ------------------------------------------------------------------------------------


def test_shape_passes_the_solution(capsys):
    check("05.shape", solution("choose_shape"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_shape_fails_the_last_shape_found_on_a_tie(capsys):
    def last_on_a_tie(width, budget):
        question = world.fanout_task(random.Random(0), width, "total").question
        best, smallest = None, None
        for depth in (1, 2, 3):
            for branching in (2, 3, 4):
                tree = Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(question)
                largest = max(len(team.run.plan) for team in tree.walk())
                if len(tree.calls()) <= budget and (smallest is None or largest <= smallest):  # <=, not <
                    best, smallest = (depth, branching), largest
        return best

    with pytest.raises(CheckFailed, match="2 of 6 checks failed"):
        check("05.shape", last_on_a_tie)
    out = capsys.readouterr().out
    assert "✗ a sum of 8 items within 4 calls → depth 1, branching 2 (2 calls, plans of at most 10" in out
    assert "steps): got (1, 4)" in out and "at most 4 steps): got (3, 2)" in out  # 4 items within 30 calls


def test_shape_fails_ignoring_the_budget_and_nothing_that_fits(capsys):
    def no_budget(width, budget):
        return (3, 2)  # the shortest plans there are, whatever they cost

    with pytest.raises(CheckFailed, match="5 of 6 checks failed"):
        check("05.shape", no_budget)
    out = capsys.readouterr().out
    assert "✓ a sum of 8 items within 20 calls → depth 3, branching 2" in out
    assert "✗ a sum of 6 items within 1 call → None: got (3, 2)" in out
