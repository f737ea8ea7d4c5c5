"""Notebook 03's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

import json
import re
from pathlib import Path

import notebook_code
import pytest

from agentlab import Plan, PlanError
from agentlab.course.checks import CheckFailed, check

notebook_code.skip_without_solutions()
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
    assert "All 11 checks passed." in capsys.readouterr().out


def test_read_plan_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("03.read-plan", exercise["read_plan"])


def greedy_braces(text, roles):
    """Cuts from the first '{' to the last '}' with a greedy regex, and lets json's own error out."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    return Plan.from_dict(json.loads(match.group(0)), roles=roles)


def test_read_plan_fails_on_a_greedy_regex_that_lets_other_errors_out(capsys):
    with pytest.raises(CheckFailed, match="6 of 11 checks failed"):
        check("03.read-plan", greedy_braces)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ prose after the JSON with braces of its own: the plan: raised JSONDecodeError"
    )
    assert failed[2].startswith(
        "✗ a reply cut off in the middle of the plan: a PlanError: raised JSONDecodeError"
    )
    assert failed[-1].startswith("✗ no JSON at all: a PlanError: raised AttributeError")


def last_brace(text, roles):
    """Cuts from the first '{' to the last '}' (as a regex would) and turns JSON errors into PlanErrors."""
    try:
        data = json.loads(text[text.find("{") : text.rfind("}") + 1])
    except json.JSONDecodeError as e:
        raise PlanError(f"not JSON: {e}") from None
    return Plan.from_dict(data, roles=roles)


def none_when_unreadable(text, roles):
    """Returns None instead of raising when the reply holds no readable plan."""
    try:
        data, _ = json.JSONDecoder().raw_decode(text, text.find("{"))
        return Plan.from_dict(data, roles=roles)
    except (ValueError, PlanError):
        return None


def repairs_commas(text, roles):
    """Repairs a trailing comma before reading the first object: a guessed plan instead of a refusal."""
    text = re.sub(r",\s*([\]}])", r"\1", text)
    try:
        data, _ = json.JSONDecoder().raw_decode(text, max(text.find("{"), 0))
    except json.JSONDecodeError as e:
        raise PlanError(str(e)) from None
    return Plan.from_dict(data, roles=roles)


