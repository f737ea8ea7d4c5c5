"""The "your turn" cells of lessons 05-08: each cell's self-check, read from the notebook itself,
passes the worked answer in solutions/lessons/NN.md and names the problem in a plausible wrong answer;
and each cell ships unwritten, its stored output saying so, where `agentlab progress` finds it."""

import ast
import math
import random
import re
from pathlib import Path

import nbformat
import pytest

from agentlab import Plan, Step, world
from agentlab.compare import Setup, compare, row
from agentlab.experiments import with_checker
from agentlab.handoffs import handoff
from agentlab.hierarchy import Hierarchy
from agentlab.llm import SimulatedLLM, Usage, usage_report
from agentlab.llm.usage import PRICES, cost
from agentlab.planners import stub_planner
from agentlab.progress import CHECK_CALL
from agentlab.routing import split
from agentlab.world.tasks import steps_needed
from agentlab.yourturn import NOT_WRITTEN

ROOT = Path(__file__).resolve().parents[1]
LESSONS = {n: next((ROOT / "notebooks").glob(f"{n}_*.ipynb")) for n in ("05", "06", "07", "08")}


def code_cells(lesson: str) -> list[str]:
    return [c.source for c in nbformat.read(LESSONS[lesson], as_version=4).cells if c.cell_type == "code"]


def from_notebook(lesson: str, name: str, namespace: dict) -> dict:
    """Define the notebook's function `name` (its own source, nothing else of its cell) in `namespace`."""
    for source in code_cells(lesson):
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                exec(ast.get_source_segment(source, node), namespace)
                return namespace
    raise AssertionError(f"no function {name} in lesson {lesson}")


def worked(cell_id: str, namespace: dict) -> dict:
    """Run the worked answer of `cell_id`: the first python block under its heading in the solutions."""
    text = (ROOT / "solutions" / "lessons" / f"{cell_id[:2]}.md").read_text(encoding="utf-8")
    section = text.split(f"## {cell_id}\n", 1)[1].split("\n## ", 1)[0]
    exec(re.search(r"```python\n(.*?)```", section, re.S).group(1), namespace)
    return namespace


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_every_cell_ships_unwritten_and_has_a_worked_answer(lesson):
    cells = nbformat.read(LESSONS[lesson], as_version=4).cells
    ids = [m for c in cells if c.cell_type == "code" for m in CHECK_CALL.findall(c.source)]
    assert len(ids) >= 2 and len(set(ids)) == len(ids), ids
    exercise = (ROOT / "exercises" / LESSONS[lesson].name).read_text(encoding="utf-8")
    assert not set(ids) & set(re.findall(r'check\(\\"(\d\d\.[\w-]+)', exercise)), "an exercise has that id"
    answers = (ROOT / "solutions" / "lessons" / f"{lesson}.md").read_text(encoding="utf-8")
    for cell_id in ids:
        assert f"## {cell_id}\n" in answers, cell_id
        shown = "".join(o.get("text", "") for c in cells if cell_id in c.source for o in c.outputs)
        assert f"Checking {cell_id}:\n  {NOT_WRITTEN}" in shown, cell_id


@pytest.fixture(scope="module")
def task():
    return world.fanout_task(random.Random(1), 8, "total")  # lesson 05's task


def test_05_predict_calls(task):
    ns = from_notebook("05", "calls_problem", {})
    sim = SimulatedLLM(seed=0)
    shapes = ((2, 3), (3, 2))
    measured = {
        (d, b): len(Hierarchy(sim, depth=d, branching=b).solve(task.question).calls()) for d, b in shapes
    }
    assert ns["calls_problem"](worked("05.predict-calls", {})["predicted_calls"], measured) == ""
    said = ns["calls_problem"](lambda depth, branching: 2 * depth * branching, measured)
    assert said.startswith("depth 2, branching 3: you say 12, the run made 8")


def test_05_rollup(task):
    ns = from_notebook("05", "rollup_problem", {"usage_report": usage_report})
    three = Hierarchy(SimulatedLLM(seed=0), depth=3, branching=2).solve(task.question)
    assert ns["rollup_problem"](worked("05.my-rollup", {})["my_rollup"], three) == ""

    def every_run(root):  # counts a call once for every level it passes on the way up
        calls = [c for team in root.walk() for _, _, c in team.run.calls]
        return len(calls), sum(c.usage.total_tokens for c in calls)

    assert re.match(r"you count \d+ calls .* the bill has 14 and", ns["rollup_problem"](every_run, three))


