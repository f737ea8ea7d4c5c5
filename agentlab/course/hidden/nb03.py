"""Notebook 03's grading cases: replies the exercise's own cases do not show."""

import json
from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, is_stub, time_limit
from agentlab.course.hidden import grading
from agentlab.plan import Plan, PlanError

_ROLES = ("researcher", "analyst", "writer")
_STEPS = [
    {"id": "s1", "role": "researcher", "instruction": "What is the area of Varra?", "depends_on": []},
    {
        "id": "s2",
        "role": "writer",
        "instruction": "Report it. The result to report is $s1.",
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
