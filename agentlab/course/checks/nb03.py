"""Checks for the exercises of notebook 03, a model writes the plan.

- `03.read-plan`: a parser for a model's reply that accepts the plan wherever it sits in the
  text, and refuses anything wrong inside it with a `PlanError`;
- `03.ends-in-report`: a `check_plan`-style rule: a plan ends in exactly one report, by the
  writer, and every other step leads to it;
- `03.score`: accuracy and model calls per task family over a batch of runs.

The cases are replies, plans and runs built here, with what the kit's own `Plan.from_json`,
`Plan` validation and `Task.check` say about them as the reference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from agentlab.checks import Case, attempt, exercise
from agentlab.plan import Plan, PlanError, Step
from agentlab.run import Run
from agentlab.world import make_tasks

ROLES = ("researcher", "analyst", "writer")


def raised(function: Callable, *args: Any) -> BaseException | None:
    """The exception `function(*args)` raised, or None; a stub's NotImplementedError goes through."""
    try:
        function(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # the cases judge which exception it was
        return error
    return None


# --- 03.read-plan -------------------------------------------------------------------------------

GOOD = {
    "steps": [
        {
            "id": "s1",
            "role": "researcher",
            "instruction": "What is the crew of Tidewalker?",
            "depends_on": [],
        },
        {
            "id": "s2",
            "role": "researcher",
            "instruction": "What is the crew of Moth Queen?",
            "depends_on": [],
        },
        {
            "id": "s3",
            "role": "analyst",
            "instruction": "What is $s1 + $s2?",
            "depends_on": ["s1", "s2"],
            "tool": "calculate",
            "args": {"expression": "$s1 + $s2"},
        },
        {
            "id": "s4",
            "role": "writer",
            "instruction": "Report the answer. The result to report is $s3.",
            "depends_on": ["s3"],
        },
    ]
}
TEXT = json.dumps(GOOD)
PRETTY = json.dumps(GOOD, indent=2)

READABLE = (
    ("plain JSON", TEXT),
    ("JSON between two sentences of prose", f"Here is the plan:\n{PRETTY}\nLet me know if you want changes."),
    ("JSON in a ```json fence", f"```json\n{PRETTY}\n```"),
    ("prose after the JSON with braces of its own", f"{TEXT}\nNote: {{s3}} waits for {{s1}} and {{s2}}."),
)
UNREADABLE = (
    ("a reply cut off in the middle of the plan", "Here is the plan:\n" + TEXT[: len(TEXT) // 2]),
    ("a trailing comma", TEXT[:-2] + ",]}"),
    ("single quotes instead of double", TEXT.replace('"', "'")),
    ("no JSON at all", "I am sorry, I cannot plan this task."),
    (
        "valid JSON whose steps form a cycle",
        json.dumps({"steps": [{**GOOD["steps"][0], "depends_on": ["s4"]}, *GOOD["steps"][1:]]}),
    ),
    ("valid JSON with a role the team lacks", TEXT.replace('"analyst"', '"accountant"')),
)


@exercise(
    "03.read-plan",
    "Read a plan out of a model's reply",
    hint="find the first '{' and let json.JSONDecoder().raw_decode read one object from there (a regex "
    "from the first '{' to the last '}' swallows any braces after the plan); turn a JSONDecodeError "
    "into a PlanError, and build the plan with Plan.from_dict(data, roles=roles) so the kit's own "
    "checks run",
)
def read_plan(parse: Callable) -> Iterator[Case]:
    want = Plan.from_dict(GOOD, roles=ROLES)
    for what, text in READABLE:
        got, error = attempt(parse, text, ROLES)
        right = not error and isinstance(got, Plan) and got.steps == want.steps
        yield Case(f"{what}: the plan", right, error or f"got {got!r}")
    for what, text in UNREADABLE:
        error = raised(parse, text, ROLES)
        detail = "returned a plan" if error is None else f"raised {type(error).__name__}: {error}"
        yield Case(f"{what}: a PlanError", isinstance(error, PlanError), detail)


# --- 03.ends-in-report --------------------------------------------------------------------------


def _step(step_id: str, role: str, *depends_on: str) -> Step:
    return Step(step_id, role, f"Do {step_id}.", depends_on)


FINE = (
    (
        "a fan-out that ends in the writer's report",
        [
            _step("s1", "researcher"),
            _step("s2", "researcher"),
            _step("s3", "analyst", "s1", "s2"),
            _step("s4", "writer", "s3"),
        ],
    ),
    ("a plan of one writer step", [_step("s1", "writer")]),
    (
        "the report written first",
        [_step("s3", "writer", "s1", "s2"), _step("s1", "researcher"), _step("s2", "researcher")],
    ),
)
FAULTY = (
    (
        "a plan that stops before its report",
        [_step("s1", "researcher"), _step("s2", "researcher", "s1")],
        {"s2"},
    ),
    (
        "a lookup nobody uses, beside the report",
        [_step("s1", "researcher"), _step("s2", "researcher"), _step("s3", "writer", "s1")],
        {"s2"},
    ),
    (
        "two reports",
        [_step("s1", "researcher"), _step("s2", "writer", "s1"), _step("s3", "writer", "s1")],
        {"s2", "s3"},
    ),
)


@exercise(
    "03.ends-in-report",
    "A plan ends in one report",
    hint="the ends of a plan are the steps no other step depends on; there must be exactly one, and it "
    "must be the writer's. Look at every step's depends_on, not at the last step written or at "
    "plan.final_step alone, and put the offending step's id in the PlanError, quoted: 's2'",
)
def ends_in_report(rule: Callable) -> Iterator[Case]:
    for what, steps in FINE:
        error = raised(rule, Plan(steps))
        yield Case(f"{what}: accepted", error is None, f"raised {type(error).__name__}: {error}")
    for what, steps, culprits in FAULTY:
        error = raised(rule, Plan(steps))
        named = isinstance(error, PlanError) and any(f"'{c}'" in str(error) for c in culprits)
        detail = "accepted" if error is None else f"raised {type(error).__name__}: {error}"
        yield Case(f"{what}: a PlanError naming {' or '.join(sorted(culprits))}", named, detail)


# --- 03.score -----------------------------------------------------------------------------------


def _answer(task: Any) -> tuple[str | None, int, bool]:
    """What the pretend pipeline does with a task: (deliverable or None, model calls, plan made?).
    Singles are answered wrongly, chains right but in a sentence, fan-outs alternately right
    and lost (a failed step, or no plan at all)."""
    n = int(task.id[1:])
    if task.family == "single":
        return "Nobody knows.", 2, True
    if task.family == "chain":
        return f"It is {task.answer}.", 2 + task.size, True
    if n % 4 == 0:
        return task.answer, 3, True
    return None, 4 if n % 4 == 1 else 3, n % 4 != 3


def _solver(tasks: list) -> Callable[[str], Run]:
    by_question = {t.question: t for t in tasks}

    def solve(question: str) -> Run:
        answer, calls, planned = _answer(by_question[question])
        plan = Plan([Step("s1", "writer", "Report the answer.")]) if planned else None
        run = Run(task=question, plan=plan, status="done" if answer else "failed")
        if answer is not None:
            run.outputs["s1"] = answer
        run.calls = [("s1", "writer", f"call {i}") for i in range(calls)]
        return run

    return solve


def _expected(tasks: list) -> dict[str, dict[str, float]]:
    rows: dict[str, list] = {}
    for task in tasks:
        answer, calls, _ = _answer(task)
        for key in (task.family, "all"):
            rows.setdefault(key, []).append((task.check(answer), calls))
    return {
        key: {
            "right": sum(r for r, _ in rows[key]),
            "tasks": len(rows[key]),
            "calls": sum(c for _, c in rows[key]) / len(rows[key]),
        }
        for key in rows
    }


def _same(got: Any, want: Mapping[str, float]) -> bool:
    if not isinstance(got, Mapping):
        return False
    return all(isinstance(got.get(k), int | float) and abs(got[k] - v) < 1e-9 for k, v in want.items())


@exercise(
    "03.score",
    "Accuracy and calls per task family",
    hint="grade with task.check(run.deliverable), which accepts '1,250' or 'It is 1250.' (comparing with "
    "task.answer does not), and count a run with no deliverable, or no plan at all, as wrong; its calls "
    "still count, and the calls per task are averaged over every task of the family",
)
def score(score_batch: Callable) -> Iterator[Case]:
    batch = make_tasks(16, seed=4)
    chains_only = [t for t in make_tasks(20, seed=5) if t.family == "chain"]
    for what, tasks in (("a batch of 16 tasks", batch), ("a batch with one family only", chains_only)):
        want = _expected(tasks)
        got, error = attempt(score_batch, tasks, _solver(tasks))
        if error or not isinstance(got, Mapping):
            yield Case(f"{what}: a dict of rows", False, error or f"got {type(got).__name__}")
            continue
        yield Case(f"{what}: a row per family, and 'all'", set(got) == set(want), f"rows {sorted(got)}")
        for key in sorted(want):
            yield Case(f"{what}: {key}", _same(got.get(key), want[key]), f"got {got.get(key)!r}")
