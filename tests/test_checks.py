"""The check framework: pass, fail with a hint, stop on a stub, write down what happened for the
grader; and, across all 36 checks, what their lines may say and what their modules may export."""

import ast
import importlib
import inspect
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

import notebook_code
import pytest

from agentlab.course.checks import (
    LOG_VARIABLE,
    NOTEBOOKS,
    REGISTRY,
    STUB_MESSAGE,
    Case,
    CheckFailed,
    attempt,
    check,
    exercise,
    exercises_of,
    find,
)
from agentlab.experiments import Estimate


@pytest.fixture
def square_exercise():
    @exercise("99.square", "Square a number", hint="multiply the number by itself")
    def cases(square):
        for x, want in ((2, 4), (-3, 9), (0.5, 0.25)):
            got, error = attempt(square, x)
            yield Case(f"square({x}) == {want}", got == want, error or f"got {got!r}")

    yield
    del REGISTRY["99.square"]


def test_a_right_answer_passes_every_case(square_exercise, capsys):
    check("99.square", lambda x: x * x)
    out = capsys.readouterr().out
    assert out.count("✓") == 3 and "All 3 checks passed." in out


def test_a_wrong_answer_fails_with_the_hint_and_shows_which_cases(square_exercise, capsys):
    with pytest.raises(CheckFailed, match="2 of 3 checks failed. Hint: multiply the number by itself"):
        check("99.square", lambda x: x + x)  # right only for 2
    out = capsys.readouterr().out
    assert "✓ square(2) == 4" in out and "✗ square(-3) == 9: got -6" in out


def test_a_buggy_answer_is_a_failed_case_showing_its_error(square_exercise, capsys):
    with pytest.raises(CheckFailed):
        check("99.square", lambda x: x.bit_length())
    assert "raised AttributeError" in capsys.readouterr().out


def test_a_stub_stops_with_not_implemented_error(square_exercise, capsys):
    def stub(x):
        raise NotImplementedError("Exercise: write this part")

    with pytest.raises(NotImplementedError):
        check("99.square", stub)
    assert "not written yet" in capsys.readouterr().out


def test_an_untouched_stub_is_unwritten_before_any_case_is_worked_out(capsys):
    # some exercises take a second to build their cases (07.pick runs its comparisons): a learner
    # who runs an untouched exercise top to bottom should not wait for them
    built = []

    @exercise("99.slow", "A check whose cases are slow to build", hint="-")
    def cases(answer):
        built.append(True)
        yield Case("a case", attempt(answer, 1)[0] == 1)

    def stub(comparison):  # as the build writes it (exercises/07's `pick`)
        """What the learner writes."""
        raise NotImplementedError("Exercise: write this part, then run the cell again.")

    def started(comparison):
        """Written in part: the stub's line is still there, after the learner's first line."""
        comparison = abs(comparison)
        raise NotImplementedError(STUB_MESSAGE)

    try:
        with pytest.raises(NotImplementedError):
            check("99.slow", stub)
        assert "not written yet" in capsys.readouterr().out and built == []
        with pytest.raises(NotImplementedError):
            check("99.slow", started)  # runs the cases, which meet the stub: not written yet either
        assert "not written yet" in capsys.readouterr().out and built == [True]
    finally:
        del REGISTRY["99.slow"]


def test_an_unknown_exercise_names_the_known_ones(square_exercise):
    with pytest.raises(KeyError, match="no exercise '99.cube'; known: .*99.square"):
        check("99.cube", None)


def test_a_loop_that_never_ends_fails_its_case_instead_of_hanging(square_exercise, capsys):
    def forever(x):
        while True:
            pass

    got, error = attempt(forever, 2, limit=0.2)
    assert got is None and error == "raised TimeoutError: no answer after 0.2 s: does a loop never end?"
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left behind
    assert attempt(lambda x: x, 3) == (3, "")  # a quick answer is untouched by the default limit


