"""The capstone, graded end to end: a class folder of capstone notebooks through `agentlab course
grade` (each in its sandbox, on the instructor's held-out tasks, with the grader's model), then
`agentlab course leaderboard`. Honest teams are ranked by the stated rule; every gaming attempt
gets its named status and no rank; what the learner's code received never holds a held-out answer
or the grader's seeds."""

from __future__ import annotations

import csv
import io
import json
import struct
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from notebook_code import write_notebook as write

from agentlab.capstone import BUDGET_PER_TASK, dev_tasks
from agentlab.course import capstone, leaderboard, sandbox, wire
from agentlab.course.cli import main
from agentlab.course.hidden import capstone as hidden
from agentlab.world import Task

HONEST = """from agentlab.capstone import reference_team

def my_team(task, setup):
    return reference_team(task, setup)
"""

# A better-designed team: the kit's own (the planner-trained model, steps side by side, replanning,
# and the result the steps found rather than the writer's retelling), where the kit has those
# building blocks; else self-consistency: the reference asked again a little differently (so the
# simulator's slips are drawn afresh), a third time when the two disagree, and the answer most gave.
BETTER = """import dataclasses
from collections import Counter
from agentlab.capstone import BUDGET_PER_TASK, reference_team

try:
    from agentlab.capstone import handed_over, planned
    from agentlab.recovery import Replan

    def my_team(task, setup):
        setup = dataclasses.replace(setup, planner_model="sim-planner")
        out = planned(task, setup, workers=16, recovery=[Replan()])
        return handed_over(out) or out
except ImportError:
    class Nudged:
        def __init__(self, llm, k):
            self.llm, self.k, self.backend = llm, k, llm.backend
        def complete(self, *, system, **request):
            return self.llm.complete(system=system + f"\\n(Attempt {self.k}.)", **request)

    def my_team(task, setup):
        runs = []
        for k in range(3):
            if len(runs) == 2 and runs[0].answer == runs[1].answer:
                break
            if runs and sum(r.cost for r in runs) * (len(runs) + 1) / len(runs) > 0.8 * BUDGET_PER_TASK:
                break
            runs.append(reference_team(task, dataclasses.replace(setup, llm=Nudged(setup.llm, k))))
        said = Counter(r.answer for r in runs if r.answer)
        return said.most_common(1)[0][0] if said else None
"""

PRICIER = """from agentlab.capstone import reference_team

def my_team(task, setup):
    setup.llm.complete(system="Think first.", messages=[{"role": "user", "content": task.question}])
    return reference_team(task, setup)
"""

HALF = """from agentlab.capstone import reference_team

def my_team(task, setup):
    outcome = reference_team(task, setup)
    return outcome if int(task.id[1:]) % 2 else "I pass"
"""

FAKE_COST = """import dataclasses
from agentlab.capstone import reference_team

def my_team(task, setup):
    return dataclasses.replace(reference_team(task, setup), calls=(), seconds=0.0)  # "free, and instant"
"""

RUNAWAY = """def my_team(task, setup):
    long = task.question + " Think it over, at length. " * 2000
    while True:
        try:
            setup.llm.complete(system="Again.", messages=[{"role": "user", "content": long}])
        except Exception:
            pass
"""

SLEEPY = """import time
from agentlab.capstone import reference_team

def my_team(task, setup):
    time.sleep(60)
    return reference_team(task, setup)
"""

GOLD = """from agentlab.world import gold_answer

def my_team(task, setup):
    setup.llm.complete(system="Hello.", messages=[{"role": "user", "content": task.question}])
    return gold_answer(task.question)
"""

OWN_SIMULATOR = """from agentlab.capstone import capstone_setup, reference_team
from agentlab.llm.simulated import SimulatedLLM

def my_team(task, setup):
    setup.llm.complete(system="Hello.", messages=[{"role": "user", "content": task.question}])
    return reference_team(task, capstone_setup(SimulatedLLM(seed=0)))
"""

