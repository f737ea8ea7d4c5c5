"""The capstone's learner side: the trade desk's task family, the simulator on it, the reference team,
and `evaluate`, which a learner reads their team's verdict from."""

import contextlib
import io
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from agentlab import capstone as C
from agentlab.compare import Outcome
from agentlab.llm.simulated import SimulatedLLM
from agentlab.recovery import Replan
from agentlab.world import ToolError, check_answer, lookup, parse_question
from agentlab.world import capstone as family
from agentlab.world.capstone_model import plan_slip, read
from agentlab.yourturn import NOT_WRITTEN, PASSED, your_turn


@pytest.fixture(scope="module")
def reference():
    """The reference on the dev set, on the capstone's model (seed 0), and the mistakes it made."""
    llm = C.capstone_llm()
    setup = C.capstone_setup(llm)
    return [C.reference_team(t, setup) for t in C.dev_tasks()], llm


# --- the family ------------------------------------------------------------------------------------


def test_the_tasks_are_the_same_for_the_same_seed_and_differ_between_seeds():
    assert C.dev_tasks() == C.capstone_tasks(40, C.DEV_SEED) == C.dev_tasks()
    assert C.capstone_tasks(10, C.DEV_SEED) == C.dev_tasks()[:10]  # a prefix, whatever the count
    other = C.capstone_tasks(40, C.DEV_SEED + 1)
    assert len({t.question for t in other} & {t.question for t in C.dev_tasks()}) < 10
    assert {t.family for t in C.dev_tasks()} == set(family.FAMILIES)


def test_a_conversion_chains_lookups_then_converts_at_the_exchange_rate():
    q = read("What is the price of the main export of Varra in shells?")
    assert isinstance(q, family.Convert) and q.to == "shells"
    amberfish = int(lookup(lookup("Varra", "main export"), "price"))
    assert family.gold(q) == str(amberfish * 12)
    assert (
        family.convert("58", "crowns", "marks") == "14.5"
        and family.convert("14.5", "marks", "crowns") == "58"
    )
    with pytest.raises(ToolError, match="cannot convert 'tons' to 'shells'"):
        family.convert("3", "tons", "shells")


def test_every_gold_answer_is_what_the_records_say():
    for task in C.capstone_tasks(60, 5):
        q = read(task.question)
        assert q is not None and family.render_capstone(q) == task.question
        if isinstance(q, family.Margin):
            values = {n: int(lookup(n, q.attribute)) for n in q.items}
            top = max(values, key=values.get)
            assert task.answer == f"{top}, by {values[top] - min(values.values())}"
        elif isinstance(q, family.Conditional):
            a, b = (int(lookup(n, q.attribute)) for n in (q.first, q.second))
            here = q.first if (a > b) == q.higher else q.second
            for attribute in q.path:
                here = lookup(here, attribute)
            assert task.answer == here
        else:
            rate = family.RATES[family.base_unit(q.phrase), q.to]
            assert float(task.answer) == pytest.approx(float(family.resolve(q.phrase)) * rate)


def test_a_margin_is_right_only_with_both_the_name_and_the_amount():
    task = next(t for t in C.dev_tasks() if t.family == "margin")
    name, amount = task.answer.split(", by ")
    assert task.check(task.answer) and task.check(f"{name} ({amount} more)")
    assert not task.check(name) and not task.check(amount) and not task.check(f"{name}, by {int(amount) + 1}")
    other = next(n for n in read(task.question).items if n != name)
    assert not task.check(f"{other}, by {amount}") and not task.check(f"{name} or {other}, by {amount}")


def test_the_lessons_questions_are_not_read_as_the_capstones():
    for text in [
        "What is the population of Varra?",
        "What is the total crew of Silver Heron and Moth Queen?",
        "Which has the highest price: Amberfish, Bluetin or Emberpeat?",
        "What is 2140 + 3875?",
    ]:
        assert read(text) is None and parse_question(text) is not None


# --- the simulator on it ------------------------------------------------------------------------------


def test_without_errors_the_simulator_solves_every_task_with_a_plan_and_with_one_agent():
    setup = C.capstone_setup(SimulatedLLM(seed=0))
    for task in C.capstone_tasks(15, 3):
        assert C.reference_team(task, setup).right, task.question
        assert C.one_agent(task, setup).right, task.question
        agent_steps = C.planned(task, replace(setup, tool_steps=False))  # every step asked of an agent
        assert agent_steps.right, task.question


def test_the_reference_is_right_on_55_to_85_percent_of_the_dev_set_and_fits_the_budget(reference):
    outcomes, _ = reference
    accuracy = sum(o.right for o in outcomes) / len(outcomes)
    assert 0.55 <= accuracy <= 0.85, accuracy  # 27 of 40 (67.5%) when written
    assert max(o.cost for o in outcomes) < C.BUDGET_PER_TASK / 2


