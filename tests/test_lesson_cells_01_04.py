"""The "your turn" cells of lessons 01–04 (agentlab.yourturn): each cell's self-check passes the
worked answer in solutions/lessons/NN.md and names the problem in a plausible wrong answer, and the
cell as shipped (the stub) says "not written yet" and carries on. Only the cells each check needs
are run, so the file takes seconds."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat
import pytest
from notebook_code import skip_without_solutions

from agentlab.progress import CHECK_CALL
from agentlab.yourturn import NOT_WRITTEN, PASSED

skip_without_solutions()

ROOT = Path(__file__).resolve().parents[1]
PRELUDE = "from agentlab.yourturn import not_written, your_turn\n"


def notebook(number: str) -> dict[str, str]:
    """The code cells of lesson `number`, by cell id."""
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    return {c.id: c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"}


def worked_answer(cell_id: str) -> str:
    """The code block under the heading `## cell_id` in solutions/lessons/NN.md."""
    text = (ROOT / "solutions" / "lessons" / f"{cell_id[:2]}.md").read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(cell_id)}\n.*?```python\n(.*?)```", text, re.M | re.S)
    assert found, f"no worked answer for {cell_id}"
    return found.group(1)


def run_turn(number: str, setup: list[str], turn: str, lines: str | None) -> str:
    """Run the setup cells, then the learner's lines (or the stub cell when None), then the check
    cell; return what the check cell printed."""
    cells, namespace = notebook(number), {}
    exec(PRELUDE, namespace)
    with contextlib.redirect_stdout(io.StringIO()):
        for cell_id in setup:  # a cell's id, or a line of setup in its place
            exec(cells.get(cell_id, cell_id), namespace)
        exec(cells[f"{turn}1"] if lines is None else lines, namespace)
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        exec(cells[f"{turn}2"], namespace)
    return shown.getvalue()


# (lesson, the setup cells (or lines standing in for a costly one), the turn's cell-id prefix, the
# self-check's id, a wrong answer, words its verdict must contain, what the lesson then prints when
# the answer is used)
CASES = [
    (
        "01",
        ["c02", "c06", "c08", "c10"],
        "nb01-turn-a",
        "01.both-researchers",
        "def comparison_plan(task):\n"
        '    return Plan([Step("r1", "researcher", "A."), Step("r2", "researcher", "B."),\n'
        '                 Step("w", "writer", "C.", depends_on=["r2"])])\n',
        "not on both researchers",
        "w writer     given ['r1', 'r2']",
    ),
    (
        "01",
        ["c02", "c17"],
        "nb01-turn-b",
        "01.translator",
        "def translator(step, context):\n    return context['s4']\n",
        "unchanged",
        "s5    translator s4",
    ),
    (
        "02",
        ["8ef59fd4"],
        "nb02-turn-a",
        "02.ready",
        "def ready(plan, done):\n    return [s.id for s in plan if s.id not in done]\n",
        "with [] done it gave",
        "waves: [['s1', 's2'], ['s3'], ['s4']]",
    ),
    (
        "02",
        ["8ef59fd4", "428a7059", "7d5c464d", "1533761b", "acd8e3b7", "ac152a71"],
        "nb02-turn-b",
        "02.slow-critic",
        "def slow_critic_plan():\n"
        '    return Plan([replace(s, duration=5.0) if s.id == "s3" else s for s in plan])\n'
        "my_prediction = 8.0\n",
        "you predicted 8.0 s, two workers take 10 s",
        "critical path: (['s1', 's3', 's4'], 10.0)",
    ),
    (
        "03",
        ["f3500260", "514cd91d", "423c941c", "649944c6"],
        "nb03-turn-a",
        "03.by-hand",
        "my_question = 'What is the age of the governor of the home island of Petra Quist?'\n"
        "def my_answer():\n    return world.lookup(world.lookup('Petra Quist', 'home island'), 'governor')\n",
        "the records do not give",
        "the team answers '47': right",
    ),
    (
        "03",
        [
            "f3500260",
            "514cd91d",
            "423c941c",
            "649944c6",
            "forgetful = SimulatedLLM(seed=1, error_rate=1.0, error_kinds=['dropped_dependency'])",
            "task = world.make_tasks(1, seed=0)[0]",
        ],
        "nb03-turn-b",
        "03.unwaited",
        "def unwaited(plan):\n    return []\n",
        "let a step use what it does not wait for",
        "refused: ['step",
    ),
    (
        "04",
        [
            "76d3a13b",
            "d8ec3ef4",
            "f6680306",
            "from agentlab.monitor import recompute_critic\nfrom agentlab.recovery import Retry",
        ],
        "nb04-turn-a",
        "04.lookup-critic",
        "def lookup_critic(step, output, context):\n    return None\n",
        "it approved a wrong answer to a lookup",
        "-> Lamplighters Guild (right)",
    ),
    (
        "04",
        ["76d3a13b", "d8ec3ef4", "from agentlab.recovery import Retry"],
        "nb04-turn-b",
        "04.price-retry",
        "def finally_fails(p, retries):\n    return p ** retries\n"
        "def attempts_per_step(p, retries):\n    return 1 + p * retries\n",
        "finally_fails(0.5, 0) gave 1.0, not 0.5",
        "1.39",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[3])
def test_the_worked_answer_passes_and_the_lesson_uses_it(case):
    number, setup, turn, cell_id, _, _, used = case
    shown = run_turn(number, setup, turn, worked_answer(cell_id))
    assert shown.startswith(f"Checking {cell_id}:\n{PASSED}\n"), shown
    assert used in shown, shown


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[3])
def test_a_wrong_answer_is_named_in_a_line(case):
    number, setup, turn, cell_id, wrong, words, _ = case
    verdict = run_turn(number, setup, turn, wrong).splitlines()[1]
    assert verdict.startswith("  ✗ ") and words in verdict, verdict


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[3])
def test_the_stub_as_shipped_says_not_written_yet_and_the_lesson_carries_on(case):
    number, setup, turn, cell_id, _, _, _ = case
    shown = run_turn(number, setup, turn, None)
    assert shown.startswith(f"Checking {cell_id}:\n  {NOT_WRITTEN}\n") and "Traceback" not in shown, shown
    assert len(shown.splitlines()) > 2, "the lesson printed nothing after the check"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case[3])
def test_progress_finds_the_cell_and_its_stored_output_says_not_written_yet(case):
    number, _, turn, cell_id, _, _, _ = case
    path = next((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    cell = next(c for c in nbformat.read(path, as_version=4).cells if c.get("id") == f"{turn}2")
    assert CHECK_CALL.findall(cell.source) == [cell_id]  # how `agentlab progress` finds the cell
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert f"Checking {cell_id}:\n  {NOT_WRITTEN}" in shown
