"""Notebook 02's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

from pathlib import Path

import notebook_code
import pytest

from agentlab.course.checks import CheckFailed, check

notebook_code.skip_without_solutions()
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
    assert "All 9 checks passed." in capsys.readouterr().out


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
    with pytest.raises(CheckFailed, match="3 of 9 checks failed"):
        check("02.critical-path", in_written_order_to_the_final_step)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ a plan written out of order (a step before its dependencies): raised KeyError"
    )
    assert failed[1] == (  # what is wrong with the chain, not the right one
        "✗ the longest chain ends at a step that is not the last one: the chain ['q', 'r'] takes 2 s: "
        "a longer one exists"
    )


def first_dependency(plan, durations):
    """Follows each step's first-listed dependency instead of the one that finishes last."""
    finish, before = {}, {}
    for step in plan.topological_order():
        first = step.depends_on[0] if step.depends_on else None
        finish[step.id] = (finish[first] if first else 0.0) + durations[step.id]
        before[step.id] = first
    end = max(finish, key=finish.get)
    path, length = [], finish[end]
    while end:
        path.append(end)
        end = before[end]
    return path[::-1], length


def right_chain(plan, durations):
    """The solution's answer (the kit's `plan.critical_path` raises inside the check: it is forbidden)."""
    return notebook_code.define(ROOT / "solutions" / NAME, "longest_chain")(plan, durations)


def from_the_end(plan, durations):
    """The right chain and length, but the chain listed from its last step back to its first."""
    path, length = right_chain(plan, durations)
    return list(path)[::-1], length


def steps_not_seconds(plan, durations):
    """The right chain, but its length counted in steps."""
    path, _ = right_chain(plan, durations)
    return list(path), len(path)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            first_dependency,
            "✗ the chain runs through the slower of two dependencies, listed second: the chain",
        ),
        (from_the_end, "✗ the report plan: ['s4', 's3', 's1'] is not a chain of dependencies"),
        (
            steps_not_seconds,
            "✗ the report plan: the chain ['s1', 's3', 's4'] is the longest, but you returned 3",
        ),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_critical_path_says_whether_the_chain_or_its_length_is_wrong(wrong, line, capsys):
    notebook_code.caught(capsys, "02.critical-path", wrong, line)


# --- 02.makespan ----------------------------------------------------------------------------------


def test_makespan_passes_on_the_solution(solution, capsys):
    check("02.makespan", solution["finish_time"])
    assert "All 12 checks passed." in capsys.readouterr().out


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
    with pytest.raises(CheckFailed, match="3 of 12 checks failed"):
        check("02.makespan", column_by_column)
    assert notebook_code.failed_cases(capsys)[:2] == [  # what came back, not the right time
        "✗ a step starts when its own dependencies are done, not its whole column: got 4.0 (too late)",
        "✗ a plan written out of order: got 8.0 (too late)",
    ]


def one_end_at_a_time(latest_first=False, by_duration=False):
    """finish_time that takes the running steps' ends one at a time (the earliest first; among equal
    ends the one started first, or with `latest_first` the one started last) and fills the freed
    worker before looking at the next end; with `by_duration`, ready steps go longest first."""

    def finish_time(plan, durations, workers):
        now, done, running, waiting = 0.0, set(), [], list(plan)
        if by_duration:
            waiting.sort(key=lambda s: -durations[s.id])
        while waiting or running:
            for step in list(waiting):
                if len(running) < workers and set(step.depends_on) <= done:
                    running.append((now + durations[step.id], step.id))
                    waiting.remove(step)
            ends = [end for end, _ in running]
            k = (
                max(i for i, e in enumerate(ends) if e == min(ends))
                if latest_first
                else ends.index(min(ends))
            )
            now, step_id = running.pop(k)
            done.add(step_id)
            if by_duration:  # and, being greedy about it, finish everything due now
                for end, other in [r for r in running if r[0] == now]:
                    running.remove((end, other))
                    done.add(other)
        return now

    return finish_time


@pytest.mark.parametrize(
    "wrong, line",
    [
        (one_end_at_a_time(), "✗ two steps end at the same moment: both finish before anything new starts"),
        (
            one_end_at_a_time(latest_first=True),
            "✗ the same, with the two steps' dependants the other way round",
        ),
        (one_end_at_a_time(by_duration=True), "✗ the six-island plan on 3 workers: got 9.0 (too soon)"),
    ],
    ids=["earliest-start-first", "latest-start-first", "longest-first"],
)
def test_makespan_catches_steps_finished_one_at_a_time_and_ready_steps_taken_by_duration(wrong, line, capsys):
    notebook_code.caught(capsys, "02.makespan", wrong, line)


# --- 02.longest-first -----------------------------------------------------------------------------