SEEDS = """try:
    from agentlab.course.hidden.capstone import HELD_OUT_SEED, SIMULATOR_SEED
except ImportError:
    HELD_OUT_SEED = SIMULATOR_SEED = 0
"""

NEIGHBOUR = """def my_team(task, setup):
    try:
        open("../alice/12_capstone.ipynb").read()
    except OSError:
        pass
    return None
"""

NB = "12_capstone.ipynb"


def hard_coded() -> str:
    """A team that answers from the dev set's answers, pasted in, and never asks the model."""
    table = {t.question: t.answer for t in dev_tasks(40)}
    return f"ANSWERS = {table!r}\n\ndef my_team(task, setup):\n    return ANSWERS.get(task.question, '42')\n"


TEAMS = {
    "alice": [HONEST],
    "bob": [BETTER],
    "carol": [PRICIER],
    "dave": [HALF],
    "ivan": [FAKE_COST],
    "eve": [SEEDS, HONEST],
    "faythe": [NEIGHBOUR],
    "frank": [hard_coded()],
    "grace": [GOLD],
    "heidi": [OWN_SIMULATOR],
    "judy": [RUNAWAY],
    "ken": [SLEEPY],
    "<b>oscar</b>": ["print('no team here')"],
}
RANKED = {"alice", "bob", "carol", "dave", "ivan"}
STATUS = {
    "eve": "reads hidden",
    "faythe": "reads hidden",
    "frank": "hard-coded",
    "grace": "own model",
    "heidi": "own model",
    "judy": "over budget",
    "ken": "too slow",
    "<b>oscar</b>": "no my_team",
}


def run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded, alice's notebook changed, the class graded again; then the board."""
    sandbox.bwrap()
    tmp = tmp_path_factory.mktemp("capstone")
    klass, results = tmp / "class", tmp / "out" / "grades.jsonl"
    paths = [str(write(klass / name / NB, *cells)) for name, cells in TEAMS.items()]
    grade = ["course", "grade", *paths, "--timeout", "60", "--task-timeout", "3", "--jobs", "2"]
    grade += ["--results", str(results)]
    started = time.monotonic()
    first, report = run(*grade)
    seconds = time.monotonic() - started
    write(klass / "alice" / NB, "# my second try: the same team", HONEST)
    second, _ = run(*grade)
    html, csv_path = tmp / "board.html", tmp / "board.csv"
    code, text = run(
        "course", "leaderboard", "--results", str(results), "--html", str(html), "--csv", str(csv_path)
    )
    assert code == 0, text
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO(csv_path.read_text(encoding="utf-8")))}
    log = [json.loads(line) for line in (results.parent / "capstone.jsonl").read_text().splitlines()]
    return {
        "codes": (first, second),
        "report": report,
        "seconds": seconds,
        "html": html.read_text(encoding="utf-8"),
        "rows": rows,
        "text": text,
        "log": log,
        "board": leaderboard.board(results.parent / "capstone.jsonl"),
    }


def test_each_gaming_attempt_gets_its_named_status_and_no_rank(graded):
    rows = graded["rows"]
    for learner, status in STATUS.items():
        assert rows[learner]["status"] == status, (learner, rows[learner])
        assert rows[learner]["rank"] == "", learner
        assert rows[learner]["detail"] == capstone.STATUSES[status]
    assert {name for name, r in rows.items() if r["rank"]} == RANKED
    assert graded["codes"][0] == 1  # not every notebook passed
    assert f"judy/{NB}: 0/1" in graded["report"] and "over budget" in graded["report"]


