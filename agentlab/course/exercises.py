"""Exercises are generated from their solutions, so the two can never drift apart.

A solution notebook in `solutions/` marks what the learner has to write:

- in a code cell, the lines between `# BEGIN SOLUTION` and `# END SOLUTION` become a
  `raise NotImplementedError(...)` at the same indentation (inside a function, the
  function still defines; called, it raises); a region that holds lines `# STUB ...`
  becomes those lines instead, uncommented: a value to fill in, such as
  `choice = {"A": ..., "B": ...}`, whose `...` tell `check` it is not written yet;
- in a markdown cell, the text between `<!-- BEGIN SOLUTION -->` and
  `<!-- END SOLUTION -->` (a model answer, a rubric) becomes a prompt to write one's own;
- a cell tagged `solution-only` is left out altogether.

A cell that will raise in the exercise (it calls `check(...)`, or its stub is at top level)
is tagged `raises-exception`, so "Run All" in JupyterLab goes on past it: a learner sees
every check's verdict in one run, not just the first. A cell that calls `check(...)` also
names its exercises in its metadata (`{"agentlab": {"checks": [...]}}`): the grader uses
that to say which exercise a cell's error belongs to, never to decide what passed.

Everything else is kept as it is. Outputs and execution counts are dropped: a learner
runs the exercise. The kernelspec is the one the installed kernel writes (`KERNELSPEC`), so
JupyterLab does not mark a notebook modified the moment its kernel starts.
`agentlab course build` writes `exercises/` from `solutions/`;
`agentlab course check` fails when a committed exercise differs from what build writes.
Grading lives in `grading.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nbformat is imported where a notebook is written: the grader's child never needs it
    import nbformat

from agentlab.course.checks import STUB_MESSAGE

BEGIN_CODE, END_CODE = "# BEGIN SOLUTION", "# END SOLUTION"
TEMPLATE = "# STUB "  # inside a region: a line the exercise keeps, uncommented, instead of the raise
MARKDOWN_REGION = re.compile(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->", re.DOTALL)
STUB = f'raise NotImplementedError("{STUB_MESSAGE}")'
YOUR_ANSWER = "*Write your answer here.*"
SOLUTION_ONLY = "solution-only"
RAISES = "raises-exception"  # Jupyter's tag for "this cell may raise; run on past it"
METADATA = "agentlab"  # a check cell's metadata names its exercises; Jupyter keeps it as the cell is edited
CHECK_CALL = re.compile(r"""check\(\s*["']([\w.-]+)["']""")
# What the installed ipykernel writes; a notebook that stores anything else is marked modified on open.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class CourseError(ValueError):
    """A solution notebook's markers do not pair up; the message names the notebook and cell."""


def exercise_code(source: str, where: str = "a code cell") -> str:
    """A code cell's source with every solution region replaced by a stub."""
    out: list[str] = []
    inside = False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN_CODE:
            if inside:
                raise CourseError(f"{where}: '{BEGIN_CODE}' inside another solution region")
            inside, template = True, []
            indent = line[: len(line) - len(line.lstrip())]
        elif marker == END_CODE:
            if not inside:
                raise CourseError(f"{where}: '{END_CODE}' without a '{BEGIN_CODE}'")
            inside = False
            out += template or [f"{indent}{STUB}"]
        elif inside and marker.startswith(TEMPLATE):
            template.append(line.replace(TEMPLATE, "", 1))
        elif not inside:
            out.append(line)
    if inside:
        raise CourseError(f"{where}: '{BEGIN_CODE}' is never closed")
    return "\n".join(out)


def exercise_markdown(source: str) -> str:
    return MARKDOWN_REGION.sub(YOUR_ANSWER, source)


def build_exercise(solution: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """The exercise notebook for one solution notebook."""
    import nbformat

    metadata = {k: v for k, v in solution.metadata.items() if k != "widgets"}  # no stored widget state
    metadata["kernelspec"] = dict(KERNELSPEC)
    exercise = nbformat.v4.new_notebook(metadata=metadata)
    for i, cell in enumerate(solution.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if SOLUTION_ONLY in tags:
            continue
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(exercise_code(cell.source, f"{name}, cell {i}"))
            will_raise = CHECK_CALL.search(new.source) or STUB in new.source.splitlines()
            if will_raise and RAISES not in tags:
                tags.append(RAISES)
            if checks := CHECK_CALL.findall(new.source):
                new.metadata[METADATA] = {"checks": checks}
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(exercise_markdown(cell.source))
        else:
            new = nbformat.v4.new_raw_cell(cell.source)
        new.id = cell.get("id", new.id)  # stable ids keep rebuilt exercises byte-identical
        if tags:
            new.metadata["tags"] = tags
        exercise.cells.append(new)
    return exercise


def build(root: Path | str = ".", write: bool = True, only: list[str] | None = None) -> list[Path]:
    """Generate `exercises/X.ipynb` for every `solutions/X.ipynb` under `root` (or only those
    whose names start with one of `only`, e.g. "03").

    Returns the exercises that were out of date (written when `write` is true).
    """
    import nbformat

    root = Path(root)
    solutions = sorted((root / "solutions").glob("*.ipynb"))
    if only:
        solutions = [p for p in solutions if any(p.name.startswith(Path(o).name) for o in only)]
        if not solutions:
            raise CourseError(f"no solution notebook in {root / 'solutions'} matches {only}")
    stale = []
    for path in solutions:
        text = nbformat.writes(build_exercise(nbformat.read(path, as_version=4), path.name)) + "\n"
        target = root / "exercises" / path.name
        if not target.exists() or target.read_text() != text:
            stale.append(target)
            if write:
                target.parent.mkdir(exist_ok=True)
                target.write_text(text)
    return stale
