"""The checks of notebook 05's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

import functools
import random
from pathlib import Path

import notebook_code
import pytest

from agentlab import world
from agentlab.course.checks import CheckFailed, check
from agentlab.hierarchy import LEAD, Hierarchy
from agentlab.llm import SimulatedLLM

notebook_code.skip_without_solutions()
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
    assert "✓ a sum of 8 items, depth 3, branching 2\n" in out  # 8 items fill the tree
    assert "✗ a sum of 3 items, depth 3, branching 3: got 26 (too many)" in out
    assert "✗ a sum of 6 items, depth 2, branching 4" not in out  # 1 + 4 teams either way


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
    assert "✗ a sum of 3 items, depth 3, branching 3: got 8 (too few)" in out
    assert "✗ a sum of 6 items, depth 3, branching 4: got 18 (too few)" in out
    assert "✗ a sum of 4 items, depth 3, branching 1: got 2 (too few)" in out


def full_groups(width, depth, branching):
    """Cuts a team's items into groups of ceil(items / branching), so 6 items in 4 make only 3 groups."""

    def team(items, level):
        if level == depth:
            return 2
        size = -(-items // branching)
        groups = [min(size, items - start) for start in range(0, items, size)]
        return 2 + sum(team(g, level + 1) for g in groups)

    return team(width, 1)


def bottom_teams_only(width, depth, branching):
    """Counts the calls of the teams at the bottom level only: the managers above make none."""

    def team(items, level):
        if level == depth:
            return 2
        parts = min(branching, items)
        size, extra = divmod(items, parts)
        return sum(team(size + (i < extra), level + 1) for i in range(parts))

    return team(width, 1)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (full_groups, "✗ a sum of 6 items, depth 2, branching 4: got 8 (too few)"),
        (bottom_teams_only, "✗ a sum of 8 items, depth 2, branching 2: got 4 (too few)"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_team_calls_catches_groups_cut_too_large_and_managers_left_out(wrong, line, capsys):
    notebook_code.caught(capsys, "05.team-calls", wrong, line)


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

    with pytest.raises(CheckFailed, match="which calls in a team's run its sub-teams made"):
        check("05.rollup", every_run)
    out = capsys.readouterr().out
    assert "✓ one level: a flat team" in out  # no sub-teams, nothing counted twice
    assert (
        "✗ two levels, a sum of 4: got {1: 3235, 2: 2297}; your levels add up to 5,532 tokens, "
        "the manager's bill is 3,235"
    ) in out


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


def levels_from_zero(root):
    """The right sums, keyed from 0 for the manager instead of 1."""
    levels = {}
    for team in root.walk():
        own = sum(c.usage.total_tokens for _, role, c in team.run.calls if role != LEAD)
        levels[team.level - 1] = levels.get(team.level - 1, 0) + own
    return levels


def two_levels_from_the_top(root):
    """Reads the manager's run alone: its own calls at level 1, everything under LEAD at level 2."""
    own = sum(c.usage.total_tokens for _, role, c in root.run.calls if role != LEAD)
    below = sum(c.usage.total_tokens for _, role, c in root.run.calls if role == LEAD)
    return {1: own, 2: below} if below else {1: own}


@pytest.mark.parametrize(
    "wrong, line",
    [
        (levels_from_zero, "✗ two levels, a sum of 4: got {0: 938, 1: 2297}"),
        (two_levels_from_the_top, "✗ three levels, a sum of 8: got {1: 982, 2: 6529}"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_rollup_catches_levels_from_zero_and_a_tree_read_from_the_top_only(wrong, line, capsys):
    notebook_code.caught(capsys, "05.rollup", wrong, line)


# --- 05.shape ------------------------------------------------------------------------------------


def test_shape_passes_the_solution(capsys):
    check("05.shape", solution("choose_shape"))
    assert "All 6 checks passed." in capsys.readouterr().out


@functools.cache  # the simulator is deterministic: each tree is grown once for all the wrong answers below
def grown(width: int, depth: int, branching: int) -> tuple[int, tuple[int, ...]]:
    """(model calls, the plan size of every team, the manager's first) of a learner's sum of `width` items."""
    question = world.fanout_task(random.Random(0), width, "total").question
    tree = Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(question)
    return len(tree.calls()), tuple(len(team.run.plan) for team in tree.walk())


def test_shape_fails_the_last_shape_found_on_a_tie(capsys):
    def last_on_a_tie(width, budget):
        best, smallest = None, None
        for depth in (1, 2, 3):
            for branching in (2, 3, 4):
                calls, plans = grown(width, depth, branching)
                largest = max(plans)
                if calls <= budget and (smallest is None or largest <= smallest):  # <=, not <
                    best, smallest = (depth, branching), largest
        return best

    with pytest.raises(CheckFailed, match="2 of 6 checks failed"):
        check("05.shape", last_on_a_tie)
    out = capsys.readouterr().out
    assert (
        "✗ a sum of 8 items within 4 calls: got (1, 4), which makes 2 calls, its largest plan 10 steps" in out
    )
    assert "✗ a sum of 4 items within 30 calls: got (3, 2), which makes 14 calls" in out  # a tie: fewer calls


def test_shape_fails_ignoring_the_budget_and_nothing_that_fits(capsys):
    def no_budget(width, budget):
        return (3, 2)  # the shortest plans there are, whatever they cost

    with pytest.raises(CheckFailed, match="5 of 6 checks failed"):
        check("05.shape", no_budget)
    out = capsys.readouterr().out
    assert "✓ a sum of 8 items within 20 calls" in out
    assert "✗ a sum of 6 items within 1 call: got (3, 2), which makes 14 calls" in out


def shape_with(under_budget=False, always_eight=False, swapped=False):
    """choose_shape with one mistake: a budget it must stay under (not within), every width measured
    on eight items, or the answer given as (branching, depth)."""

    def choose(width, budget):
        best = None
        for depth in (1, 2, 3):
            for branching in (2, 3, 4):
                calls, plans = grown(8 if always_eight else width, depth, branching)
                largest = max(plans)
                if calls < budget if under_budget else calls <= budget:
                    shape = (branching, depth) if swapped else (depth, branching)
                    key = ((largest, calls, depth, branching), shape)
                    best = min(best, key) if best else key
        return best and best[1]

    return choose


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"under_budget": True}, "✗ a sum of 8 items within 6 calls: got (1, 2)"),
        ({"always_eight": True}, "✗ a sum of 4 items within 30 calls: got (3, 2)"),
        ({"swapped": True}, "✗ a sum of 8 items within 8 calls: got (3, 2)"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_shape_catches_a_strict_budget_one_width_for_all_and_a_shape_written_backwards(mistake, line, capsys):
    notebook_code.caught(capsys, "05.shape", shape_with(**mistake), line)


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def calls_with(report_forgotten=False, groups_of_branching=False, levels_from_zero=False):
    """predict_calls with one mistake: one call per team (its report forgotten), groups of `branching`
    items each (branching read as a group's size), or the levels counted from 0, one level too many."""

    def predict(width, depth, branching):
        per_team = 1 if report_forgotten else 2

        def team(items, level):
            if level == depth:
                return per_team
            if groups_of_branching:
                sizes = [min(branching, items - start) for start in range(0, items, branching)]
            else:
                parts = min(branching, items)
                size, extra = divmod(items, parts)
                sizes = [size + (i < extra) for i in range(parts)]
            if len(sizes) < 2:
                return per_team + team(items, level + 1)
            return per_team + sum(team(s, level + 1) for s in sizes)

        return team(width, 0 if levels_from_zero else 1)

    return predict


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"report_forgotten": True}, "✗ a sum of 8 items, depth 2, branching 2: got 3 (too few)"),
        ({"groups_of_branching": True}, "✗ a sum of 8 items, depth 2, branching 2: got 10 (too many)"),
        ({"levels_from_zero": True}, "✗ a sum of 4 items, depth 1, branching 3: got 8 (too many)"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_team_calls_catches_a_forgotten_report_branching_as_a_size_and_levels_from_zero(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "05.team-calls", calls_with(**mistake), line)


def rollup_with(overwrite=False, output_only=False, string_keys=False):
    """tokens_by_level with one mistake: each team's tokens written over its level's total instead of
    added to it, output tokens counted instead of all tokens, or levels keyed "level 1" as `rollup` does."""

    def tokens_by_level(root):
        levels = {}
        for team in root.walk():
            own = sum(
                c.usage.output_tokens if output_only else c.usage.total_tokens
                for _, role, c in team.run.calls
                if role != LEAD
            )
            key = f"level {team.level}" if string_keys else team.level
            levels[key] = own if overwrite else levels.get(key, 0) + own
        return levels

    return tokens_by_level


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"overwrite": True}, "✗ two levels, a sum of 4: got {1: 938, 2: "),
        ({"output_only": True}, "✗ one level: a flat team: got {1: "),
        ({"string_keys": True}, "✗ one level: a flat team: got {'level 1': "),
    ],
    ids=lambda x: next(iter(x)),
)
def test_rollup_catches_a_level_overwritten_output_tokens_only_and_keys_as_rollup_names_them(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "05.rollup", rollup_with(**mistake), line)