def test_06_upstream():
    report = stub_planner("Write a short report on planner-executor agents.")
    note = Step("note", "critic", "Comment on the sketch.", depends_on=("s2",))
    with_side_note = Plan([*report.steps[:3], note, report.steps[3]])
    p = {"s1": 0.9, "s2": 0.9, "s3": 0.9, "note": 0.2, "s4": 0.9}
    given = {"math": math, "report": report, "with_side_note": with_side_note, "p": p}
    ns = from_notebook("06", "upstream_problem", given)
    assert ns["upstream_problem"](worked("06.upstream", {"math": math})["deliverable_success"]) == ""
    every_step = ns["upstream_problem"](lambda plan, probs: math.prod(probs[s.id] for s in plan))
    assert "you say 0.1312, it is 0.6561" in every_step


def test_06_checker_chain():
    ns = from_notebook("06", "checker_problem", {"with_checker": with_checker})
    assert ns["checker_problem"](worked("06.checker-chain", {})["chain_with_checker"]) == ""
    no_second_try = ns["checker_problem"](lambda p, n, catch: (p + (1 - p) * catch) ** n)
    assert no_second_try.startswith("p=0.9, n=5, c=0.8: you say 0.9039, it is 0.8676")


def test_07_price_bill():
    ns = from_notebook("07", "price_problem", {"math": math, "cost": cost, "Usage": Usage})
    assert ns["price_problem"](worked("07.price-bill", {"PRICES": PRICES})["price"]) == ""
    one_price = ns["price_problem"](lambda model, i, o: (i + o) * PRICES[model].input / 1_000_000)
    assert one_price.startswith("sim-large, 1,864 in, 82 out: you say 0.005838 USD, the table says 0.006822")


def test_07_routing_rule():
    ns = from_notebook("07", "router_problem", {})
    goals = [t.question for t in world.make_tasks(200, seed=2)]  # the lesson's routed tasks
    mine = worked("07.routing-rule", {"steps_needed": steps_needed})["my_router"]
    assert ns["router_problem"](mine, goals) == ""
    assert "returns 'strong' for" in ns["router_problem"](lambda goal: "strong", goals)
    over = ns["router_problem"](lambda goal: "sim-large" if steps_needed(goal) >= 2 else "sim-small", goals)
    assert re.fullmatch(r"it sends \d+% of the tasks to the strong model, over the budget of 50%", over)


@pytest.fixture(scope="module")
def tuning_batch():
    """A small batch through one agent and the team, both on the large model, as in lesson 08."""
    tasks = world.make_tasks(30, seed=1)
    setup = Setup(SimulatedLLM(seed=0, error_rate=0.1), tool_steps=False)
    return compare(tasks, setup, ["react", "planner+workers"])


def test_08_routed_accuracy(tuning_batch):
    given = {"math": math, "world": world, "row": row, "split": split}
    ns = from_notebook("08", "routed_problem", given)
    mine = worked("08.routed-accuracy", {"world": world})["routed_accuracy"]
    assert ns["routed_problem"](mine, tuning_batch) == ""

    def reversed_rule(comparison, threshold):  # the team for the small tasks
        one, team = comparison.outcomes["react"], comparison.outcomes["planner+workers"]
        picked = [
            (one if world.steps_needed(t.question) >= threshold else team)[i].right
            for i, t in enumerate(comparison.tasks)
        ]
        return sum(picked) / len(picked)

    assert re.match(r"the team from \d+ steps: you say", ns["routed_problem"](reversed_rule, tuning_batch))


def test_08_handoff_audit():
    ns = from_notebook("08", "audit_problem", {"handoff": handoff})
    question, llm = world.chain_task(random.Random(7), 4).question, SimulatedLLM(seed=0)  # lesson 08's task
    assert ns["audit_problem"](worked("08.audit-line", {})["audit"], question, llm) == ""

    def reads_the_note(run):  # looks for the request in the note, where the fix does not put it
        return [f"turn {t.turn} dropped it" for t in run.transfers if run.task not in t.note]

    said = ns["audit_problem"](reads_the_note, question, llm)
    assert said == "it flags the 'intent' handoff, which forwards the request"
    assert ns["audit_problem"](lambda run: None, question, llm) == "it returns NoneType, not a list of lines"