def test_longest_first_passes_on_the_solution(solution, capsys):
    check("02.longest-first", solution["longest_chain_first"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_longest_first_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("02.longest-first", exercise["longest_chain_first"])


def longest_step_first(plan, durations):
    """Sorts by each step's own duration: a short step at the head of a long chain still goes last."""
    return type(plan)(sorted(plan, key=lambda s: -durations[s.id]))


def test_longest_first_fails_when_sorting_by_the_steps_own_duration(capsys):
    with pytest.raises(CheckFailed, match="1 of 8 checks failed"):
        check("02.longest-first", longest_step_first)
    assert notebook_code.failed_cases(capsys) == [
        "✗ a short step heading the longest chain, on 2 workers: sooner than as written: "
        "the rewrite finishes at 11 s, the plan as written at 11 s"
    ]


def one_step_ahead(plan, durations):
    """Looks one step ahead only: its own duration plus the longest step that waits for it directly."""
    waiters = {s.id: [t for t in plan if s.id in t.depends_on] for s in plan}
    ahead = {s.id: durations[s.id] + max((durations[w.id] for w in waiters[s.id]), default=0.0) for s in plan}
    return type(plan)(sorted(plan, key=lambda s: -ahead[s.id]))


def most_steps_ahead(plan, durations):
    """Counts the steps of the longest chain a step heads, not their seconds."""
    waiters = {s.id: [t.id for t in plan if s.id in t.depends_on] for s in plan}
    heads = {}
    for step in reversed(plan.topological_order()):
        heads[step.id] = 1 + max((heads[w] for w in waiters[step.id]), default=0)
    return type(plan)(sorted(plan, key=lambda s: -heads[s.id]))


@pytest.mark.parametrize(
    "wrong, line",
    [
        (one_step_ahead, "✗ a short step heading the longest chain, on 2 workers: sooner than as written"),
        (most_steps_ahead, "✗ the six-island plan on 3 workers: sooner than as written"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_longest_first_catches_priorities_that_do_not_reach_the_end_in_seconds(wrong, line, capsys):
    notebook_code.caught(capsys, "02.longest-first", wrong, line)


def test_longest_first_refuses_a_rewrite_that_drops_a_dependency(capsys):
    from dataclasses import replace

    def cut(plan, durations):
        return type(plan)([replace(s, depends_on=()) for s in plan])

    with pytest.raises(CheckFailed, match="8 of 8 checks failed"):
        check("02.longest-first", cut)
    assert "must keep every step as it is" in capsys.readouterr().out


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def truncated(function):
    """The solution, with the number it returns cut to a whole number of seconds."""

    def wrong(*args):
        got = function(*args)
        return (got[0], int(got[1])) if isinstance(got, tuple) else int(got)

    return wrong


def emptying(function):
    """The solution, which then empties the durations dict its caller handed it."""

    def wrong(plan, durations, *rest):
        got = function(plan, durations, *rest)
        durations.clear()
        return got

    return wrong


def by_total_work_below(plan, durations):
    """Orders steps by all the work waiting below them, not by the longest chain below them."""
    waiting = {s.id: {t.id for t in plan if s.id in t.depends_on} for s in plan}

    def below(step_id, seen):
        for w in waiting[step_id] - seen:
            seen.add(w)
            below(w, seen)
        return seen

    work = {s.id: durations[s.id] + sum(durations[b] for b in below(s.id, set())) for s in plan}
    return type(plan)(sorted(plan, key=lambda s: -work[s.id]))


@pytest.mark.parametrize(
    "exercise, name, wrong, line",
    [
        ("02.critical-path", "longest_chain", truncated, "✗ durations that are not whole seconds: the chain"),
        (
            "02.critical-path",
            "longest_chain",
            emptying,
            "✗ the report plan: your function changed the durations",
        ),
        (
            "02.makespan",
            "finish_time",
            truncated,
            "✗ durations that are not whole seconds, on 2 workers: got 4",
        ),
        ("02.makespan", "finish_time", emptying, "✗ the report plan on 1 worker: your function changed"),
        (
            "02.longest-first",
            "longest_chain_first",
            emptying,
            "✗ the six-island plan on 3 workers: your function",
        ),
    ],
    ids=[
        "critical-path-int",
        "critical-path-empties",
        "makespan-int",
        "makespan-empties",
        "longest-first-empties",
    ],
)
def test_lengths_cut_to_whole_seconds_and_a_caller_s_dict_emptied_are_caught(
    solution, exercise, name, wrong, line, capsys
):
    notebook_code.caught(capsys, exercise, wrong(solution[name]), line)


def test_longest_first_catches_a_priority_by_all_the_work_below_a_step(capsys):
    notebook_code.caught(
        capsys,
        "02.longest-first",
        by_total_work_below,
        "✗ the most work below a step is not its longest chain",
    )


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


@pytest.mark.parametrize(
    "exercise, name, edits, caught",
    [
        (
            "02.makespan",
            "finish_time",
            [("waiting = list(plan)", "waiting = list(plan.topological_order())")],
            ["a plan written out of dependency order, on 2 workers"],
        ),
        (
            "02.longest-first",
            "longest_chain_first",
            [("heads = {}", "heads = {}; durations = step_durations(plan, STUB_TEAM)")],
            ["a plan written backwards, no durations on its steps: the rewrite on 2 workers"],
        ),
        (
            "02.longest-first",
            "longest_chain_first",
            [("durations[step.id] +", "(durations[step.id] if step.duration is None else step.duration) +")],
            ["a plan written backwards, stale durations on its steps: the rewrite on 2 workers"],
        ),
        (
            "02.longest-first",
            "longest_chain_first",
            [
                ("reversed(plan.topological_order())", "reversed(list(plan))"),
                ("heads[w] for", "heads.get(w, 0) for"),
            ],
            ["a plan written backwards, no durations on its steps: the rewrite on 2 workers"],
        ),
        (
            "02.critical-path",
            "longest_chain",
            [("return chain[::-1], length", "return chain[::-1], round(length, 1)")],
            ["a chain of a quarter-second step and a half-second one"],
        ),
    ],
)
def test_hidden_cases_catch_what_the_exercises_own_cases_let_through(exercise, name, edits, caught):
    import graded

    wrong = graded.changed("02", name, *edits)
    assert set(caught) <= set(graded.hidden_failures(exercise, wrong))
    assert graded.graded(exercise, wrong).status == "failed"
