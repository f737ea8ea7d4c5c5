"""The checks of notebook 10's exercises: each fails on the stub and on plausible mistakes, and passes
on the solution notebook's own code. No test here starts a cluster."""

import math
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import notebook_code
import pytest

from agentlab.agents import Agent
from agentlab.course.checks import CheckFailed, check

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "10_across_machines.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["10.speedup", "10.break-even", "10.travel"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 10.speedup ---------------------------------------------------------------------------------


def test_speedup_passes_the_solution(capsys):
    check("10.speedup", solution("speedup"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_speedup_fails_a_formula_with_fractional_rounds(capsys):
    def without_rounds(tasks, workers, seconds, overhead):  # W·t/(t+o): a full last round, W ≤ N
        return workers * seconds / (seconds + overhead)

    with pytest.raises(CheckFailed, match="how many rounds the workers go through"):
        check("10.speedup", without_rounds)
    out = capsys.readouterr().out
    assert "✗ 9 tasks of 1 s on 4 workers" in out and "✗ 3 tasks of 5 s on 8 workers" in out
    assert "✓ a 1,000-task batch" in out  # 1,000 splits evenly over 8


def test_speedup_fails_an_overhead_paid_once_for_the_batch(capsys):
    def overhead_once(tasks, workers, seconds, overhead):
        return tasks * seconds / (math.ceil(tasks / workers) * seconds + overhead)

    with pytest.raises(CheckFailed):
        check("10.speedup", overhead_once)
    assert "✗ 40 short steps of 0.3 ms" in capsys.readouterr().out


def test_speedup_fails_a_formula_that_ignores_the_overhead(capsys):
    def free(tasks, workers, seconds, overhead):
        return tasks / math.ceil(tasks / workers)

    with pytest.raises(CheckFailed):
        check("10.speedup", free)
    out = capsys.readouterr().out
    assert "✗ 40 short steps" in out and "✓ no overhead: 7 tasks" in out


# --- 10.break-even ------------------------------------------------------------------------------


def test_break_even_passes_the_solution(capsys):
    check("10.break-even", solution("break_even"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_break_even_fails_the_large_batch_limit_everywhere(capsys):
    def limit(tasks, workers, overhead):  # o/(W−1): right only for a large, even batch
        return None if workers == 1 else overhead / (workers - 1)

    with pytest.raises(CheckFailed, match="a small batch is not a large one"):
        check("10.break-even", limit)
    out = capsys.readouterr().out
    assert "✓ a large batch: 1,000 tasks on 2 workers" in out
    assert "✗ 5 tasks on 2 workers" in out and "✗ one task on 4 workers" in out


def test_break_even_fails_an_answer_that_divides_by_zero_on_one_worker(capsys):
    def unguarded(tasks, workers, overhead):
        rounds = math.ceil(tasks / workers)
        return rounds * overhead / (tasks - rounds)

    with pytest.raises(CheckFailed):
        check("10.break-even", unguarded)
    assert "✗ one worker: 50 tasks, 15 ms overhead: raised ZeroDivisionError" in capsys.readouterr().out


def test_break_even_fails_an_answer_that_says_zero_for_never(capsys):
    def zero(tasks, workers, overhead):
        rounds = math.ceil(tasks / workers)
        return 0.0 if tasks <= rounds else rounds * overhead / (tasks - rounds)

    with pytest.raises(CheckFailed):
        check("10.break-even", zero)
    assert "✗ one worker: 50 tasks, 15 ms overhead: got 0" in capsys.readouterr().out


# --- 10.travel ----------------------------------------------------------------------------------


def look_up(db, step):
    row = db.execute("SELECT people FROM census WHERE island = ?", (step.instruction,)).fetchone()
    return row[0] if row else "unknown"


def test_travel_passes_the_solution(capsys):
    check("10.travel", solution("census_clerk"))
    assert "All 3 checks passed." in capsys.readouterr().out


def test_travel_fails_the_notebooks_held_connection_with_the_pickling_error(capsys):
    def connected_clerk(path):
        db = sqlite3.connect(path, check_same_thread=False)  # held by the agent: it cannot travel
        return Agent("clerk", lambda step, context: look_up(db, step))

    with pytest.raises(CheckFailed, match="connect to the census inside the agent's function"):
        check("10.travel", connected_clerk)
    out = capsys.readouterr().out
    assert "✓ four lookups on threads" in out  # it works on threads: only travel shows the fault
    pickles = "✗ the agent pickles with cloudpickle, as a step sent to a worker must"
    assert f"{pickles}: cloudpickle.dumps(agent) raised TypeError" in out


def test_travel_fails_an_agent_that_holds_a_lock(capsys):
    def locked_clerk(path):
        lock = threading.Lock()

        def act(step, context):
            with lock, closing(sqlite3.connect(path)) as db:
                return look_up(db, step)

        return Agent("clerk", act)

    with pytest.raises(CheckFailed):
        check("10.travel", locked_clerk)
    assert "✗ the agent pickles with cloudpickle" in capsys.readouterr().out


def test_travel_fails_a_census_read_once_when_the_agent_is_built(capsys):
    def read_once(path):
        with closing(sqlite3.connect(path)) as db:
            census = dict(db.execute("SELECT island, people FROM census"))  # it pickles, and goes stale
        return Agent("clerk", lambda step, context: census.get(step.instruction, "unknown"))

    with pytest.raises(CheckFailed):
        check("10.travel", read_once)
    out = capsys.readouterr().out
    assert "✓ the agent pickles" in out
    fresh = "✗ its copy reads the census when a step runs, after a figure in it was corrected"
    assert f"{fresh}: got '4417'" in out


def test_travel_fails_an_agent_that_reads_another_census_than_the_path(capsys, tmp_path):
    own = tmp_path / "census.db"
    with closing(sqlite3.connect(own)) as db, db:
        db.execute("CREATE TABLE census (island TEXT PRIMARY KEY, people TEXT)")
        db.execute("INSERT INTO census VALUES ('Varra', '1200')")

    def fixed(path):
        def act(step, context):
            with closing(sqlite3.connect(own)) as db:
                return look_up(db, step)

        return Agent("clerk", act)

    with pytest.raises(CheckFailed):
        check("10.travel", fixed)
    assert "✗ four lookups on threads" in capsys.readouterr().out


def test_travel_fails_a_builder_that_returns_a_plain_function(capsys):
    with pytest.raises(CheckFailed):
        check("10.travel", lambda path: (lambda step, context: "unknown"))
    assert "✗ census_clerk(path) builds an Agent for the role \"clerk\"" in capsys.readouterr().out


def test_the_hints_point_at_the_mistake_without_stating_the_formula():
    from agentlab.course.checks import find

    for exercise in ("10.speedup", "10.break-even"):
        hint = find(exercise).hint
        assert not any(sign in hint for sign in ("⌈", "·", "N/W", "(t + o)")), hint


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def floor_rounds(tasks, workers, seconds, overhead):
    """Counts the rounds with floor division: a last round that is not full is not counted."""
    return tasks * seconds / (max(1, tasks // workers) * (seconds + overhead))


def upside_down(tasks, workers, seconds, overhead):
    """The cluster's time over one process's: the slowdown, not the speedup."""
    return math.ceil(tasks / workers) * (seconds + overhead) / (tasks * seconds)


def rounded(tasks, workers, seconds, overhead):
    """The right speedup, rounded to two places for the printout."""
    return round(tasks * seconds / (math.ceil(tasks / workers) * (seconds + overhead)), 2)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (floor_rounds, "✗ 9 tasks of 1 s on 4 workers (the last round is not full), 0.1 s overhead: got"),
        (upside_down, "✗ a 1,000-task batch of 2 s model calls on 8 workers, 15 ms overhead each: got"),
        (rounded, "✗ 9 tasks of 1 s on 4 workers (the last round is not full), 0.1 s overhead: got 2.73"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_speedup_catches_floor_rounds_the_slowdown_and_a_rounded_answer(wrong, line, capsys):
    notebook_code.caught(capsys, "10.speedup", wrong, line)


def floor_rounds_even(tasks, workers, overhead):
    """Counts the rounds with floor division, so 5 tasks on 2 workers take 2 rounds."""
    rounds = max(1, tasks // workers)
    return None if tasks <= rounds else rounds * overhead / (tasks - rounds)


def infinity_for_never(tasks, workers, overhead):
    """Says "never" with an infinite step length instead of None."""
    rounds = math.ceil(tasks / workers)
    return math.inf if tasks <= rounds else rounds * overhead / (tasks - rounds)


def overhead_once_a_batch(tasks, workers, overhead):
    """Solves N·t = ⌈N/W⌉·t + o: the overhead paid once for the batch, not by every round."""
    rounds = math.ceil(tasks / workers)
    return None if tasks <= rounds else overhead / (tasks - rounds)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (floor_rounds_even, "✗ 5 tasks on 2 workers (a last round of one), 0.1 s overhead: got"),
        (infinity_for_never, "✗ one worker: 50 tasks, 15 ms overhead: got inf"),
        (overhead_once_a_batch, "✗ a large batch: 1,000 tasks on 2 workers, 15 ms overhead: got"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_break_even_catches_floor_rounds_infinity_for_never_and_one_overhead_a_batch(wrong, line, capsys):
    notebook_code.caught(capsys, "10.break-even", wrong, line)


def census_as_numbers(path):
    """Hands back the population as a number, where the exercise asks for it as text."""

    def act(step, context):
        with closing(sqlite3.connect(path)) as db:
            row = db.execute("SELECT people FROM census WHERE island = ?", (step.instruction,)).fetchone()
        return int(row[0]) if row else "unknown"

    return Agent("clerk", act)


def none_for_a_missing_island(path):
    """Answers an island the census lacks with an empty answer instead of "unknown"."""

    def act(step, context):
        with closing(sqlite3.connect(path)) as db:
            row = db.execute("SELECT people FROM census WHERE island = ?", (step.instruction,)).fetchone()
        return row[0] if row else ""

    return Agent("clerk", act)


def another_role(path):
    """The right agent, under the role "census" instead of "clerk"."""
    right = solution("census_clerk")(path)
    return Agent("census", right.act, description=right.description)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (census_as_numbers, "✗ four lookups on threads, two at a time"),
        (none_for_a_missing_island, "✗ four lookups on threads, two at a time"),
        (another_role, '✗ census_clerk(path) builds an Agent for the role "clerk": got Agent('),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_travel_catches_numbers_for_text_an_empty_answer_and_another_role(wrong, line, capsys):
    notebook_code.caught(capsys, "10.travel", wrong, line)