def test_the_runs_are_the_same_whatever_else_ran_before(reference):
    outcomes, _ = reference
    task = C.dev_tasks()[9]
    again = C.reference_team(task, C.capstone_setup(C.capstone_llm()))
    assert (again.answer, again.cost, again.seconds) == (
        outcomes[9].answer,
        outcomes[9].cost,
        outcomes[9].seconds,
    )


def test_tasks_run_side_by_side_on_one_model_answer_as_they_do_one_by_one(reference):
    outcomes, _ = reference
    setup = C.capstone_setup(C.capstone_llm())
    with ThreadPoolExecutor(4) as pool:  # as a grader may run them: threads sharing one model
        threaded = list(pool.map(lambda t: C.reference_team(t, setup), reversed(C.dev_tasks())))[::-1]
    assert [(o.answer, o.cost) for o in threaded] == [(o.answer, o.cost) for o in outcomes]


def test_an_erring_plan_for_a_conversion_may_skip_it_and_report_the_unconverted_amount():
    task = next(t for t in C.dev_tasks() if t.family == "convert")
    llm = SimulatedLLM(seed=0, error_rate=1.0)
    out = C.reference_team(task, C.capstone_setup(llm))
    assert "skipped_conversion" in [e.kind for e in llm.injected]
    assert all(step.tool != "convert" for step in out.run.plan)
    steps = [
        {
            "id": "s1",
            "role": "researcher",
            "instruction": "What is the age of Jory Pike?",
            "depends_on": [],
            "tool": "lookup",
            "args": {"entity": "Jory Pike", "attribute": "age"},
        },
        {
            "id": "s2",
            "role": "analyst",
            "instruction": "What is $s1 years in moons?",
            "depends_on": ["s1"],
            "tool": "convert",
            "args": {"amount": "$s1", "unit": "years", "to": "moons"},
        },
        {
            "id": "s3",
            "role": "writer",
            "instruction": "Report ... The result to report is $s2.",
            "depends_on": ["s2"],
        },
    ]
    question = "What is the age of Jory Pike in moons?"
    slips = [plan_slip(question, [dict(s) for s in steps], ("x",), random.Random(i)) for i in range(400)]
    skipped = [s for s in slips if s]
    assert 0.7 < len(skipped) / 400 < 0.8  # SLIP_SHARE of the erring calls
    assert skipped[0][0][-1]["depends_on"] == ["s1"] and skipped[0][0][-1]["instruction"].endswith("is $s1.")
    assert plan_slip(question, steps, (), random.Random(0)) is None  # no error drawn: no slip


# --- designs change the outcome, and evaluate says by how much ------------------------------------------


def better_team(task, setup):
    """Plans on the planner-trained model, in parallel, with replanning; reports what the steps found."""
    out = C.planned(task, replace(setup, planner_model="sim-planner"), workers=16, recovery=[Replan()])
    found = C.handed_over(out)
    return replace(out, answer=found) if found else out


def wasteful_team(task, setup):
    """Five plans with the large model and a ReAct agent, for one answer."""
    runs = [
        C.planned(task, replace(setup, executor_model=m), workers=w)
        for m in ("sim-large",)
        for w in (1, 2, 3, 4, 5)
    ] + [C.one_agent(task, setup)]
    return C.joined(task, runs[0].answer, runs)


def test_a_better_designed_team_beats_the_reference_on_the_dev_set_for_less(reference):
    report = C.evaluate(better_team, name="better")
    assert [o.answer for o in report.reference] == [o.answer for o in reference[0]]  # the same runs
    assert report.accuracy.clear() and report.accuracy.only_b == 0, str(report.accuracy)
    assert report.accuracy.interval[0] > 0 and report.kept.kept
    assert report.cost.difference < 0 and report.within_budget == 40


def test_a_wasteful_team_goes_over_the_budget_and_its_tasks_over_it_count_as_wrong():
    tasks = C.dev_tasks(9)
    report = C.evaluate(wasteful_team, tasks)
    over = [o for o in report.mine if o.cost > C.BUDGET_PER_TASK]
    assert over and report.within_budget == 9 - len(over)
    assert report.accuracy.a_right == sum(o.right for o in report.mine) - sum(o.right for o in over)
    assert f"{9 - len(over)}/9" in str(report)