def test_a_learners_own_not_implemented_error_is_a_failed_case_not_an_unwritten_exercise(
    square_exercise, capsys
):
    def only_positive(x):
        if x < 0:
            raise NotImplementedError("negative numbers are not supported")
        return x * x

    with pytest.raises(CheckFailed, match="1 of 3 checks failed"):
        check("99.square", only_positive)
    out = capsys.readouterr().out
    assert "✗ square(-3) == 9: raised NotImplementedError: negative numbers" in out
    assert "not written yet" not in out


def test_a_stub_left_in_one_branch_fails_the_check_once_other_cases_have_run(square_exercise, capsys):
    def half_done(x):
        if x < 0:
            raise NotImplementedError(STUB_MESSAGE)
        return x * x

    with pytest.raises(CheckFailed, match="1 of 2 checks failed"):
        check("99.square", half_done)
    out = capsys.readouterr().out
    assert "✓ square(2) == 4" in out and "✗ the next case stopped at a part still left as the stub" in out


def test_every_check_writes_down_what_happened_for_the_grader(square_exercise, tmp_path, monkeypatch, capsys):
    log = tmp_path / "checks.jsonl"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    check("99.square", lambda x: x * x)
    with pytest.raises(CheckFailed):
        check("99.square", lambda x: x + x)
    with pytest.raises(NotImplementedError):
        check("99.square", lambda x: (_ for _ in ()).throw(NotImplementedError(STUB_MESSAGE)))
    with pytest.raises(KeyboardInterrupt):
        check("99.square", lambda x: (_ for _ in ()).throw(KeyboardInterrupt()))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ends = [(r["status"], r["passed"], r["failed"]) for r in records if r["event"] == "end"]
    assert [r["event"] for r in records] == ["start", "end"] * 4
    assert ends == [("passed", 3, 0), ("failed", 1, 2), ("not done", 0, 0), ("error", 0, 0)]
    assert records[3]["detail"] == "square(-3) == 9: got -6"  # the first failing line, for the report


def test_the_exercises_a_notebook_must_have_come_in_the_notebooks_order():
    assert exercises_of("06") == ["06.crossover", "06.best-cut", "06.retries-correlated"]
    assert exercises_of("10") == ["10.speedup", "10.break-even", "10.travel"]
    assert exercises_of("11") == ["11.cache-bill", "11.first-step"]
    assert sum(len(exercises_of(n)) for n in NOTEBOOKS) == 36
    with pytest.raises(KeyError, match="no exercise notebook '12'"):
        exercises_of("12")


# --- what the checks say, across all 36 --------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = {  # exercise -> (solution notebook, the functions it defines, in order; or a value and its cell)
    "01.concerns": ("01_stub_planner_and_executors", "=concerns", 'check("01.concerns"'),
    "01.sentinel": ("01_stub_planner_and_executors", "run_with_reroute"),
    "01.hierarchy": ("01_stub_planner_and_executors", "run_hierarchy"),
    "01.when-hierarchy": ("01_stub_planner_and_executors", "=when", 'check("01.when-hierarchy"'),
    "01.reconcile": ("01_stub_planner_and_executors", "majority"),
    "02.critical-path": ("02_plans_are_dags", "longest_chain"),
    "02.makespan": ("02_plans_are_dags", "finish_time"),
    "02.longest-first": ("02_plans_are_dags", "longest_chain_first"),
    "03.read-plan": ("03_llm_planner", "read_plan"),
    "03.ends-in-report": ("03_llm_planner", "ends_in_one_report"),
    "03.score": ("03_llm_planner", "score"),
    "04.total-check": ("04_monitor_and_replan", "total_covers_its_parts"),
    "04.retry-then-reroute": ("04_monitor_and_replan", "attempt_with_recovery"),
    "04.installments": ("04_monitor_and_replan", "run_in_installments"),
    "04.message-key": ("04_monitor_and_replan", "message_key"),
    "05.team-calls": ("05_hierarchical_teams", "predict_calls"),
    "05.rollup": ("05_hierarchical_teams", "tokens_by_level"),
    "05.shape": ("05_hierarchical_teams", "choose_shape"),
    "06.crossover": ("06_error_propagation", "longest_winning_chain"),
    "06.best-cut": ("06_error_propagation", "best_cut"),
    "06.retries-correlated": ("06_error_propagation", "simulate_retries"),
    "07.react-tokens": ("07_one_agent_or_a_team", "predict_input_tokens"),
    "07.router-share": ("07_one_agent_or_a_team", "strong_share"),
    "07.pick": ("07_one_agent_or_a_team", "pick"),
    "07.shapes": ("07_one_agent_or_a_team", "=choice", 'check("07.shapes"'),
    "08.threshold": ("08_migration_and_handoffs", "choose_threshold"),
    "08.handoff-audit": ("08_migration_and_handoffs", "lost_requests"),
    "09.denied": ("09_guardrails", "denied"),
    "09.policy": ("09_guardrails", "clerk_only"),
    "09.sanitise": ("09_guardrails", "sanitise"),
    "09.safe-replan": ("09_guardrails", "sanitise", "safe_replan"),
    "10.speedup": ("10_across_machines", "speedup"),
    "10.break-even": ("10_across_machines", "break_even"),
    "10.travel": ("10_across_machines", "census_clerk"),
    "11.cache-bill": ("11_caching_and_streaming", "bill"),
    "11.first-step": ("11_caching_and_streaming", "streamed_finish"),
}


