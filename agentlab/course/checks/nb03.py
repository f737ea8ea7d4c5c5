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

from agentlab.course.checks import Case, attempt, exercise, is_stub, time_limit
from agentlab.plan import Plan, PlanError, Step
from agentlab.run import Run
from agentlab.world import make_tasks

_ROLES = ("researcher", "analyst", "writer")


def _raised(function: Callable, *args: Any) -> tuple[BaseException | None, Any]:
    """(the exception `function(*args)` raised, or None; what it returned). The exercise's stub goes
    through; the call runs under the per-case time limit, so an endless loop is a TimeoutError."""
    try:
        with time_limit():
            return None, function(*args)
    except Exception as error:  # the cases judge which exception it was
        if is_stub(error):
            raise
        return error, None


# --- 03.read-plan -------------------------------------------------------------------------------

_GOOD = {
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
_TEXT = json.dumps(_GOOD)
_PRETTY = json.dumps(_GOOD, indent=2)

_READABLE = (
    ("plain JSON", _TEXT),
    (
        "JSON between two sentences of prose",
        f"Here is the plan:\n{_PRETTY}\nLet me know if you want changes.",
    ),
    ("JSON in a ```json fence", f"```json\n{_PRETTY}\n```"),
    ("prose after the JSON with braces of its own", f"{_TEXT}\nNote: {{s3}} waits for {{s1}} and {{s2}}."),
    ("a label with braces of its own before the JSON", f"Plan for {{the crew question}}:\n{_PRETTY}"),
)
_UNREADABLE = (
    ("a reply cut off in the middle of the plan", "Here is the plan:\n" + _TEXT[: len(_TEXT) // 2]),
    ("a trailing comma", _TEXT[:-2] + ",]}"),
    ("single quotes instead of double", _TEXT.replace('"', "'")),
    ("no JSON at all", "I am sorry, I cannot plan this task."),
    (
        "valid JSON whose steps form a cycle",
        json.dumps({"steps": [{**_GOOD["steps"][0], "depends_on": ["s4"]}, *_GOOD["steps"][1:]]}),
    ),
    ("valid JSON with a role the team lacks", _TEXT.replace('"analyst"', '"accountant"')),
)


@exercise(
    "03.read-plan",
    "Read a plan out of a model's reply",
    hint="look at where your reader decides the JSON object starts (a label before it may hold braces "
    "that are not JSON) and where it ends (at the end of the first object, or at the last brace in the "
    "reply?), at what becomes of a JSON error (the caller expects a PlanError), "
    "and at whether the plan goes through the kit's own checks for these roles",
)
def read_plan(parse: Callable) -> Iterator[Case]:
    want = Plan.from_dict(_GOOD, roles=_ROLES)
    for what, text in _READABLE:
        got, error = attempt(parse, text, _ROLES)
        right = not error and isinstance(got, Plan) and got.steps == want.steps
        yield Case(f"{what}: the plan", right, error or f"got {got!r}")
    for what, text in _UNREADABLE:
        error, got = _raised(parse, text, _ROLES)
        detail = f"returned {_short(got)}" if error is None else f"raised {type(error).__name__}: {error}"
        yield Case(f"{what}: a PlanError", isinstance(error, PlanError), detail)


def _short(value: Any) -> str:
    return "a plan" if isinstance(value, Plan) else repr(value)[:80]


# --- 03.ends-in-report --------------------------------------------------------------------------


def _step(step_id: str, role: str, *depends_on: str) -> Step:
    return Step(step_id, role, f"Do {step_id}.", depends_on)


_FINE = (
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
_FAULTY = (
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
        "a report that another step goes on from",
        [_step("s1", "researcher"), _step("s2", "writer", "s1"), _step("s3", "analyst", "s2")],
        {"s3"},
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
    hint="look at which steps you treat as ends (every step that no other step depends on, wherever it "
    "is written, not only the last one), at the role of each end, and at the message: it names the "
    "offending step's id, quoted like the kit's errors",
)
def ends_in_report(rule: Callable) -> Iterator[Case]:
    for what, steps in _FINE:
        error, _ = _raised(rule, Plan(steps))
        yield Case(f"{what}: accepted", error is None, f"raised {type(error).__name__}: {error}")
    for what, steps, culprits in _FAULTY:
        error, _ = _raised(rule, Plan(steps))
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
        # the planner's calls are the run's too: one to plan (paid even when no plan came of it), and a
        # replan on the runs with four calls; the rest are the writer's
        planner = [("plan", "planner", "call 0")] + ([("replan1", "planner", "call 1")] if calls == 4 else [])
        run.calls = planner + [("s1", "writer", f"call {i}") for i in range(len(planner), calls)]
        return run

    return solve


_SCORES = {  # by case: the rows a right score_batch returns
    "a mixed batch": {
        "single": {"right": 0, "tasks": 4, "calls": 2.0},
        "chain": {"right": 6, "tasks": 6, "calls": 4.833333333333333},
        "fanout": {"right": 1, "tasks": 6, "calls": 3.3333333333333335},
        "all": {"right": 7, "tasks": 16, "calls": 3.5625},
    },
    "a batch with one family only": {
        "chain": {"right": 8, "tasks": 8, "calls": 4.75},
        "all": {"right": 8, "tasks": 8, "calls": 4.75},
    },
}


def _score_batches() -> tuple[tuple[str, list], ...]:
    """(what, tasks) for each visible case of 03.score."""
    chains_only = [t for t in make_tasks(20, seed=5) if t.family == "chain"]
    return (("a mixed batch", make_tasks(16, seed=4)), ("a batch with one family only", chains_only))


def _same(got: Any, want: Mapping[str, float]) -> bool:
    if not isinstance(got, Mapping):
        return False
    return all(isinstance(got.get(k), int | float) and abs(got[k] - v) < 1e-9 for k, v in want.items())


@exercise(
    "03.score",
    "Accuracy and calls per task family",
    hint="look at how you decide that a run is right (an answer may be written '1,250' or 'It is 1250.'; "
    "the task knows how to judge its own answers), at the runs that failed or never got a plan (wrong, "
    "but their calls were paid for), and at what you divide the calls by",
)
def score(score_batch: Callable) -> Iterator[Case]:
    for what, tasks in _score_batches():
        yield from _judge_score(score_batch, what, tasks, _SCORES[what])


def _judge_score(score_batch: Callable, what: str, tasks: list, want: dict) -> Iterator[Case]:
    """The cases of one batch of 03.score: `score_batch` on `tasks` against the rows `want`."""
    got, error = attempt(score_batch, tasks, _solver(tasks))
    if error or not isinstance(got, Mapping):
        yield Case(f"{what}: a dict of rows", False, error or f"got {type(got).__name__}")
        return
    yield Case(f"{what}: a row per family, and 'all'", set(got) == set(want), f"rows {sorted(got)}")
    for key in sorted(want):
        yield Case(f"{what}: {key}", _same(got.get(key), want[key]), f"got {got.get(key)!r}")