def test_the_report_prints_intervals_paired_tests_and_the_verdicts(reference):
    report = C.evaluate(C.reference_team, C.dev_tasks(12), name="copy")
    text = str(report)
    assert "[95% CI" in text and "exact McNemar" in text and "sign test" in text
    assert "no measurable difference at n = 12, Holm-adjusted over 3 tests" in text
    assert "not enough tasks: run more" in text  # a copy, but 12 tasks cannot show it within 5 points
    assert "<table>" in report._repr_html_() and "%" in report.rows()[0][1]
    low, high = (float(x.rstrip("%]")) for x in report.rows()[1][1].split("[")[1].split(", "))
    assert low < 100 * sum(o.right for o in report.reference) / 12 < high


def test_a_team_may_return_the_answer_alone_and_bad_returns_say_what_is_wrong():
    task = C.dev_tasks(1)[0]
    report = C.evaluate(lambda t, s: t.answer, [task])  # cheating, but the shape is allowed: it costs $0
    assert report.mine[0].right and report.mine[0].cost == 0
    with pytest.raises(TypeError, match="returns an Outcome or the answer as a str, not int"):
        C.evaluate(lambda t, s: 42, [task])
    assert isinstance(C.joined(task, None, []), Outcome) and check_answer(None, "x") is False


# --- the lesson's "your turn" cells and the worked solution -----------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "notebooks" / "12_capstone.ipynb"
SOLUTION = ROOT / "solutions" / "lessons" / "12.md"


def check_code(cell_id: str) -> str:
    """The lines of the lesson's check cell before its `your_turn(cell_id, ...)` call."""
    cells = nbformat.read(LESSON, as_version=4).cells
    source = next(c.source for c in cells if c.cell_type == "code" and f'your_turn("{cell_id}"' in c.source)
    return source[: source.index(f'your_turn("{cell_id}"')].rsplit("\n", 1)[0]


def said(capsys, cell_id, test) -> str:
    your_turn(cell_id, test, "here")
    return capsys.readouterr().out.split("\n", 1)[1].strip()


@pytest.fixture(scope="module")
def lesson(reference):
    outcomes, _ = reference
    tasks = C.dev_tasks()
    task = next(t for t in tasks if t.family == "convert")
    skipped = C.reference_team(
        task, C.capstone_setup(SimulatedLLM(seed=0, error_rate=1.0, error_kinds=["malformed_json"]))
    )
    ns = {
        "tasks": tasks,
        "reference": outcomes,
        "setup": C.capstone_setup(C.capstone_llm()),
        "task": task,
        "skipped": skipped,
        "Outcome": Outcome,
        "BUDGET_PER_TASK": C.BUDGET_PER_TASK,
        "SimulatedLLM": SimulatedLLM,
        "reference_team": C.reference_team,
        "capstone_setup": C.capstone_setup,
    }
    exec("from agentlab.yourturn import not_written, your_turn", ns)
    exec(check_code("12.my-team"), ns)
    exec(check_code("12.suspicious"), ns)
    exec(SOLUTION.read_text().split("```python\n")[1].split("```")[0], ns)  # the worked suspicious()
    return ns


def test_the_team_check_says_not_written_for_the_default_and_passes_a_team_of_ones_own(lesson, capsys):
    default = "def my_team(task, setup):\n    return reference_team(task, setup)\n"
    exec(default, lesson)
    assert said(capsys, "12.my-team", lambda: lesson["team_problem"](lesson["my_team"])) == NOT_WRITTEN
    assert said(capsys, "12.my-team", lambda: lesson["team_problem"](better_team)) == PASSED
    assert "over the $0.05 budget" in said(
        capsys, "12.my-team", lambda: lesson["team_problem"](wasteful_team)
    )
    assert "returned int" in said(capsys, "12.my-team", lambda: lesson["team_problem"](lambda t, s: 3))


def test_the_suspicious_check_passes_the_worked_answer_and_names_what_a_wrong_one_misses(lesson, capsys):
    assert said(capsys, "12.suspicious", lesson["check_problem"]) == PASSED
    exec("def suspicious(task, outcome):\n    return not outcome.answer\n", lesson)
    assert "says False for the skipped conversion" in said(capsys, "12.suspicious", lesson["check_problem"])


def test_the_worked_team_prints_what_the_solution_shows():
    text = SOLUTION.read_text()
    code = "".join(text.split("```python\n")[i].split("```")[0] for i in (1, 2))
    shown = text.split("print(evaluate(my_team))\n```\n\n```\n")[1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})
    assert out.getvalue() == shown.split("```")[0]


def test_the_quiz_says_what_the_reference_did(reference):
    outcomes, _ = reference
    wrong = [o for o in outcomes if not o.right]
    retold = [o for o in wrong if C.handed_over(o) and o.task.check(C.handed_over(o))]
    assert (len(wrong), len(retold)) == (13, 7)  # quiz 12.where-wrong's question and its why
