"""Notebook 03's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

import json
import re
from pathlib import Path

import notebook_code
import pytest

from agentlab import Plan, PlanError
from agentlab.checks import CheckFailed, check

ROOT = Path(__file__).resolve().parents[1]
NAME = "03_llm_planner.ipynb"


def exercise_cell(marker: str) -> str:
    return notebook_code.exercise_cell(ROOT / "exercises" / NAME, marker)


@pytest.fixture(scope="module")
def solution():
    return notebook_code.run_cells(ROOT / "solutions" / NAME, answers=True)


@pytest.fixture(scope="module")
def exercise():
    return notebook_code.run_cells(ROOT / "exercises" / NAME, answers=False)


# --- 03.read-plan --------------------------------------------------------------------------------


def test_read_plan_passes_on_the_solution(solution, capsys):
    check("03.read-plan", solution["read_plan"])
    assert "All 10 checks passed." in capsys.readouterr().out


def test_read_plan_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("03.read-plan", exercise["read_plan"])


def greedy_braces(text, roles):
    """Cuts from the first '{' to the last '}' with a greedy regex, and lets json's own error out."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    return Plan.from_dict(json.loads(match.group(0)), roles=roles)


def test_read_plan_fails_on_a_greedy_regex_that_lets_other_errors_out(capsys):
    with pytest.raises(CheckFailed, match="5 of 10 checks failed"):
        check("03.read-plan", greedy_braces)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ prose after the JSON with braces of its own: the plan: raised JSONDecodeError"
    )
    assert failed[1].startswith(
        "✗ a reply cut off in the middle of the plan: a PlanError: raised JSONDecodeError"
    )
    assert failed[-1].startswith("✗ no JSON at all: a PlanError: raised AttributeError")


def test_read_plan_fails_when_the_roles_are_not_checked(solution, capsys):
    def without_roles(text, roles):
        return solution["read_plan"](text, None)

    with pytest.raises(CheckFailed, match="1 of 10 checks failed"):
        check("03.read-plan", without_roles)
    assert notebook_code.failed_cases(capsys) == [
        "✗ valid JSON with a role the team lacks: a PlanError: returned a plan"
    ]


# --- 03.ends-in-report ----------------------------------------------------------------------------


def test_ends_in_report_passes_on_the_solution(solution, capsys):
    check("03.ends-in-report", solution["ends_in_one_report"])
    assert "All 6 checks passed." in capsys.readouterr().out


def test_ends_in_report_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("03.ends-in-report", exercise["ends_in_one_report"])


def last_step_is_the_writers(plan):
    """Looks only at the last step written, so a dangling lookup passes and a report written first fails."""
    last = plan.steps[-1]
    if last.role != "writer":
        raise PlanError(f"the plan ends with step {last.id!r} ({last.role}), not a report")


def test_ends_in_report_fails_when_only_the_last_written_step_is_looked_at(capsys):
    with pytest.raises(CheckFailed, match="3 of 6 checks failed"):
        check("03.ends-in-report", last_step_is_the_writers)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith("✗ the report written first: accepted: raised PlanError")
    assert failed[1] == "✗ a lookup nobody uses, beside the report: a PlanError naming s2: accepted"
    assert failed[2] == "✗ two reports: a PlanError naming s2 or s3: accepted"


def test_the_rules_message_names_the_step(solution):
    plan = Plan.from_dict(
        {
            "steps": [
                {"id": "s1", "role": "researcher", "instruction": "Look.", "depends_on": []},
                {"id": "s2", "role": "researcher", "instruction": "Look again.", "depends_on": ["s1"]},
            ]
        }
    )
    with pytest.raises(PlanError, match="step 's2' \\(researcher\\) ends the plan"):
        solution["ends_in_one_report"](plan)


# --- 03.score -------------------------------------------------------------------------------------


def test_score_passes_on_the_solution(solution, capsys):
    check("03.score", solution["score"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_score_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("03.score", exercise["score"])


def exact_match_and_right_runs_only(tasks, solve):
    """Grades by string equality with the gold answer and averages calls over the right runs only."""
    rows = {}
    for task in tasks:
        run = solve(task.question)
        right = run.deliverable == task.answer
        for key in (task.family, "all"):
            row = rows.setdefault(key, {"right": 0, "tasks": 0, "calls": 0})
            row["right"] += right
            row["tasks"] += 1
            row["calls"] += len(run.calls) if right else 0
    for row in rows.values():
        row["calls"] /= max(row["right"], 1)
    return rows


def test_score_fails_on_exact_matching_and_calls_of_right_runs_only(capsys):
    with pytest.raises(CheckFailed):
        check("03.score", exact_match_and_right_runs_only)
    failed = notebook_code.failed_cases(capsys)
    assert any(line.startswith("✗ a batch of 16 tasks: chain: got {'right': 0") for line in failed)
    assert any(line.startswith("✗ a batch of 16 tasks: fanout") for line in failed)