def choose_with(fewest_calls_first=False, manager_plan_only=False, cheapest_if_none_fits=False):
    """choose_shape with one mistake: fewest calls ranked before the largest plan, the manager's plan
    taken for the largest one, or the cheapest shape returned when none fits the budget (not None)."""

    def choose(width, budget):
        best = None
        for depth in (1, 2, 3):
            for branching in (2, 3, 4):
                calls, plans = grown(width, depth, branching)
                plans = plans[:1] if manager_plan_only else plans
                if calls <= budget:
                    key = (calls, max(plans)) if fewest_calls_first else (max(plans), calls)
                    candidate = (*key, depth, branching)
                    best = candidate if best is None else min(best, candidate)
        if best is None:
            return (1, 2) if cheapest_if_none_fits else None  # the flat team: two calls, the fewest there are
        return best[2:]

    return choose


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"fewest_calls_first": True}, "✗ a sum of 8 items within 6 calls: got (1, 2)"),
        ({"manager_plan_only": True}, "✗ a sum of 8 items within 20 calls: got "),
        ({"cheapest_if_none_fits": True}, "✗ a sum of 6 items within 1 call: got (1, 2)"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_shape_catches_calls_ranked_first_the_managers_plan_alone_and_a_shape_when_none_fits(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "05.shape", choose_with(**mistake), line)