def solution_answer(exercise_id):
    name, *names = ANSWERS[exercise_id]
    path = ROOT / "solutions" / f"{name}.ipynb"
    if names[0].startswith("="):
        return notebook_code.answer(path, names[0][1:], names[1])
    return notebook_code.define(path, *names)


needs_solutions = pytest.mark.skipif(notebook_code.WITHHELD, reason="solutions/ is withheld in this copy")


def test_every_exercise_has_a_solution_answer_here():
    assert set(ANSWERS) == {e for n in NOTEBOOKS for e in exercises_of(n)}


NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?%?(?![\w.])")


def tokens(value):
    """What a returned value looks like printed: numbers of two digits or more (or with decimals),
    and strings long enough to mean something. One-digit counts are everywhere in descriptions."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return []
        return [float(value)] if abs(value) >= 10 or not float(value).is_integer() else []
    if isinstance(value, str):
        return [value] if len(value) > 3 else []
    if isinstance(value, Estimate):
        return [value.value]
    items = list(value.values()) if isinstance(value, Mapping) else value
    if isinstance(items, list | tuple | set):
        return [t for v in items for t in tokens(v)] + tokens(len(items))
    return []


def shows(line, token):
    """Whether a printed line shows `token`: a string as a word of it, or a number it prints, to the
    precision it prints it (or within 0.5% of a number with decimals)."""
    if isinstance(token, str):
        return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", line) is not None
    for text in NUMBER.findall(line):
        percent, digits = text.endswith("%"), text.rstrip("%").replace(",", "")
        places = len(digits.split(".")[1]) if "." in digits else 0
        value = token * 100 if percent else token
        if places == 0 and abs(value) >= 10 and round(value) == float(digits):
            return True
        if places and (
            round(value, places) == float(digits) or math.isclose(value, float(digits), rel_tol=0.005)
        ):
            return True
    return False


@pytest.mark.parametrize(
    "line, value",
    [  # passing lines the checks used to print, each showing what the right answer returns
        ("correlated failures (0.3), 2 tries a step: exact 0.7603", Estimate(75_970, 100_000)),
        ("28 replanned runs under the office policy: 28 denied", [("s1", "clerk", "send_message")] * 28),
        ("two levels, a sum of 4: 3,235 tokens in all, {1: 938, 2: 2297}", {1: 938, 2: 2297}),
        ("the same run, predicting 12 calls: 6,810 tokens", 6810.0),
        ("GSM8K, a coin, to 80%: 74.0%", 0.7398),
        ("notebook 06's curve (fail 0.4, handoff 0.01, at most 15): 3 pieces, 0.6380", (3, 0.63797)),
        ("section 7: short and sequential: react", "react"),
    ],
)
def test_the_leak_finder_finds_the_answers_old_passing_lines_printed(line, value):
    assert any(shows(line, t) for t in tokens(value))


@needs_solutions
@pytest.mark.parametrize("exercise_id", sorted(ANSWERS))
def test_a_passing_line_describes_its_case_and_never_prints_the_answer(exercise_id, capsys):
    """Run each check's cases on the solution, noting what the solution returned during each case,
    and look for those values in the case's own ✓ line (the answer a learner could copy)."""
    answer = solution_answer(exercise_id)
    returned = []
    if callable(answer):
        function = answer

        def answer(*args, **kwargs):  # noqa: F811 - the spy the check calls instead
            result = function(*args, **kwargs)
            returned.append(result)
            return result

    else:
        returned.append(answer)
    leaks, seen = [], 0
    for case in find(exercise_id).cases(answer):
        assert case.passed, f"{exercise_id}: the solution fails {case.what!r}"
        assert "→" not in case.what
        for value in returned[seen:]:
            leaks += [(case.what, t) for t in tokens(value) if shows(case.what, t)]
        seen = len(returned)
    capsys.readouterr()
    assert not leaks, f"{exercise_id}: passing lines show what the answer returned: {leaks[:3]}"


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_reference_answer_is_importable_under_a_public_name(notebook):
    """A check module's public names are its checks: every case table, key and reference function it
    defines is private, so `from agentlab.course.checks.nb06 import best_cut_answer` finds nothing."""
    module = importlib.import_module(f"agentlab.course.checks.nb{notebook}")
    defined = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    checks = {REGISTRY[e].cases.__name__ for e in exercises_of(notebook)}
    public = [name for name in defined if not name.startswith("_") and name not in checks]
    assert public == [], f"nb{notebook} defines public names besides its checks: {public}"


