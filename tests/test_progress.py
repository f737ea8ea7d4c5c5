"""A learner's progress, read from their own saved notebooks: each quiz and each check is done, tried or
to do as its stored output says; where they are is the furthest lesson worked in, and next is the
first thing not done from there."""

import shutil
from pathlib import Path

import nbformat
import pytest

from agentlab.course.cli import main
from agentlab.progress import DONE, TO_DO, TRIED, course_root, items, report
from agentlab.quiz import QuizCard, question

ROOT = Path(__file__).resolve().parents[1]


def right_letter(q):
    return next(letter for letter in q.choices if q.is_right(letter))


def quiz_cell(quiz_id, answer=None):
    cell = nbformat.v4.new_code_cell(f'quiz("{quiz_id}")')
    text = QuizCard(question(quiz_id), answer).text()  # what the cell stores once answered
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": text})]
    return cell


def check_cell(ids, printed="", error=None):
    cell = nbformat.v4.new_code_cell("\n".join(f'check("{i}", answer)' for i in ids))
    cell.metadata["agentlab"] = {"checks": list(ids)}
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)] if printed else []
    if error:
        cell.outputs.append(nbformat.v4.new_output("error", ename=error, evalue="...", traceback=[]))
    return cell


def write(path, cells):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


@pytest.fixture
def course(tmp_path):
    crossover = question("06.crossover")
    wrong = next(letter for letter in crossover.choices if not crossover.is_right(letter))
    write(
        tmp_path / "notebooks" / "01_one.ipynb",
        [quiz_cell("01.chain-of-four", right_letter(question("01.chain-of-four")))],
    )
    write(tmp_path / "notebooks" / "06_six.ipynb", [quiz_cell("06.crossover", wrong.upper())])
    write(tmp_path / "notebooks" / "07_seven.ipynb", [quiz_cell("07.react-tokens")])
    write(
        tmp_path / "exercises" / "01_one.ipynb",
        [
            check_cell(["01.a"], "Checking 01.a: A\n  ✓ one\n  ✓ two\nAll 2 checks passed.\n"),
            check_cell(["01.b"], "Checking 01.b: B\n  ✓ one\n  ✗ two: got 3\n", error="CheckFailed"),
            check_cell(
                ["01.c"], "Checking 01.c: C\n  … not written yet: fill in ...\n", "NotImplementedError"
            ),
            check_cell(["01.d"]),  # never run
            check_cell(
                ["01.e", "01.f"], "Checking 01.e: E\nThe check passed.\nChecking 01.f: F\n  ✗ x\n", "E"
            ),
        ],
    )
    write(tmp_path / "exercises" / "06_six.ipynb", [check_cell(["06.a"])])
    return tmp_path


def test_each_quiz_and_check_is_done_tried_or_to_do_as_its_saved_output_says(course):
    found = {(i.kind, i.id): i.status for i in items(course)}
    assert found == {
        ("quiz", "01.chain-of-four"): DONE,
        ("exercise", "01.a"): DONE,
        ("exercise", "01.b"): TRIED,
        ("exercise", "01.c"): TO_DO,
        ("exercise", "01.d"): TO_DO,
        ("exercise", "01.e"): DONE,
        ("exercise", "01.f"): TRIED,
        ("quiz", "06.crossover"): TRIED,
        ("exercise", "06.a"): TO_DO,
        ("quiz", "07.react-tokens"): TO_DO,
    }
    assert [i.id for i in items(course)][:3] == ["01.chain-of-four", "01.a", "01.b"]  # lesson, then exercises


def test_the_report_says_where_the_learner_is_and_what_is_next(course):
    assert report(items(course)).splitlines() == [
        "Your progress, read from your saved notebooks:",
        "  01  quiz done · exercises 2/6 done, 2 tried",
        "  06  quiz tried · exercise to do",
        "  07  quiz to do",
        "Done: 3 of 10.",
        "Where you are: lesson 06.",
        "Next: the quiz 06.crossover (tried, not passed yet), in notebooks/06_six.ipynb.",
    ]


def test_a_fresh_course_starts_at_the_first_quiz_and_a_finished_one_says_so(tmp_path):
    write(tmp_path / "notebooks" / "01_one.ipynb", [quiz_cell("01.chain-of-four")])
    write(tmp_path / "exercises" / "01_one.ipynb", [])
    lines = report(items(tmp_path)).splitlines()
    assert lines[-2:] == [
        "Where you are: at the start.",
        "Next: the quiz 01.chain-of-four, in notebooks/01_one.ipynb.",
    ]
    write(
        tmp_path / "notebooks" / "01_one.ipynb",
        [quiz_cell("01.chain-of-four", "(" + right_letter(question("01.chain-of-four")) + ")")],
    )
    assert report(items(tmp_path)).splitlines()[-1] == "Next: nothing left. Every quiz and check is done."


def test_the_worked_solutions_stored_outputs_read_as_done(tmp_path):
    """The real check's printed verdicts, not made-up ones: a learner who solved 01 has all of it done."""
    (tmp_path / "notebooks").mkdir()
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    shutil.copy(ROOT / "solutions" / "01_stub_planner_and_executors.ipynb", tmp_path / "exercises")
    shipped = [i for i in items(ROOT) if i.lesson == "01" and i.kind == "exercise"]
    solved = [i for i in items(tmp_path) if i.lesson == "01"]
    assert len(solved) == len(shipped) >= 4
    assert {i.status for i in solved} == {DONE} and {i.status for i in shipped} == {TO_DO}


def test_the_shipped_course_has_everything_to_do_and_a_broken_notebook_is_skipped(tmp_path):
    shipped = items(ROOT)
    assert {i.status for i in shipped} == {TO_DO}
    assert sum(i.kind == "quiz" for i in shipped) == 12 and sum(i.kind == "exercise" for i in shipped) >= 30
    write(tmp_path / "exercises" / "01_one.ipynb", [check_cell(["01.a"])])
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_one.ipynb").write_text("{ half saved", encoding="utf-8")
    assert [i.id for i in items(tmp_path)] == ["01.a"]


def test_the_course_folder_is_found_from_inside_it_and_a_wrong_one_is_one_line(course, monkeypatch, capsys):
    monkeypatch.chdir(course / "notebooks")  # where a lesson's kernel runs
    assert course_root() == course
    assert main(["progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("Next: the quiz 06.crossover")
    assert main(["progress", "--root", str(course / "exercises")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {course / 'exercises'} has no notebooks/ folder: give the course folder"]


def test_notebook_00_shows_the_learners_progress():
    cells = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4).cells
    cell = next(c for c in cells if c.cell_type == "code" and "progress()" in c.source)
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert shown.startswith("Your progress, read from your saved notebooks:") and "\nNext: " in shown
    assert "nbval-ignore-output" in cell.metadata.get("tags", [])  # it shows each learner their own work
