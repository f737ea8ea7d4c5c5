"""Grading a class: run each learner's exercise notebook and read what its checks recorded.

The grader never looks for `check(...)` in the text of the cells: a check commented out,
wrapped in `try/except`, or replaced by a `check` of the learner's own would fool that. It
runs the notebook from the top in a fresh kernel whose environment names a log file, and
`agentlab.course.checks.check` appends a record there each time a check starts and ends
(passed, failed, not done or error). A learner's own `check` writes nothing.

Each notebook is graded against the exercises its number must have (`06_….ipynb`: the
checks registered for 06), whatever its cells contain:

- an exercise with a record has the status of its **last** run (a check run twice counts
  once: the notebook's final word);
- an exercise with no record is **not done**, unless the cells of its part of the notebook
  raised an error, which is then its status: `error`, with the *first* such error, so a
  `SyntaxError` in a function shows as itself, not as the `NameError` its check cell raises.
  Its part runs from the cell after the previous exercise's check cell to its own check cell,
  found by the cell metadata `agentlab build` writes (`{"agentlab": {"checks": [...]}}`), which
  Jupyter keeps however the learner edits the cell. A check cell deleted, or one whose check
  was commented out or redefined without an error, leaves the exercise not done;
- a notebook that cannot be read, whose kernel dies, or that is still running after
  `timeout` seconds is **broken**, with the reason; what its checks recorded before that
  still counts, and the batch goes on with the next notebook.

The kernel runs on the simulated backend with no API key, its own stderr silenced (no
transport warnings in the report), in the notebook's folder.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from agentlab.course.checks import LOG_VARIABLE, MOVED, NAMES, NOTEBOOKS, STUB_MESSAGE, exercises_of
from agentlab.course.exercises import CHECK_CALL, METADATA

STATUSES = ("passed", "failed", "not done", "error")
NUMBER = re.compile(r"(?<!\d)(\d\d)_")
IPYTHON_FILE = re.compile(r"\(\d+\.py, line (\d+)\)")
_QUIET = logging.getLogger("agentlab.course.grading")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False  # nbclient logs a timeout or a dead kernel as an error: we report them ourselves


@dataclass(frozen=True)
class Result:
    """One exercise of one notebook: its status (one of STATUSES) and what the instructor should see."""

    exercise: str
    status: str
    detail: str = ""


@dataclass
class Graded:
    """One learner's notebook: a result per exercise it must have, and why it broke, if it did."""

    path: str
    learner: str
    results: list[Result] = field(default_factory=list)
    broken: str = ""

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.results)


@dataclass
class Execution:
    """What running a notebook left behind: check records with the index of the cell that made
    them, the first error of each cell, and why the run stopped early (or "")."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    errors: dict[int, tuple[str, str]] = field(default_factory=dict)
    broken: str = ""
    check_cells: dict[str, list[int]] = field(default_factory=dict)  # exercise -> cells the metadata names
    stopped_at: int | None = None  # the cell that was running when the notebook broke


RENAMED = {"08_guardrails": "09_guardrails", "09_across_machines": "10_across_machines"}  # old name -> new


def notebook_number(path: Path | str) -> str | None:
    """The exercise notebook a file is, from its name: "06" for `06_error_propagation.ipynb` (also
    `alice_06_error_propagation.ipynb`), or None. A name from before the renumbering
    (`08_guardrails.ipynb`) gives the notebook's new number."""
    for old, new in RENAMED.items():
        if old in Path(path).name:
            return new[:2]
    for number in NUMBER.findall(Path(path).name):
        if number in NOTEBOOKS:
            return number
    return None


def learner_of(path: Path | str) -> str:
    """Who a notebook belongs to: its folder for `alice/06_….ipynb`, else the file's own name."""
    path = Path(path)
    if path.name.startswith(tuple(f"{n}_" for n in NOTEBOOKS)):
        return path.resolve().parent.name or path.stem
    return path.stem


def grade(path: Path | str, timeout: float = 300) -> Graded:
    """Run one learner's exercise notebook (at most `timeout` seconds) and grade each exercise."""
    graded = Graded(str(path), learner_of(path))
    number = notebook_number(path)
    if number is None:
        graded.broken = "cannot tell which exercises it holds: keep the exercise notebook's name (06_….ipynb)"
        return graded
    required = exercises_of(number)
    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        graded.broken = "no such file"
    except nbformat.reader.NotJSONError:
        graded.broken = "not a notebook: the file is not valid JSON"
    except Exception as error:  # anything else nbformat refuses
        graded.broken = f"not a notebook: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
    if graded.broken:
        graded.results = [Result(e, "not done", "not run") for e in required]
        return graded
    graded.broken = old_numbering(path, nb)
    if graded.broken:
        graded.results = [Result(e, "not done", "not run: old numbering") for e in required]
        return graded
    execution = run(nb, Path(path).resolve().parent, timeout)
    graded.broken = execution.broken
    graded.results = judge(required, execution)
    return graded


