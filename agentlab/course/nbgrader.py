"""The exercises as an nbgrader course: `agentlab course export nbgrader DIR`.

Many instructors run courses on JupyterHub with nbgrader. This writes DIR as an nbgrader course
directory (`nbgrader_config.py`, `source/NN_name/NN_name.ipynb`, one assignment per notebook),
built from the solution notebooks, so that `nbgrader generate_assignment`, `autograde` and
`generate_feedback` work unchanged:

- a code cell with a solution region (`# BEGIN SOLUTION` ... `# END SOLUTION`, which nbgrader's
  own delimiters match) is an autograded *answer* cell: nbgrader releases it with the region
  replaced by a stub;
- a cell that calls `check("NN.name", answer)` is an *autograder test* cell worth `points` per
  exercise, locked; under nbgrader's `### BEGIN HIDDEN TESTS` it also calls `grade(...)` below,
  which runs the exercise's cases and the instructor's grading cases (`course/hidden/`): nbgrader
  removes that block from the released notebook and puts it back to autograde;
- every other cell is locked (read-only), markdown model answers become a prompt (as in the
  exercise notebooks), and cells tagged `solution-only` are left out.

A cell holding both a solution region and a check is split in two, the answer first.
nbgrader itself is needed only to use the export, not to write it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from agentlab.course.exercises import (
    CHECK_CALL,
    END_CODE,
    SOLUTION_ONLY,
    exercise_markdown,
)

POINTS = 1  # per exercise
SCHEMA = 3  # nbgrader's cell metadata schema version
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
CONFIG = '''# An nbgrader course exported by `agentlab course export nbgrader` (see docs/teaching.md).
c = get_config()  # noqa: F821 - nbgrader provides it
c.CourseDirectory.course_id = "agentlab"
c.CourseDirectory.root = __file__.rsplit("/", 1)[0]
c.ClearSolutions.code_stub = {"python": 'raise NotImplementedError("Exercise: write this part.")'}
c.Execute.timeout = 300
'''


class ExportError(ValueError):
    """A solution notebook cannot be exported; the message names the notebook and cell."""


def export(
    root: Path | str, target: Path | str, points: int = POINTS, only: list[str] | None = None
) -> list[Path]:
    """Write the nbgrader course for the solutions under `root` into `target`; returns the
    source notebooks written (for the notebooks whose names start with one of `only`, if given)."""
    import nbformat

    root, target = Path(root), Path(target)
    solutions = sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb"))
    if only:
        solutions = [p for p in solutions if any(p.name.startswith(o) for o in only)]
    if not solutions:
        matching = f" match {only}" if only else ""
        raise ExportError(f"no solution notebooks under {root / 'solutions'}{matching}")
    target.mkdir(parents=True, exist_ok=True)
    (target / "nbgrader_config.py").write_text(CONFIG)
    written = []
    for path in solutions:
        source = source_notebook(nbformat.read(path, as_version=4), path.stem, points)
        out = target / "source" / path.stem / path.name
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(source, out)
        written.append(out)
    return written


def source_notebook(solution, name: str, points: int = POINTS):
    """The nbgrader source version of one solution notebook (see the module docstring)."""
    import nbformat

    metadata = {k: v for k, v in solution.metadata.items() if k != "widgets"}
    notebook = nbformat.v4.new_notebook(metadata=metadata)
    for i, cell in enumerate(solution.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if SOLUTION_ONLY in tags:
            continue
        for j, (kind, text) in enumerate(_parts(cell, f"{name}, cell {i}")):
            grade_id = f"{name}-{i}" + (f"-{j}" if j else "")
            notebook.cells.append(_cell(kind, text, tags, grade_id, points, f"{name}, cell {i}"))
    return notebook


def _parts(cell, where: str) -> list[tuple[str, str]]:
    """A cell as (kind, source) pieces: kind is "answer", "test", "locked" or "markdown"."""
    if cell.cell_type == "markdown":
        return [("markdown", exercise_markdown(cell.source))]
    if cell.cell_type != "code":
        return [("locked", cell.source)]
    has_answer, has_check = "BEGIN SOLUTION" in cell.source, bool(CHECK_CALL.search(cell.source))
    if has_answer and has_check:
        lines = cell.source.splitlines()
        last_end = max(k for k, line in enumerate(lines) if line.strip() == END_CODE)
        answer, rest = "\n".join(lines[: last_end + 1]), "\n".join(lines[last_end + 1 :])
        if CHECK_CALL.search(answer):
            raise ExportError(f"{where}: a check(...) inside or before a solution region; split the cell")
        return [("answer", answer), ("test", rest.strip("\n"))]
    if has_answer:
        return [("answer", cell.source)]
    if has_check:
        return [("test", cell.source)]
    return [("locked", cell.source)]


def _cell(kind: str, text: str, tags: list[str], grade_id: str, points: int, where: str):
    import nbformat

    meta = {"grade": False, "solution": False, "locked": True, "grade_id": grade_id, "schema_version": SCHEMA}
    if kind == "markdown":
        cell = nbformat.v4.new_markdown_cell(text)
    else:
        if kind == "test":
            checks = CHECK_CALL.findall(text)
            text = text + "\n" + hidden_tests(text, where)
            meta.update(grade=True, points=points * len(checks))
        elif kind == "answer":
            meta.update(solution=True, locked=False)
        cell = nbformat.v4.new_code_cell(text)
    cell.metadata["nbgrader"] = meta
    if tags:
        cell.metadata["tags"] = tags
    return cell


def hidden_tests(source: str, where: str) -> str:
    """The hidden block of a test cell: `grade(id, answer)` for each check(...) the cell makes."""
    calls = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check" and len(node.args) == 2:
            exercise, answer = node.args
            if not isinstance(exercise, ast.Constant):
                raise ExportError(f"{where}: check's first argument must be the exercise id as a string")
            calls.append(f"grade({exercise.value!r}, {ast.get_source_segment(source, answer)})")
    return "\n".join([BEGIN_HIDDEN, "from agentlab.course.nbgrader import grade", *calls, END_HIDDEN])


# --- what the hidden block runs when nbgrader autogrades -----------------------------------------------


class GradingFailed(AssertionError):
    """The answer got a grading case wrong (nbgrader then gives the test cell no points)."""


def grade(exercise_id: str, answer) -> None:
    """Run an exercise's cases and the instructor's grading cases on `answer`, each under the
    checks' time limit; raise GradingFailed naming how many failed and the first."""
    import itertools

    from agentlab.course import hidden
    from agentlab.course.checks import find, time_limit

    exercise = find(exercise_id)
    extras = (extra(answer) for extra in hidden.cases_for(exercise_id))
    cases = itertools.chain(exercise.cases(answer), *extras)
    failed, total = [], 0
    while True:
        try:
            with time_limit():
                case = next(cases)
        except StopIteration:
            break
        except Exception as error:  # the answer raised: this case and the rest fail
            failed.append(f"{type(error).__name__}: {error}")
            total += 1
            break
        total += 1
        if not case.passed:
            failed.append(f"{case.what}: {case.detail}")
    if failed:
        summary = f"{len(failed)} of {total} grading cases failed"
        raise GradingFailed(f"{exercise_id}: {summary}; first: {failed[0]}")
    print(f"{exercise_id}: all {total} grading cases passed")


def scores(course: Path | str, assignment: str) -> dict[str, tuple[float, float]]:
    """(score, max score) per student for `assignment`, from the course's nbgrader gradebook."""
    from nbgrader.api import Gradebook

    course = Path(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        found = gradebook.find_assignment(assignment)
        return {s.student.id: (s.score, s.max_score) for s in found.submissions}


def describe(paths: list[Path], target: Path) -> str:
    """What `agentlab course export nbgrader` prints."""
    lines = [f"wrote an nbgrader course to {target}: {len(paths)} assignment(s)"]
    for path in paths:
        import nbformat

        cells = [c.metadata.get("nbgrader", {}) for c in nbformat.read(path, as_version=4).cells]
        points = sum(c.get("points", 0) for c in cells)
        answers = sum(bool(c.get("solution")) for c in cells)
        lines.append(f"  {path.parent.name}: {answers} answer cells, {points} points")
    lines.append(f"next: cd {target} && nbgrader generate_assignment NN_name")
    return "\n".join(lines)


