"""Code taken out of the solution and exercise notebooks, so the exercise tests run the
real solutions (and the real stubs), never copies of them."""

from pathlib import Path

import nbformat
import pytest

from agentlab.course import exercises

ROOT = Path(__file__).resolve().parents[1]
WITHHELD = not (ROOT / "solutions").is_dir()  # a class copy of the kit, handed out without solutions/


def skip_without_solutions() -> None:
    """Skip the calling test module in a copy of the kit whose solutions/ is withheld."""
    if WITHHELD:
        pytest.skip("solutions/ is withheld in this copy of the kit", allow_module_level=True)


def code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def define(path: Path, *names: str):
    """The functions `names` as a notebook defines them: its first (setup) code cell, then the
    cells that define them, in order (later ones may use earlier ones); returns the last."""
    cells, namespace = code_cells(path), {}
    exec(cells[0], namespace)
    for name in names:
        exec(next(c for c in cells if f"def {name}(" in c), namespace)
    return namespace[names[-1]]


def answer(path: Path, name: str, marker: str):
    """The value `name` as assigned in the solution region of the cell containing `marker`."""
    source = next(c for c in code_cells(path) if marker in c)
    namespace: dict = {}
    exec(source.split(exercises.BEGIN_CODE)[1].split(exercises.END_CODE)[0], namespace)
    return namespace[name]


def run_cells(path: Path, answers: bool) -> dict:
    """Run a notebook's code cells in one namespace. A cell that calls check("...") is left out,
    except, with `answers`, the lines of its solution region (an answer assigned there)."""
    namespace: dict = {}
    for source in code_cells(path):
        if exercises.CHECK_CALL.search(source):
            if not answers:
                continue
            lines = source.splitlines()
            if exercises.BEGIN_CODE not in lines:
                continue
            source = "\n".join(lines[lines.index(exercises.BEGIN_CODE) + 1 : lines.index(exercises.END_CODE)])
        exec(compile(source, str(path), "exec"), namespace)
    return namespace


def exercise_cell(path: Path, marker: str) -> str:
    """The source of the notebook's code cell that contains `marker`."""
    return next(c for c in code_cells(path) if marker in c)


def failed_cases(capsys) -> list[str]:
    """The ✗ lines a check printed."""
    return [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("✗")]


def stub(*args):
    """What an untouched exercise function does."""
    raise NotImplementedError("Exercise: write this part, then run the cell again.")


def caught(capsys, exercise: str, answer, *lines: str) -> list[str]:
    """Run a wrong answer through its check: the check must fail, and among its ✗ lines there must
    be one starting with each of `lines` (the hidden case that catches this kind of mistake).
    Returns the ✗ lines, for further asserts."""
    from agentlab.course.checks import CheckFailed, check

    try:
        check(exercise, answer)
    except CheckFailed:
        pass
    else:
        raise AssertionError(f"{exercise}: the wrong answer passed every hidden case")
    failed = failed_cases(capsys)
    for line in lines:
        assert any(f.startswith(line) for f in failed), f"no ✗ line starts with {line!r}: {failed}"
    return failed
