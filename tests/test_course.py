"""Exercises are generated from solutions (markers, sync, no leaked solutions, stubs that stop), and
graded in a sandbox from what the learner defined (one batch with messy and broken notebooks; the
attacks on the grader are in test_grading_sandbox.py)."""

import csv
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
from notebook_code import SharedKernel

from agentlab.course import exercises, gradebook, grading
from agentlab.course.checks import check, exercises_of
from agentlab.course.cli import main

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


def test_a_region_with_a_template_becomes_the_template_so_the_check_still_runs():
    source = (
        '# BEGIN SOLUTION\n# STUB choice = {"A": ..., "B": ...}\nchoice = {"A": 1, "B": 2}\n# END SOLUTION\n'
        'check("x", choice)'
    )
    assert exercises.exercise_code(source) == 'choice = {"A": ..., "B": ...}\ncheck("x", choice)'


def test_code_regions_become_stubs_at_their_indentation_and_the_rest_is_kept():
    ex = exercises.build_exercise(SOLVED)
    assert ex.cells[1].source == f"def chain(p, n):\n    {exercises.STUB}\n\nprint(1)"
    assert ex.cells[2].source == f"{exercises.STUB}\nprint(answer)"


def test_cells_that_will_raise_are_tagged_so_run_all_goes_on_past_them():
    ex = exercises.build_exercise(
        notebook(
            ("code", "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION"),
            ("code", "check('01.x', f)"),
            ("code", "# BEGIN SOLUTION\nanswer = 4\n# END SOLUTION", "keep-me"),
            ("code", "print('setup')"),
        )
    )
    assert [c.metadata.get("tags", []) for c in ex.cells] == [
        [],  # defining a function with a stub inside raises nothing
        [exercises.RAISES],  # a check call does, until the learner has written the function
        ["keep-me", exercises.RAISES],  # a top-level stub does; the author's tags stay
        [],
    ]


def test_markdown_answers_become_a_prompt_and_solution_only_cells_vanish():
    ex = exercises.build_exercise(SOLVED)
    assert ex.cells[0].source == f"# Exercise\nWhat is 0.9**5?\n{exercises.YOUR_ANSWER}"
    assert len(ex.cells) == 3 and all("Rubric" not in c.source for c in ex.cells)


def test_outputs_are_dropped_and_cell_ids_kept():
    solved = notebook(("code", "print(1)"))
    solved.cells[0].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    solved.cells[0].execution_count = 1
    ex = exercises.build_exercise(solved)
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
    with pytest.raises(exercises.CourseError, match=f"nb.ipynb, cell 0: .*{message}"):
        exercises.build_exercise(notebook(("code", source)), "nb.ipynb")


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
    stale = exercises.build(ROOT, write=False)
    assert stale == [], f"run `agentlab course build`: {[p.name for p in stale]} differ from their solutions"


@pytest.mark.skipif(not SOLUTIONS, reason="solutions/ is withheld in this copy of the kit")
def test_every_solution_has_an_exercise_and_no_exercise_lacks_a_solution():
    committed = {p.name for p in (ROOT / "exercises").glob("*.ipynb")}
    assert committed == {p.name for p in SOLUTIONS}


