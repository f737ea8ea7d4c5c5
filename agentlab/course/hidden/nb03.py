"""Notebook 03's grading cases: replies the exercise's own cases do not show."""

import json
from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, is_stub, time_limit
from agentlab.course.hidden import grading
from agentlab.plan import Plan, PlanError
from agentlab.prompts import RESULT_TO_REPORT

_ROLES = ("researcher", "analyst", "writer")
_STEPS = [
    {"id": "s1", "role": "researcher", "instruction": "What is the area of Varra?", "depends_on": []},
    {
        "id": "s2",
        "role": "writer",
        "instruction": f"Report it. {RESULT_TO_REPORT} $s1.",
        "depends_on": ["s1"],
    },
]
_WRONG_ROLE = json.dumps({"steps": [{**_STEPS[0], "role": "navigator"}, _STEPS[1]]})
_CYCLE = json.dumps({"steps": [{**_STEPS[0], "depends_on": ["s2"]}, _STEPS[1]]})
_GOOD = json.dumps({"steps": _STEPS})


def _raises_plan_error(parse: Callable, text: str) -> tuple[bool, str]:
    try:
        with time_limit():
            got = parse(text, _ROLES)
    except PlanError:
        return True, ""
    except Exception as error:
        if is_stub(error):
            raise
        return False, f"raised {type(error).__name__}: {error}"[:200]
    return False, "returned a plan" if isinstance(got, Plan) else f"returned {got!r}"[:200]


@grading("03.read-plan")
def read_plan(parse: Callable) -> Iterator[Case]:
    for what, text in (
        ("a first plan with a role the team lacks, a good one after it", f"{_WRONG_ROLE}\nOr:\n{_GOOD}"),
        ("a first plan whose steps form a cycle, a good one after it", f"Plan: {_CYCLE}\n\nBetter: {_GOOD}"),
        ("a first JSON object that is not a plan, a plan after it", f'{{"note": "draft"}}\n{_GOOD}'),
    ):
        right, detail = _raises_plan_error(parse, text)
        yield Case(f"{what}: a PlanError (the plan is the first JSON object)", right, detail)
    labels = "Plan for {the area} of {Varra}, {in km2}, {rounded}:\n"
    try:
        with time_limit():
            got = parse(labels + _GOOD, _ROLES)
        detail = f"got {got!r}"[:200]
    except Exception as error:
        if is_stub(error):
            raise
        got, detail = None, f"raised {type(error).__name__}: {error}"[:200]
    want = Plan.from_json(_GOOD, roles=_ROLES)
    yield Case(
        "four braced labels before the JSON: the plan",
        isinstance(got, Plan) and got.steps == want.steps,
        detail,
    )


# --- 03.ends-in-report ---------------------------------------------------------------------------


def _step(step_id: str, role: str, *depends_on: str):
    from agentlab.plan import Step

    return Step(step_id, role, f"Do {step_id}.", depends_on)


@grading("03.ends-in-report")
def ends_in_report(rule: Callable) -> Iterator[Case]:
    for what, steps in (
        (
            "a writer's draft, then the writer's report",
            [_step("s1", "researcher"), _step("s2", "writer", "s1"), _step("s3", "writer", "s2")],
        ),
        (
            "two writers' drafts joined by the report",
            [_step("d1", "writer"), _step("d2", "writer"), _step("r", "writer", "d1", "d2")],
        ),
    ):
        try:
            with time_limit():
                rule(Plan(steps))
        except Exception as error:
            if is_stub(error):
                raise
            yield Case(f"{what}: accepted", False, f"raised {type(error).__name__}: {error}"[:200])
            continue
        yield Case(f"{what}: accepted", True)


# --- 03.score -----------------------------------------------------------------------------------


def _near_misses(tasks: list) -> Callable:
    """A solver that answers each task right, in a sentence, or with a digit too many (wrong, though
    the right answer is inside it), by turns."""
    from agentlab.run import Run

    by_question = {t.question: (n, t) for n, t in enumerate(tasks)}

    def solve(question: str) -> Run:
        n, task = by_question[question]
        answer = (task.answer, f"It is {task.answer}.", f"{task.answer}0")[n % 3]
        run = Run(task=question, plan=Plan([_step("s1", "writer")]), status="done")
        run.outputs["s1"] = answer
        run.calls = [("plan", "planner", "call 0")] + [
            ("s1", "writer", f"call {i}") for i in range(1, 2 + n % 2)
        ]
        return run

    return solve


@grading("03.score")
def score(score_batch: Callable) -> Iterator[Case]:
    from agentlab.course.checks import attempt
    from agentlab.world import make_tasks

    tasks = make_tasks(12, seed=11)
    got, error = attempt(score_batch, tasks, _near_misses(tasks))
    row = got.get("all") if isinstance(got, dict) else None
    right = isinstance(row, dict) and row.get("right") == 8 and row.get("tasks") == 12
    right = right and isinstance(row.get("calls"), int | float) and abs(row["calls"] - 2.5) < 1e-9
    yield Case("answers with a digit too many: all tasks", not error and right, error or f"got {row!r}")
