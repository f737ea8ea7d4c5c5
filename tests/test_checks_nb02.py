"""Notebook 02's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

from pathlib import Path

import notebook_code
import pytest

from agentlab.checks import CheckFailed, check

ROOT = Path(__file__).resolve().parents[1]
NAME = "02_plans_are_dags.ipynb"


def exercise_cell(marker: str) -> str:
    return notebook_code.exercise_cell(ROOT / "exercises" / NAME, marker)


@pytest.fixture(scope="module")
def solution():
    return notebook_code.run_cells(ROOT / "solutions" / NAME, answers=True)


@pytest.fixture(scope="module")
def exercise():
    return notebook_code.run_cells(ROOT / "exercises" / NAME, answers=False)


# --- 02.critical-path -----------------------------------------------------------------------------


def test_critical_path_passes_on_the_solution(solution, capsys):
    check("02.critical-path", solution["longest_chain"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_critical_path_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("02.critical-path", exercise["longest_chain"])


def in_written_order_to_the_final_step(plan, durations):
    """Walks the steps as written (not in topological order) and ends the path at the final step."""
    finish, before = {}, {}
    for step in plan:
        last = max(step.depends_on, key=lambda d: finish[d], default=None)
        finish[step.id] = (finish[last] if last else 0.0) + durations[step.id]
        before[step.id] = last
    path, end = [], plan.final_step.id
    length = finish[end]
    while end:
        path.append(end)
        end = before[end]
    return path[::-1], length


def test_critical_path_fails_in_written_order_and_ending_at_the_final_step(capsys):
    with pytest.raises(CheckFailed, match="3 of 8 checks failed"):
        check("02.critical-path", in_written_order_to_the_final_step)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ a plan written out of order (a step before its dependencies): raised KeyError"
    )
    assert failed[1] == (
        "✗ the longest chain ends at a step that is not the last one: got (['q', 'r'], 2.0); "
        "the longest chain takes 6 s"
    )


# --- 02.makespan ----------------------------------------------------------------------------------


def test_makespan_passes_on_the_solution(solution, capsys):
    check("02.makespan", solution["finish_time"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_makespan_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("02.makespan", exercise["finish_time"])


def column_by_column(plan, durations, workers):
    """Runs the plan a column at a time: nothing of the next column starts before the whole column ends."""
    done, total = set(), 0.0
    while len(done) < len(plan):
        column = [s for s in plan if s.id not in done and set(s.depends_on) <= done]
        ends = [0.0] * workers  # each worker's busy-until time, within this column
        for step in column:
            k = ends.index(min(ends))
            ends[k] += durations[step.id]
        total += max(ends)
        done |= {s.id for s in column}
    return total


def test_makespan_fails_when_steps_wait_for_their_whole_column(capsys):
    with pytest.raises(CheckFailed, match="2 of 8 checks failed"):
        check("02.makespan", column_by_column)
    assert notebook_code.failed_cases(capsys) == [
        "✗ a step starts when its own dependencies are done, not its whole column: "
        "got 4.0, the policy finishes at 3 s",
        "✗ a plan written out of order: got 8.0, the policy finishes at 6 s",
    ]


# --- 02.longest-first -----------------------------------------------------------------------------


def test_longest_first_passes_on_the_solution(solution, capsys):
    check("02.longest-first", solution["longest_chain_first"])
    assert "All 7 checks passed." in capsys.readouterr().out


def test_longest_first_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("02.longest-first", exercise["longest_chain_first"])


def longest_step_first(plan, durations):
    """Sorts by each step's own duration: a short step at the head of a long chain still goes last."""
    return type(plan)(sorted(plan, key=lambda s: -durations[s.id]))


def test_longest_first_fails_when_sorting_by_the_steps_own_duration(capsys):
    with pytest.raises(CheckFailed, match="1 of 7 checks failed"):
        check("02.longest-first", longest_step_first)
    assert notebook_code.failed_cases(capsys) == [
        "✗ a short step heading the longest chain, on 2 workers: lower than 11 s: "
        "the rewritten plan finishes at 11 s"
    ]


def test_longest_first_refuses_a_rewrite_that_drops_a_dependency(capsys):
    from dataclasses import replace

    def cut(plan, durations):
        return type(plan)([replace(s, depends_on=()) for s in plan])

    with pytest.raises(CheckFailed, match="7 of 7 checks failed"):
        check("02.longest-first", cut)
    assert "must keep every step as it is" in capsys.readouterr().out
