"""Exercises are generated from solutions: markers, sync, no leaked solutions, stubs that stop."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agentlab import course
from agentlab.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def notebook(*cells):
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    for i, (kind, source, *tags) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
        cell.id = f"c{i}"
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


SOLVED = notebook(
    ("markdown", "# Exercise\nWhat is 0.9**5?\n<!-- BEGIN SOLUTION -->\nAbout 0.59.\n<!-- END SOLUTION -->"),
    (
        "code",
        "def chain(p, n):\n    # BEGIN SOLUTION\n    return p**n\n    # END SOLUTION\n\nprint(1)",
    ),
    ("code", "# BEGIN SOLUTION\nanswer = 4\n# END SOLUTION\nprint(answer)"),
    ("markdown", "Rubric: full marks for the exponent.", "solution-only"),
)


def test_code_regions_become_stubs_at_their_indentation_and_the_rest_is_kept():
    ex = course.build_exercise(SOLVED)
    assert ex.cells[1].source == f"def chain(p, n):\n    {course.STUB}\n\nprint(1)"
    assert ex.cells[2].source == f"{course.STUB}\nprint(answer)"


def test_cells_that_will_raise_are_tagged_so_run_all_goes_on_past_them():
    ex = course.build_exercise(
        notebook(
            ("code", "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION"),
            ("code", "check('01.x', f)"),
            ("code", "# BEGIN SOLUTION\nanswer = 4\n# END SOLUTION", "keep-me"),
            ("code", "print('setup')"),
        )
    )
    assert [c.metadata.get("tags", []) for c in ex.cells] == [
        [],  # defining a function with a stub inside raises nothing
        [course.RAISES],  # a check call does, until the learner has written the function
        ["keep-me", course.RAISES],  # a top-level stub does; the author's tags stay
        [],
    ]


def test_markdown_answers_become_a_prompt_and_solution_only_cells_vanish():
    ex = course.build_exercise(SOLVED)
    assert ex.cells[0].source == f"# Exercise\nWhat is 0.9**5?\n{course.YOUR_ANSWER}"
    assert len(ex.cells) == 3 and all("Rubric" not in c.source for c in ex.cells)


def test_outputs_are_dropped_and_cell_ids_kept():
    solved = notebook(("code", "print(1)"))
    solved.cells[0].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    solved.cells[0].execution_count = 1
    ex = course.build_exercise(solved)
    assert ex.cells[0].outputs == [] and ex.cells[0].execution_count is None
    assert ex.cells[0].id == "c0"


@pytest.mark.parametrize(
    "source, message",
    [
        ("# BEGIN SOLUTION\nx = 1", "never closed"),
        ("x = 1\n# END SOLUTION", "without a '# BEGIN SOLUTION'"),
        ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION", "inside another"),
    ],
)
def test_unpaired_markers_are_a_clear_error_naming_the_cell(source, message):
    with pytest.raises(course.CourseError, match=f"nb.ipynb, cell 0: .*{message}"):
        course.build_exercise(notebook(("code", source)), "nb.ipynb")


def test_build_writes_then_check_finds_nothing_stale_and_notices_an_edit(tmp_path, capsys):
    (tmp_path / "solutions").mkdir()
    nbformat.write(SOLVED, tmp_path / "solutions" / "01_x.ipynb")
    assert main(["course", "build", "--root", str(tmp_path)]) == 0
    assert main(["course", "check", "--root", str(tmp_path)]) == 0
    exercise = tmp_path / "exercises" / "01_x.ipynb"
    exercise.write_text(exercise.read_text().replace("chain", "chains"))
    assert main(["course", "check", "--root", str(tmp_path)]) == 1
    assert "out of date:" in capsys.readouterr().out
    nbformat.write(SOLVED, tmp_path / "solutions" / "02_y.ipynb")
    assert main(["course", "build", "02", "--root", str(tmp_path)]) == 0  # only 02 is written
    assert main(["course", "check", "01", "--root", str(tmp_path)]) == 1  # 01 is still edited
    assert main(["course", "build", "09", "--root", str(tmp_path)]) == 2  # no such solution


# --- the kit's own exercises ----------------------------------------------------------


def test_every_committed_exercise_is_exactly_what_build_generates():
    stale = course.build(ROOT, write=False)
    assert stale == [], f"run `agentlab course build`: {[p.name for p in stale]} differ from their solutions"


def test_every_solution_has_an_exercise_and_no_exercise_lacks_a_solution():
    exercises = {p.name for p in (ROOT / "exercises").glob("*.ipynb")}
    assert exercises == {p.name for p in SOLUTIONS}


def solution_lines(nb):
    """The substantive lines inside solution regions (code and markdown)."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in (course.BEGIN_CODE, "<!-- BEGIN SOLUTION -->"):
                inside = True
            elif marker in (course.END_CODE, "<!-- END SOLUTION -->"):
                inside = False
            elif inside and len(marker) > 12 and not marker.startswith("#"):
                lines.append(marker)
    return lines


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_no_exercise_contains_solution_text(solution):
    exercise = (ROOT / "exercises" / solution.name).read_text()
    leaked = [line for line in solution_lines(nbformat.read(solution, as_version=4)) if line in exercise]
    assert not leaked, f"solution text in the exercise: {leaked[:3]}"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_an_exercise_run_as_shipped_goes_top_to_bottom_and_stops_only_at_its_stubs(solution):
    nb = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
    # No allow_errors: only cells tagged raises-exception may raise, as with "Run All" in JupyterLab,
    # so the whole notebook runs and every check reports.
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(ROOT / "exercises")}}).execute()
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"]
    assert errors, "the exercise ran without reaching a stub"
    assert {e.ename for e in errors} == {"NotImplementedError"}, [f"{e.ename}: {e.evalue}" for e in errors]


def test_grade_reports_each_check_as_passed_failed_not_done_or_error(tmp_path, capsys):
    learner = notebook(
        ("code", "from agentlab.checks import REGISTRY, Case, exercise, check"),
        (
            "code",
            "@exercise('99.one', 'one', hint='h')\ndef cases(answer):\n    yield Case('is 1', answer == 1)\n",
        ),
        ("code", "check('99.one', 1)"),
        ("code", "check('99.one', 2)"),
        ("code", f"{course.STUB}\ncheck('99.one', answer)"),
        ("code", "check('99.one', undefined_name)"),
    )
    path = tmp_path / "learner.ipynb"
    nbformat.write(learner, path)
    assert [(i, s) for i, s, _ in course.grade(path)] == [
        ("99.one", "passed"),
        ("99.one", "failed"),
        ("99.one", "not done"),
        ("99.one", "error"),
    ]
    assert main(["course", "grade", str(path)]) == 1
    out = capsys.readouterr().out
    assert "learner.ipynb: 1/4 exercises pass" in out and "NameError" in out