# --- plain data: an answer that only claims to be right ----------------------------------------------


class AlwaysEqual:
    """An object of a learner's own class that says it equals anything it is compared with."""

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def sly(value):
    """`value` as a learner's own subclass of its type whose == always says yes (an AlwaysEqual when
    its type cannot be subclassed: True, False, None, or the kit's own objects)."""
    kind = type(value)
    if kind not in (int, float, str, list, tuple, dict):
        return AlwaysEqual()
    methods = {"__eq__": lambda self, other: True, "__ne__": lambda self, other: False}
    methods["__hash__"] = None if kind in (list, dict) else kind.__hash__
    return type(f"Sly{kind.__name__.title()}", (kind,), methods)(value)


JUDGED_BY_WHAT_IT_RAISES = {"03.ends-in-report"}  # returns None or raises: what it returns is not judged


@needs_solutions
@pytest.mark.parametrize("exercise_id", sorted(set(ANSWERS) - JUDGED_BY_WHAT_IT_RAISES))
def test_an_answer_that_only_claims_to_be_right_is_refused_with_what_it_is(exercise_id, capsys):
    """The solution's own answers, each handed back as an object whose == always says yes: the
    learner's check refuses them, as the grader (which compares plain data) would fail them."""
    answer = solution_answer(exercise_id)
    if callable(answer):
        right = answer

        def answer(*args, **kwargs):  # noqa: F811 - the right answer, dressed up
            return sly(right(*args, **kwargs))

    else:
        answer = sly(answer)
    failed = notebook_code.caught(capsys, exercise_id, answer)
    assert any(re.search(r"\b(a|an) (Sly\w+|AlwaysEqual), ", line) for line in failed), failed


@pytest.mark.parametrize(
    "value, verdict",
    [
        (type("MyFloat", (float,), {"__add__": lambda self, other: 0.0})(2.5), "a MyFloat, not a number"),
        (type("Loud", (str,), {"startswith": lambda self, prefix: True})("x"), "a Loud, not a string"),
        (AlwaysEqual(), "an AlwaysEqual, which is not plain data"),
        ([1, {"k": AlwaysEqual()}], "an AlwaysEqual, which is not plain data"),
        (__import__("fractions").Fraction(1, 3), "a Fraction, not a plain number"),
        ((x for x in ()), "a generator, which is not plain data"),
    ],
    ids=["float-subclass", "str-subclass", "own-class", "nested", "fraction", "generator"],
)
def test_plain_names_what_is_not_plain_data_in_one_line(value, verdict):
    from agentlab.course.checks.plain import plain

    _, said = plain(value)
    assert said.startswith(verdict) and "\n" not in said