def old_numbering(path: Path | str, nb: nbformat.NotebookNode) -> str:
    """Why `nb` is an exercise notebook saved before the course was renumbered, naming where its
    exercises are now; "" if it is not one. Grading it as the new notebook of its number would mark
    every exercise not done without saying why."""
    name = Path(path).name
    for old, new in RENAMED.items():
        if old in name:
            return (
                f"{old} is from before the course was renumbered: it is now exercises/{new}.ipynb; "
                "copy your answers there"
            )
    ids = {i for c in nb.cells for i in c.get("metadata", {}).get(METADATA, {}).get("checks", [])}
    ids |= {i for c in nb.cells if c.cell_type == "code" for i in CHECK_CALL.findall(c.source)}
    old_ids = sorted(i for i in ids if i in MOVED)
    if not old_ids:
        return ""
    where = sorted({f"exercises/{NAMES[MOVED[i][:2]]}.ipynb" for i in old_ids})
    now = ", ".join(f"{i} is now {MOVED[i]}" for i in old_ids)
    return f"from before the course was renumbered ({now}): copy those answers into {' and '.join(where)}"


def kernel_environment(log: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}  # never spend on a learner's code
    return {**env, LOG_VARIABLE: str(log), "AGENTLAB_BACKEND": "simulated"}


def run(nb: nbformat.NotebookNode, folder: Path, timeout: float) -> Execution:
    """Execute `nb`'s code cells in order in a fresh kernel, with a deadline for the whole notebook."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    execution = Execution()
    for index, cell in enumerate(nb.cells):
        for exercise in cell.get("metadata", {}).get(METADATA, {}).get("checks", []):
            execution.check_cells.setdefault(exercise, []).append(index)
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "checks.jsonl"
        log.touch()
        seen = 0

        def collect(index: int) -> None:
            nonlocal seen
            lines = log.read_text(encoding="utf-8").splitlines()
            for line in lines[seen:]:
                try:
                    execution.records.append((index, json.loads(line)))
                except json.JSONDecodeError:
                    continue  # a line the learner's code wrote there: not a check's
            seen = len(lines)

        client = NotebookClient(
            nb,
            timeout=max(1, math.ceil(timeout)),
            allow_errors=True,
            kernel_name="python3",  # this environment's Python, whatever the notebook's metadata says
            shutdown_kernel="immediate",
            resources={"metadata": {"path": str(folder)}},
            log=_QUIET,
        )
        deadline, index = time.monotonic() + timeout, -1
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        try:
            with client.setup_kernel(env=kernel_environment(log), **quiet):
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type != "code":
                        continue
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise CellTimeoutError("out of time")
                    client.timeout = max(1, math.ceil(left))
                    client.execute_cell(cell, index)
                    collect(index)
                    error = next((o for o in cell.get("outputs", []) if o.output_type == "error"), None)
                    if error is not None:  # "invalid syntax (3894.py, line 2)": IPython's file name is noise
                        execution.errors[index] = (error.ename, IPYTHON_FILE.sub(r"(line \1)", error.evalue))
        except CellTimeoutError:
            execution.broken = f"still running after {timeout:g} s (the --timeout), in cell {index + 1}"
            execution.stopped_at = index
        except DeadKernelError:
            execution.broken = f"the kernel died in cell {index + 1}"
            execution.stopped_at = index
        except Exception as error:  # the kernel would not start, or nbclient gave up for another reason
            execution.broken = f"could not be run: {type(error).__name__}: {str(error)[:120]}"
            execution.stopped_at = max(index, 0)
        collect(index)
    return execution


def judge(required: list[str], execution: Execution) -> list[Result]:
    """A result for every exercise in `required`, from the records and errors of one run."""
    results = []
    for exercise in required:
        mine = [r for _, r in execution.records if r.get("exercise") == exercise]
        ends = [r for r in mine if r.get("event") == "end"]
        if ends:
            results.append(_from_record(exercise, ends))
        elif mine:  # started, never ended: the kernel died or time ran out inside it
            results.append(Result(exercise, "error", f"its check never finished ({execution.broken})"))
        else:
            results.append(_unchecked(exercise, execution))
    return results


def _from_record(exercise: str, ends: list[dict[str, Any]]) -> Result:
    last = ends[-1]
    status = last.get("status") if last.get("status") in STATUSES else "error"
    detail = str(last.get("detail", ""))
    if status == "failed":
        total = last.get("passed", 0) + last.get("failed", 0)
        detail = f"{last.get('failed')} of {total} cases failed: {detail}"
    if len({e.get("status") for e in ends}) > 1:
        detail = f"{detail} (checked {len(ends)} times; the last run counts)".strip()
    return Result(exercise, status, detail)


def _unchecked(exercise: str, execution: Execution) -> Result:
    """An exercise whose check never ran: the first error in its part of the notebook, if any."""
    cells = execution.check_cells.get(exercise)
    if not cells:
        return Result(exercise, "not done", "no check cell for it")
    end = cells[0]
    start = max((i for c in execution.check_cells.values() for i in c if i < end), default=-1) + 1
    if execution.stopped_at is not None and execution.stopped_at < end:
        return Result(exercise, "not done", "not reached")
    recorded = {index for index, _ in execution.records}
    for index in range(start, end + 1):
        if index in execution.errors and index not in recorded:
            name, value = execution.errors[index]
            if name == "NotImplementedError" and value.startswith(STUB_MESSAGE[:9]):
                return Result(exercise, "not done", "still the stub")
            return Result(exercise, "error", f"{name}: {value} (cell {index + 1})")
    return Result(exercise, "not done", "its check never ran")
