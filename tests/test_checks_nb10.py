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