def test_plain_takes_numpy_numbers_a_namedtuple_a_counter_and_the_kits_objects_as_they_are():
    from collections import Counter, namedtuple

    import numpy as np

    from agentlab.course.checks.plain import plain
    from agentlab.plan import Plan, Step

    decision = namedtuple("Decision", "ok why")(True, "the clerk")
    plan = Plan([Step("s1", "writer", "Write.")])
    assert plain([np.float64(1.5), np.int64(2), np.array([3, 4])]) == ([1.5, 2, [3, 4]], "")
    assert type(plain(np.int64(2))[0]) is int
    for value in (decision, Counter(a=1), plan, len, None, ...):
        assert plain(value) == (value, "") and plain(value)[0] is value


def test_a_check_refuses_a_function_returning_a_number_of_its_own_kind_in_one_line(square_exercise, capsys):
    odd = type("MyFloat", (float,), {"__eq__": lambda self, other: True, "__hash__": float.__hash__})
    with pytest.raises(CheckFailed, match="3 of 3 checks failed"):
        check("99.square", lambda x: odd(x * x))
    out = capsys.readouterr().out
    assert "✗ square(2) == 4: returned a MyFloat, not a number: it is your own kind of float, which " in out


# --- helpers an exercise forbids -----------------------------------------------------------------

ABSENT = """
import importlib, inspect, json
from agentlab.course.forbidden import FORBIDDEN, ForbiddenHelper
from agentlab.plan import Plan, Step
from agentlab.schedule import makespan, virtual_schedule

said = {}
for helpers in FORBIDDEN.values():
    for helper in helpers:
        module, path = helper.split(":")
        found = importlib.import_module(module)
        for part in path.split("."):
            found = getattr(found, part)
        required = [p for p in inspect.signature(found).parameters.values() if p.default is p.empty
                    and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        try:
            found(*[None] * len(required))
            said[helper] = "ran"
        except ForbiddenHelper as error:
            said[helper] = str(error)
plan = Plan([Step("a", "r", "A."), Step("b", "r", "B.", ["a"])])
said["Plan.topological_order"] = [s.id for s in plan.topological_order()]  # the rest of the kit works
print(json.dumps(said))
"""


@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="the grader's sandbox needs bwrap")
def test_in_a_kit_without_them_every_forbidden_helper_only_raises_its_refusal(tmp_path):
    """The kit `forbidden.kit_without` copies, in the sandbox: every helper FORBIDDEN lists keeps its
    name and signature and raises the one-line refusal, named by an exercise that forbids it; the kit
    still imports and the rest of it runs."""
    import subprocess
    import sys

    from agentlab.course import sandbox
    from agentlab.course.forbidden import FORBIDDEN, kit_without

    (tmp_path / "work").mkdir()
    kit = kit_without(FORBIDDEN, sandbox.kit_folder(), tmp_path)
    argv = sandbox.command([sys.executable, "-c", ABSENT], tmp_path / "work", [], kit=kit)
    said = json.loads(subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout)
    assert said.pop("Plan.topological_order") == ["a", "b"]
    for helper, refusal in said.items():
        by = [e for e, helpers in FORBIDDEN.items() if helper in helpers]
        assert refusal in [f"{e} asks you not to call {helper.split(':')[1]}: write it yourself" for e in by]
    assert set(said) == {h for helpers in FORBIDDEN.values() for h in helpers}
    assert {"05.rollup", "06.crossover", "07.router-share", "04.retry-then-reroute"} <= set(FORBIDDEN)