@pytest.mark.parametrize(
    "wrong, line",
    [
        (last_brace, "✗ prose after the JSON with braces of its own: the plan: raised PlanError"),
        (none_when_unreadable, "✗ a reply cut off in the middle of the plan: a PlanError: returned None"),
        (repairs_commas, "✗ a trailing comma: a PlanError: returned a plan"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_read_plan_catches_the_last_brace_a_silent_none_and_a_repair(wrong, line, capsys):
    notebook_code.caught(capsys, "03.read-plan", wrong, line)


def test_read_plan_fails_when_the_roles_are_not_checked(solution, capsys):
    def without_roles(text, roles):
        return solution["read_plan"](text, None)

    with pytest.raises(CheckFailed, match="1 of 11 checks failed"):
        check("03.read-plan", without_roles)
    assert notebook_code.failed_cases(capsys) == [
        "✗ valid JSON with a role the team lacks: a PlanError: returned a plan"
    ]


# --- 03.ends-in-report ----------------------------------------------------------------------------


def test_ends_in_report_passes_on_the_solution(solution, capsys):
    check("03.ends-in-report", solution["ends_in_one_report"])
    assert "All 7 checks passed." in capsys.readouterr().out


def test_ends_in_report_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("03.ends-in-report", exercise["ends_in_one_report"])


def last_step_is_the_writers(plan):
    """Looks only at the last step written, so a dangling lookup passes and a report written first fails."""
    last = plan.steps[-1]
    if last.role != "writer":
        raise PlanError(f"the plan ends with step {last.id!r} ({last.role}), not a report")


def test_ends_in_report_fails_when_only_the_last_written_step_is_looked_at(capsys):
    with pytest.raises(CheckFailed, match="3 of 7 checks failed"):
        check("03.ends-in-report", last_step_is_the_writers)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith("✗ the report written first: accepted: raised PlanError")
    assert failed[1] == "✗ a lookup nobody uses, beside the report: a PlanError naming s2: accepted"
    assert failed[2] == "✗ two reports: a PlanError naming s2 or s3: accepted"


def the_final_step_only(plan):
    """Looks at plan.final_step alone, which is one end even when a plan has two."""
    if plan.final_step.role != "writer":
        raise PlanError(f"step {plan.final_step.id!r} ends the plan, not a report")


def any_single_end(plan):
    """Counts the ends, but never asks whose step the end is."""
    used = {dep for step in plan for dep in step.depends_on}
    ends = [step.id for step in plan if step.id not in used]
    if len(ends) != 1:
        raise PlanError(f"the plan has {len(ends)} ends: {ends}")


def unquoted(plan):
    """The right rule, with the step named without quotes."""
    used = {dep for step in plan for dep in step.depends_on}
    for step in plan:
        if step.id not in used and step.role != "writer":
            raise PlanError(f"step {step.id} ends the plan")
    if sum(step.id not in used for step in plan) > 1:
        raise PlanError("the plan ends in more than one report")


@pytest.mark.parametrize(
    "wrong, line",
    [
        (the_final_step_only, "✗ a lookup nobody uses, beside the report: a PlanError naming s2: accepted"),
        (any_single_end, "✗ a plan that stops before its report: a PlanError naming s2: accepted"),
        (unquoted, "✗ a plan that stops before its report: a PlanError naming s2: raised PlanError: step s2"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_ends_in_report_catches_one_end_looked_at_roles_not_asked_and_a_bare_name(wrong, line, capsys):
    notebook_code.caught(capsys, "03.ends-in-report", wrong, line)


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
    assert any(line.startswith("✗ a mixed batch: chain: got {'right': 0") for line in failed)
    assert any(line.startswith("✗ a mixed batch: fanout") for line in failed)


def score_with(right_by_status=False, no_all=False, planned_only=False):
    """score with one mistake: a run counted right when it ended "done", no "all" row, or runs that
    never got a plan left out."""

    def score(tasks, solve):
        rows = {}
        for task in tasks:
            run = solve(task.question)
            if planned_only and run.plan is None:
                continue
            right = run.status == "done" if right_by_status else task.check(run.deliverable)
            for key in (task.family,) if no_all else (task.family, "all"):
                row = rows.setdefault(key, {"right": 0, "tasks": 0, "calls": 0})
                row["right"] += right
                row["tasks"] += 1
                row["calls"] += len(run.calls)
        for row in rows.values():
            row["calls"] /= row["tasks"]
        return rows

    return score


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"right_by_status": True}, "✗ a mixed batch: single: got {'right': 4"),
        (
            {"no_all": True},
            "✗ a mixed batch: a row per family, and 'all': rows ['chain', 'fanout', 'single']",
        ),
        ({"planned_only": True}, "✗ a mixed batch: fanout"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_score_catches_status_as_rightness_a_missing_all_row_and_unplanned_runs_left_out(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "03.score", score_with(**mistake), line)


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def score_counting(counted):
    """The solution's score, with calls counted by `counted(run)` instead of len(run.calls)."""

    def score(tasks, solve):
        rows = {}
        for task in tasks:
            run = solve(task.question)
            for key in (task.family, "all"):
                row = rows.setdefault(key, {"right": 0, "tasks": 0, "calls": 0})
                row["right"] += task.check(run.deliverable)
                row["tasks"] += 1
                row["calls"] += counted(run)
        for row in rows.values():
            row["calls"] /= row["tasks"]
        return rows

    return score


@pytest.mark.parametrize(
    "counted",
    [
        lambda run: sum(1 for step, _, _ in run.calls if step != "plan" and not step.startswith("replan")),
        lambda run: sum(1 for step, _, _ in run.calls if run.plan is not None and step in run.plan.ids),
    ],
    ids=["executors-only", "steps-of-the-plan-only"],
)
def test_score_catches_the_planners_calls_left_out(counted, capsys):
    notebook_code.caught(capsys, "03.score", score_counting(counted), "✗ a mixed batch: all: got")


def from_the_first_brace(text, roles):
    """Decodes from the first '{' in the reply, even when it belongs to a label, not the plan."""
    import json

    from agentlab.plan import Plan, PlanError

    start = text.find("{")
    if start < 0:
        raise PlanError("no JSON")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as e:
        raise PlanError(str(e)) from None
    return Plan.from_dict(data, roles=roles)


def test_read_plan_catches_a_reader_that_starts_at_a_labels_brace(capsys):
    notebook_code.caught(
        capsys,
        "03.read-plan",
        from_the_first_brace,
        "✗ a label with braces of its own before the JSON: the plan",
    )


def one_end_and_a_writer_somewhere(plan):
    """Asks for one end and for a writer in the plan, but never whether the end is the writer's."""
    used = {dep for step in plan for dep in step.depends_on}
    ends = [step.id for step in plan if step.id not in used]
    if len(ends) != 1:
        raise PlanError(f"the plan has {len(ends)} ends: {', '.join(map(repr, ends))}")
    if not any(step.role == "writer" for step in plan):
        raise PlanError(f"no report: the plan ends with {ends[0]!r}")


def says_false(plan):
    """Right about which plans are wrong, but says so by returning False instead of raising."""
    used = {dep for step in plan for dep in step.depends_on}
    ends = [step for step in plan if step.id not in used]
    return len(ends) == 1 and ends[0].role == "writer"


def starts_taken_for_ends(plan):
    """Takes the steps that depend on nothing (where a plan starts) for its ends."""
    starts = [step for step in plan if not step.depends_on]
    for step in starts:
        if step.role != "writer":
            raise PlanError(f"step {step.id!r} ({step.role}) ends the plan")
    if len(starts) > 1:
        raise PlanError(f"the plan ends in {len(starts)} reports")


@pytest.mark.parametrize(
    "wrong, line",
    [
        (one_end_and_a_writer_somewhere, "✗ a report that another step goes on from: a PlanError naming s3"),
        (says_false, "✗ a plan that stops before its report: a PlanError naming s2: accepted"),
        (starts_taken_for_ends, "✗ a fan-out that ends in the writer's report: accepted: raised PlanError"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_ends_in_report_catches_a_writer_anywhere_a_false_instead_of_an_error_and_starts_for_ends(
    wrong, line, capsys
):
    notebook_code.caught(capsys, "03.ends-in-report", wrong, line)


def ends_from_the_graph(plan):
    """Right, written another way: the ends are the graph's nodes with no way out."""
    graph = plan.to_networkx()
    ends = sorted(node for node in graph if graph.out_degree(node) == 0)
    for end in ends:
        if plan[end].role != "writer":
            raise PlanError(f"the plan ends at {end!r}, which is no report")
    if len(ends) != 1:
        raise PlanError(f"more than one report: {', '.join(map(repr, ends))}")


def test_ends_in_report_passes_a_right_rule_written_differently(capsys):
    check("03.ends-in-report", ends_from_the_graph)
    assert "✗" not in capsys.readouterr().out


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


HUNTS_PAST_A_BAD_PLAN = """
def read_plan(text, roles):
    errors = []
    for start in [i for i, c in enumerate(text) if c == "{"]:
        try:
            data, _ = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError as e:
            errors.append(str(e))
            continue
        if isinstance(data, dict):
            try:
                return Plan.from_dict(data, roles=roles)
            except PlanError as e:  # not this one: look further
                errors.append(str(e))
    raise PlanError(errors[0] if errors else "no JSON object")
"""


def test_hidden_case_catches_a_reader_that_hunts_past_an_invalid_first_plan():
    import graded

    wrong = graded.written("03", "read_plan", HUNTS_PAST_A_BAD_PLAN)
    assert len(graded.hidden_failures("03.read-plan", wrong)) == 3
    assert graded.graded("03.read-plan", wrong).status == "failed"