def test_honest_teams_are_ranked_by_the_stated_rule(graded):
    rows = graded["rows"]
    rank = {name: int(r["rank"]) for name, r in rows.items() if r["rank"]}
    accuracy = {name: float(r["accuracy"]) for name, r in rows.items() if r["rank"]}
    cost = {name: float(r["usd_per_task"]) for name, r in rows.items() if r["rank"]}
    assert accuracy["bob"] > accuracy["alice"] and rank["bob"] == 1 and rows["bob"]["tier"] == "1"
    # carol gives alice's answers at a higher price: non-inferior, so tied with her, and after her
    assert accuracy["carol"] == accuracy["alice"] and cost["carol"] > cost["alice"]
    assert rows["carol"]["tier"] == rows["alice"]["tier"] and rank["alice"] < rank["carol"]
    assert rows["alice"]["non_inferior_to_reference"] == "yes"
    # dave answers half the tasks: not non-inferior to his tier's leader, so in a lower tier
    assert int(rows["dave"]["tier"]) > int(rows["alice"]["tier"]) and rank["dave"] == 5
    assert rows["dave"]["non_inferior_to_reference"] == "no"
    assert "Holm" in rows["alice"]["vs_reference_accuracy"]


def test_cost_is_the_graders_meter_not_what_the_team_reports(graded):
    rows = graded["rows"]
    assert float(rows["ivan"]["usd_per_task"]) == float(rows["alice"]["usd_per_task"]) > 0
    assert rows["ivan"]["model_seconds_per_task"] == rows["alice"]["model_seconds_per_task"]
    judy = next(e for e in graded["log"] if e["graded"]["learner"] == "judy")["graded"]["capstone"]
    assert judy["status"] == "over budget" and f"budget of ${BUDGET_PER_TASK:g} per task" in judy["detail"]


def test_every_submission_is_counted_and_the_latest_stands(graded):
    rows = graded["rows"]
    assert rows["alice"]["submissions"] == "2"
    assert {r["submissions"] for name, r in rows.items() if name != "alice"} == {"1"}
    assert len(graded["log"]) == len(TEAMS) + 1  # the unchanged notebooks were not graded again
    assert graded["codes"][1] == 1


def test_the_page_and_the_csv_escape_learners_and_state_the_rule(graded):
    page, text = graded["html"], graded["text"]
    assert "&lt;b&gt;oscar&lt;/b&gt;" in page and "<b>oscar" not in page
    assert leaderboard.RULE.split(".")[0] in page and "non-inferior" in page
    assert page.count("<tr>") == len(TEAMS) + 1
    assert text.splitlines()[0] == leaderboard.RULE


def test_a_class_grades_in_modest_time(graded):
    assert graded["seconds"] < 120, graded["seconds"]


# --- what crossed ---------------------------------------------------------------------------------


def test_no_held_out_answer_or_grader_seed_crosses_to_the_learner(tmp_path, monkeypatch):
    """Every frame the grader sent, recorded: each task arrives without its answer; the seeds and
    the gold answers appear nowhere but in the model's own replies to the team's calls."""
    sent: list[tuple] = []
    frames: list[bytes] = []
    encode = wire.Peer.encode

    def recorded(self, message):
        data = encode(self, message)
        if self.tag == "G":
            sent.append(message)
            frames.append(data)
        return data

    monkeypatch.setattr(wire.Peer, "encode", recorded)
    path = write(tmp_path / "alice" / NB, HONEST)
    result = capstone.grade(path, timeout=60, task_seconds=10)
    assert result.capstone["status"] == "ranked"
    tasks = [a for m in sent if m[0] == "answer" for a in m[2] if isinstance(a, Task)]
    held = hidden.held_out()
    assert [t.question for t in tasks] == [t.question for t in held]
    assert all(t.answer == "" for t in tasks)
    for seed in (hidden.HELD_OUT_SEED, hidden.SIMULATOR_SEED):
        assert not any(struct.pack(">q", seed) in f or str(seed).encode() in f for f in frames)
    asked = [f for f, m in zip(frames, sent, strict=True) if m[0] == "answer"]
    for task, frame in zip(held, asked, strict=True):  # a task's own answer, unless its question says it
        assert task.answer.encode() not in frame or task.answer in task.question
    unsaid = {
        t.answer.encode() for t in held if len(t.answer) > 6 and not any(t.answer in h.question for h in held)
    }
    cells = b"".join(f for f, m in zip(frames, sent, strict=True) if m[0] == "run")
    assert unsaid and cells and not any(a in cells for a in unsaid)
    replies = b"".join(f for f, m in zip(frames, sent, strict=True) if m[0] == "return")
    assert any(a in replies for a in unsaid)  # the team's own calls do carry what the model said