def solution_lines(nb):
    """The substantive lines inside solution regions (code and markdown)."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker in (exercises.BEGIN_CODE, "<!-- BEGIN SOLUTION -->"):
                inside = True
            elif marker in (exercises.END_CODE, "<!-- END SOLUTION -->"):
                inside = False
            elif inside and len(marker) > 12 and not marker.startswith("#"):
                lines.append(marker)
    return lines


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_no_exercise_contains_solution_text(solution):
    exercise = (ROOT / "exercises" / solution.name).read_text()
    leaked = [line for line in solution_lines(nbformat.read(solution, as_version=4)) if line in exercise]
    assert not leaked, f"solution text in the exercise: {leaked[:3]}"


@pytest.fixture(scope="module")
def kernel():
    """One kernel for every exercise run below: starting one costs more CPU than most exercises'
    cells, and eleven starts were most of this file's time. Each run starts from an empty
    namespace, so nothing one notebook defined or imported by name reaches the next."""
    shared = SharedKernel()
    yield shared
    shared.close()


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_an_exercise_run_as_shipped_goes_top_to_bottom_and_stops_only_at_its_stubs(solution, kernel):
    nb = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
    # No allow_errors: only cells tagged raises-exception may raise, as with "Run All" in JupyterLab,
    # so the whole notebook runs and every check reports.
    kernel.run(nb, ROOT / "exercises")
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"]
    assert errors, "the exercise ran without reaching a stub"
    assert {e.ename for e in errors} == {"NotImplementedError"}, [f"{e.ename}: {e.evalue}" for e in errors]
    # Every check cell reaches its check, which says the exercise is not written yet (nothing before
    # the check calls the learner's function), and its error is one line, not the checker's traceback.
    for cell in nb.cells:
        if exercises.METADATA not in cell.metadata:
            continue
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "not written yet" in printed, f"no verdict under {cell.source[:80]!r}: {printed[:200]!r}"
        [error] = [o for o in cell.outputs if o.output_type == "error"]
        assert len(error.traceback) == 1, f"{len(error.traceback)} traceback lines under {cell.source[:60]!r}"


def test_check_cells_name_their_exercises_in_metadata_for_the_grader():
    ex = exercises.build_exercise(notebook(("code", "x = 1"), ("code", "check('06.crossover', f)")))
    assert exercises.METADATA not in ex.cells[0].metadata
    assert ex.cells[1].metadata[exercises.METADATA] == {"checks": ["06.crossover"]}


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("*.ipynb")), ids=lambda p: p.stem)
def test_each_exercise_notebook_has_a_check_cell_for_each_exercise_the_grader_expects_in_order(path):
    cells = nbformat.read(path, as_version=4).cells
    named = [e for c in cells for e in c.metadata.get(exercises.METADATA, {}).get("checks", [])]
    assert named == exercises_of(path.name[:2])


# --- grading a class ---------------------------------------------------------------------------
# One batch, as an instructor would run it, with every way a notebook can fool or break the grader.
# Each learner starts from the kit's own exercise notebook for 06 and edits it.

RIGHT = {
    "ex06-03": """def longest_winning_chain(p, q):
    if p <= q:
        return 0
    if p == 1 or q == 0:
        return math.inf
    n = 0
    while p ** (n + 1) > q:
        n += 1
    return n""",
}
EXERCISE_06 = ROOT / "exercises" / "06_error_propagation.ipynb"


def learner(folder, edits=(), insert=(), delete=()):
    """The kit's exercise 06 as a learner left it: cells replaced ({id: source}), new cells put in
    after a cell ((after id, source)), and cells deleted (ids). Returns its path."""
    nb = nbformat.read(EXERCISE_06, as_version=4)
    for cell in nb.cells:
        cell.source = dict(edits).get(cell.id, cell.source)
    for after, source in insert:
        at = next(i for i, c in enumerate(nb.cells) if c.id == after) + 1
        new = nbformat.v4.new_code_cell(source)
        nb.cells.insert(at, new)
    nb.cells = [c for c in nb.cells if c.id not in delete]
    path = folder / "06_error_propagation.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def test_grade_a_batch_that_tries_to_fool_the_grader_or_breaks_it(tmp_path, capfd):
    alice = learner(  # a check commented out, one wrapped in try/except, one replaced by her own
        tmp_path / "alice",
        edits={
            "ex06-03": "def longest_winning_chain(p, q):\n    return 4",
            "ex06-04": '# check("06.crossover", longest_winning_chain)',
            "ex06-08": "def best_cut(fail, handoff, most):\n    return 1, 1 - fail",
            "ex06-09": 'try:\n    check("06.best-cut", best_cut)\nexcept Exception:\n    pass',
        },
        insert=[("ex06-12", 'def check(*args):\n    print("All 6 checks passed.")')],
    )
    bob = learner(  # a check run twice, a check cell deleted, a SyntaxError in a function
        tmp_path / "bob",
        edits={**RIGHT, "ex06-12": "def simulate_retries(p, n attempts):\n    pass"},
        insert=[("ex06-04", 'check("06.crossover", longest_winning_chain)')],
        delete=["ex06-09"],
    )
    carol = tmp_path / "carol" / "06_error_propagation.ipynb"  # corrupt: half a notebook
    carol.parent.mkdir()
    carol.write_text(EXERCISE_06.read_text()[:2000])
    dave = tmp_path / "dave" / "06_error_propagation.ipynb"  # missing
    erin = learner(tmp_path / "erin", edits=RIGHT, insert=[("ex06-04", "import os\nos._exit(3)")])  # dies
    frank = learner(tmp_path / "frank", insert=[("ex06-01", "import time\nwhile True:\n    time.sleep(0.1)")])

    csv_path, json_path = tmp_path / "grades.csv", tmp_path / "grades.json"
    paths = [str(p) for p in (alice, bob, carol, dave, erin, frank)]
    args = ["course", "grade", *paths, "--timeout", "4", "--csv", str(csv_path), "--json", str(json_path)]
    args += ["--results", str(tmp_path / "results.jsonl"), "--jobs", "2"]
    assert main(args) == 1
    out, err = capfd.readouterr()

    report = json.loads(json_path.read_text())
    results = {
        Path(n["path"]).parent.name: {r["exercise"]: (r["status"], r["detail"]) for r in n["results"]}
        for n in report["notebooks"]
    }
    broken = {Path(n["path"]).parent.name: n["broken"] for n in report["notebooks"]}
    assert {e: s for e, (s, _) in results["alice"].items()} == {
        "06.crossover": "failed",  # her check commented out: the grader runs its cases all the same
        "06.best-cut": "failed",  # the try/except in her notebook hides nothing from the grader
        "06.retries-correlated": "not done",  # her own check printed "passed"; the function is the stub
    }
    # the exercise's cases and the grader's own (hidden/keys_nb06.py: their count is the instructor's)
    assert re.match(r"\d+ of \d+ cases failed: notebook 06's curve", results["alice"]["06.best-cut"][1])
    assert results["bob"]["06.crossover"] == ("passed", "")  # twice, counted once
    assert results["bob"]["06.best-cut"] == ("not done", "still the stub")  # its check cell deleted
    status, detail = results["bob"]["06.retries-correlated"]
    assert status == "error" and detail.startswith("SyntaxError: ")  # not the NameError it led to
    assert broken["carol"] == "not a notebook: the file is not valid JSON"
    assert broken["dave"] == "no such file"
    assert broken["erin"].startswith("the kernel died in cell ")
    assert results["erin"]["06.crossover"][0] == "passed"  # its part ran before the kernel died
    assert results["erin"]["06.best-cut"] == ("not done", "still the stub")  # run again without that cell
    assert broken["frank"].startswith("still running after 4 s (the --timeout), in cell 3")
    assert report["learners"]["bob"] == {"passed": 1, "exercises": 3}
    assert report["exercises"]["06.crossover"] == {"passed": 2, "notebooks": 6}

    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert len(rows) == 18 and set(rows[0]) == set(gradebook.CSV_COLUMNS)
    assert {r["broken"] for r in rows if r["learner"] == "dave"} == {"no such file"}

    assert f"{bob}: 1/3 exercises pass" in out
    assert f"{carol}: 0/3 exercises pass; broken: not a notebook: the file is not valid JSON" in out
    assert "By learner:" in out and "06.crossover             passed in 2 of 6 notebooks" in out
    assert "WARNING" not in out + err and "Traceback" not in out + err  # no kernel noise, no crash


def test_a_class_where_everyone_passed_exits_zero_and_csv_can_go_to_stdout(capsys):
    graded = [grading.Graded("a/06_x.ipynb", "a", [grading.Result("06.crossover", "passed")])]
    assert gradebook.all_passed(graded)
    assert not gradebook.all_passed([grading.Graded("b/06_x.ipynb", "b", [], broken="no such file")])
    assert gradebook.to_csv(graded).splitlines() == [
        "learner,notebook,exercise,status,detail,broken",
        "a,a/06_x.ipynb,06.crossover,passed,,",
    ]
    assert main(["course", "grade", "nobody/readme.txt", "--csv", "-", "--results", "-"]) == 1
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))  # the CSV alone, no report
    assert (row["learner"], row["status"]) == ("readme", "broken")
    assert (
        row["broken"]
        == "cannot tell which exercises it holds: keep the exercise notebook's name (06_….ipynb)"
    )


def test_a_notebooks_number_and_learner_come_from_its_name():
    assert grading.notebook_number("alice/06_error_propagation.ipynb") == "06"
    assert grading.notebook_number("alice_06_error_propagation.ipynb") == "06"
    assert grading.notebook_number("2024_report.ipynb") is None
    assert grading.learner_of("class/alice/06_error_propagation.ipynb") == "alice"
    assert grading.learner_of("alice_06.ipynb") == "alice_06"


def test_a_notebook_saved_before_the_renumbering_is_told_where_its_exercises_went(tmp_path, capsys):
    """07 was split in two and 08, 09 moved to 09, 10: grading an old notebook as the new notebook of
    its number would mark everything "not done" without a word. Nothing is run."""
    old_guardrails = tmp_path / "alice" / "08_guardrails.ipynb"
    old_guardrails.parent.mkdir()
    old_guardrails.write_text((ROOT / "exercises" / "09_guardrails.ipynb").read_text(encoding="utf-8"))
    graded = grading.grade(old_guardrails)
    assert graded.broken == (
        "08_guardrails is from before the course was renumbered: it is now exercises/09_guardrails.ipynb; "
        "copy your answers there"
    )
    assert [(r.exercise, r.status) for r in graded.results] == [(e, "not done") for e in exercises_of("09")]

    old_07 = tmp_path / "bob" / "07_one_agent_or_a_team.ipynb"
    old_07.parent.mkdir()
    cells = ("code", "check('07.pick', pick)"), ("code", 'check("07.threshold", choose)')
    nbformat.write(notebook(*cells), old_07)
    graded = grading.grade(old_07)
    assert graded.broken == (
        "from before the course was renumbered (07.threshold is now 08.threshold): copy those answers into "
        "exercises/08_migration_and_handoffs.ipynb"
    )
    assert [r.exercise for r in graded.results] == exercises_of("07")

    assert main(["course", "grade", str(old_guardrails), "--results", "-"]) == 1
    assert "it is now exercises/09_guardrails.ipynb" in capsys.readouterr().out


def test_an_old_exercise_id_names_its_new_one_and_notebook():
    with pytest.raises(KeyError, match=r"exercise 08.policy is now 09.policy, in exercises/09_guardrails"):
        check("08.policy", lambda request: True)
    with pytest.raises(KeyError, match=r"07.handoff-audit is now 08.handoff-audit, in exercises/08_mig"):
        check("07.handoff-audit", lambda run: [])


# --- the learner's way to the exercises ---------------------------------------------------------

LESSONS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00_"))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_lesson_ends_by_pointing_to_its_exercise_notebook(lesson):
    last = nbformat.read(lesson, as_version=4).cells[-1]
    if lesson.name.startswith("12_"):  # the capstone: no exercise notebook, the team is handed in and graded
        assert last.cell_type == "markdown" and "agentlab course grade" in last.source
        assert not (ROOT / "exercises" / lesson.name).exists()
        return
    assert last.cell_type == "markdown" and f"exercises/{lesson.name}" in last.source
    assert (ROOT / "exercises" / lesson.name).exists()


def test_lesson_06_teaches_the_crossover_on_other_numbers_and_leaves_the_texts_questions_to_the_exercise():
    cells = nbformat.read(ROOT / "notebooks" / "06_error_propagation.ipynb", as_version=4).cells
    code = "\n".join(c.source for c in cells if c.cell_type == "code")
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert not re.search(
        r"(longest_winning_chain|kit_crossover)\([^)]*0\.6\)", code
    )  # q = 0.6 is the exercise's
    assert "**(a)**" not in text and "**(c)**" not in text
    assert "exercises/06_error_propagation.ipynb" in text


@pytest.mark.parametrize("path", sorted((ROOT / "exercises").glob("*.ipynb")), ids=lambda p: p.stem)
def test_examples_call_the_learners_function_only_after_its_check_and_under_a_time_limit(path):
    """An endless loop must fail a hidden case, not hang the example that comes before the check."""
    for cell in nbformat.read(path, as_version=4).cells:
        match = re.search(r"""^check\(["'][\w.-]+["'], (\w+)\)""", cell.source, re.M)
        if not match or cell.cell_type != "code":
            continue
        lines, name = cell.source.splitlines(), match.group(1)
        at = next(i for i, line in enumerate(lines) if line.startswith("check("))
        for i, line in enumerate(lines):
            if re.search(rf"\b{name}\(", line) and i != at:
                limited = any(
                    lines[j].strip().startswith("with time_limit(")
                    and len(lines[j]) - len(lines[j].lstrip()) < len(line) - len(line.lstrip())
                    for j in range(at + 1, i)
                )
                assert i > at and limited, f"{path.name}: {line.strip()!r} runs outside the time limit"