def test_a_helper_is_left_out_by_its_body_only():
    """What `kit_without` writes for each helper: its decorators, signature and docstring, then only
    the raise of its exercise's refusal, the lines around it unchanged."""
    from agentlab.course.forbidden import FORBIDDEN, _emptied

    for forbidding, helpers in FORBIDDEN.items():
        for helper in helpers:
            module, path = helper.split(":")
            source = inspect.getsource(importlib.import_module(module))
            emptied = _emptied(source, path, forbidding)
            scope = ast.parse(emptied)
            for name in path.split("."):
                scope = next(n for n in scope.body if getattr(n, "name", None) == name)
            body = [ast.unparse(s) for s in scope.body if not isinstance(s, ast.Expr)]
            assert body == [
                "from agentlab.course.forbidden import ForbiddenHelper, refusal",
                f"raise ForbiddenHelper(refusal({forbidding!r}, {path!r}))",
            ]
            assert ast.get_docstring(scope) is not None
            before = scope.lineno - 1  # the lines above the helper's own
            assert emptied.splitlines()[:before] == source.splitlines()[:before]


@needs_solutions
@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="the grader's sandbox needs bwrap")
def test_the_grader_fails_a_lambda_that_calls_the_kits_own_answer_and_says_why(tmp_path):
    """06.crossover graded in the sandbox: the kit's `longest_winning_chain` passed off as the learner's."""
    import nbformat

    from agentlab.course.grading import grade

    notebook = nbformat.read(ROOT / "exercises" / "06_error_propagation.ipynb", as_version=4)
    notebook.cells.append(
        nbformat.v4.new_code_cell(
            "from agentlab import experiments\n"
            "longest_winning_chain = lambda p, q: experiments.longest_winning_chain(p, q)"
        )
    )
    path = tmp_path / "ann" / "06_error_propagation.ipynb"
    path.parent.mkdir()
    nbformat.write(notebook, path)
    result = {r.exercise: r for r in grade(path, timeout=60).results}["06.crossover"]
    assert result.status == "failed"
    assert "06.crossover asks you not to call longest_winning_chain: write it yourself" in result.detail


import random  # noqa: E402 - a learner's notebook imports what its answers use, as globals
from dataclasses import replace  # noqa: E402

from agentlab import experiments, world  # noqa: E402
from agentlab.hierarchy import Hierarchy, rollup  # noqa: E402
from agentlab.llm import SimulatedLLM  # noqa: E402
from agentlab.plan import Plan  # noqa: E402
from agentlab.routing import random_router  # noqa: E402
from agentlab.run import run_plan  # noqa: E402
from agentlab.schedule import makespan, virtual_schedule  # noqa: E402


def calls_by_running(width, depth, branching):
    question = world.fanout_task(random.Random(0), width, "total").question
    return len(Hierarchy(SimulatedLLM(seed=0), depth=depth, branching=branching).solve(question).calls())


FORBIDDEN_LAMBDAS = {  # for each exercise that forbids helpers, a learner's answer that hands its work to one
    "02.critical-path": (lambda plan, durations: plan.critical_path(durations), "Plan.critical_path"),
    "02.makespan": (lambda p, d, w: makespan(virtual_schedule(p, d, w)), "virtual_schedule"),
    "04.retry-then-reroute": (
        lambda step, context, team, retries, stand_in, checks=(): run_plan(
            Plan([replace(step, depends_on=())]), team
        ),
        "run_plan",
    ),
    "05.team-calls": (calls_by_running, "Hierarchy.solve"),
    "05.rollup": (lambda root: rollup(root).by_level, "rollup"),
    "06.crossover": (lambda p, q: experiments.longest_winning_chain(p, q), "longest_winning_chain"),
    "07.router-share": (lambda counts, target, router: random_router(counts, 0.5), "random_router"),
}


@pytest.mark.parametrize("exercise_id", sorted(FORBIDDEN_LAMBDAS))
def test_the_learners_own_check_refuses_a_forbidden_helper_as_the_grader_does(exercise_id, capsys):
    before = (experiments.longest_winning_chain, Plan.critical_path, run_plan)
    answer, helper = FORBIDDEN_LAMBDAS[exercise_id]
    failed = notebook_code.caught(capsys, exercise_id, answer)
    refused = f"raised ForbiddenHelper: {exercise_id} asks you not to call {helper}: write it yourself"
    assert any(line.endswith(refused) for line in failed), failed
    assert (experiments.longest_winning_chain, Plan.critical_path, run_plan) == before  # the kit is put back