def test_the_graders_model_gives_out_nothing_but_its_answers():
    model = capstone.GraderModel(hidden.grader_llm(), BUDGET_PER_TASK)
    assert [n for n in dir(model) if not n.startswith("_")] == ["backend", "complete"]
    assert repr(model) == "<the grader's model>"
    with pytest.raises(TypeError):
        wire.PROTOCOL["copy"](model)
    with pytest.raises(ValueError, match="plain data"):
        model.complete(system="hi", messages=[{"role": "user", "content": object()}])


# --- the rule, on stored results alone ------------------------------------------------------------


def stored(
    learner: str, right: list[bool], usd: float, fingerprint: str = "f", status: str = "ranked"
) -> dict:
    """A line of the capstone log as the grader writes it (50 tasks, the reference right on 40)."""
    n = len(right)
    reference = {"right": [i < 40 for i in range(n)], "cost": [0.01] * n, "seconds": [5.0] * n}
    data = {"status": status, "detail": "", "right": right, "cost": [usd] * n, "seconds": [5.0] * n}
    data |= {"calls": [2] * n, "tokens": [900] * n, "reference": reference}
    return {
        "path": f"{learner}/{NB}",
        "fingerprint": fingerprint,
        "graded": {"learner": learner, "capstone": data},
    }


def test_non_inferior_entries_are_tied_and_ordered_by_cost_and_the_latest_submission_stands(tmp_path):
    same = [i < 45 for i in range(50)]
    rows = [
        stored("ann", same, 0.02),
        stored("ben", same[:-1] + [False], 0.01),  # one task fewer, half the price: tied, and first
        stored("cat", [i < 25 for i in range(50)], 0.001),  # cheapest, far less accurate: next tier
        stored("dan", same, 0.005, "old"),
        stored("dan", [False] * 50, 0.005, "new", status="hard-coded"),  # his latest stands
        stored("dan", [False] * 50, 0.005, "new", status="hard-coded"),  # graded again, unchanged
    ]
    log = tmp_path / "capstone.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn', encoding="utf-8")
    board = leaderboard.board(log)
    assert [(e.learner, e.rank, e.tier) for e in board] == [
        ("ben", 1, 1), ("ann", 2, 1), ("cat", 3, 2), ("dan", None, None)
    ]  # fmt: skip
    assert {e.learner: e.submissions for e in board} == {"ann": 1, "ben": 1, "cat": 1, "dan": 2}
    assert board[0].versus["kept"].kept and not board[2].versus["kept"].kept  # against the reference


def test_the_leaderboard_before_any_capstone_is_graded_is_empty_and_says_why(tmp_path):
    out = tmp_path / "board.csv"
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["course", "leaderboard", "--results", str(tmp_path / "grades.jsonl"), "--csv", str(out)])
    assert code == 0 and "no capstone submission graded yet" in err.getvalue()
    assert out.read_text(encoding="utf-8").splitlines() == [",".join(leaderboard.COLUMNS)]


def test_the_release_ships_neither_the_held_out_set_nor_the_seeds(tmp_path):
    from agentlab.course import release

    root = Path(__file__).resolve().parents[1]
    written = release.build(root, tmp_path / "class-kit")
    assert (tmp_path / "class-kit" / "agentlab" / "capstone.py").exists()
    assert not [p for p in written if "hidden" in p.parts]
    seeds = [str(s).encode() for s in (hidden.HELD_OUT_SEED, hidden.SIMULATOR_SEED)]
    assert not [p for p in written if any(s in p.read_bytes() for s in seeds)]
