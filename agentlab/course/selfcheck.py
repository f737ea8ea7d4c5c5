"""A learner's `make check`: run exercise notebooks as saved and show what each check said.

    python -m agentlab.course.selfcheck exercises/02_plans_are_dags.ipynb   # or several, or none: all

Each notebook runs top to bottom in a fresh kernel, in its own folder, as "Run All" would; nothing
is written back. For every cell that calls `check(...)` it prints the check's lines and, when the
cell stopped, its one-line error. These are the feedback checks a learner runs in JupyterLab,
nothing more: the grade is the instructor's grader's (see the learner's README).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CHECK_CALL = re.compile(r"^check\(", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TIMEOUT = 300  # seconds a cell may run: the checks bound each case far below this


def main(argv: list[str] | None = None) -> int:
    """Run each notebook named (all of exercises/ without names) and show its checks; 0 once shown,
    whatever they said (feedback, not a gate: make would call a failed check an error), 2 on bad names."""
    names = sys.argv[1:] if argv is None else argv
    paths = [Path(n) for n in names] or sorted(Path("exercises").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or not paths:
        where = ", ".join(missing) or Path("exercises").resolve()
        print(f"error: no exercise notebook at {where}", file=sys.stderr)
        return 2
    all_passed = True
    for path in paths:
        print(f"== {path}")
        all_passed &= report(path)
    print("Every check above passed." if all_passed else "Some checks did not pass yet: see above.")
    return 0


def report(path: Path) -> bool:
    """Run one notebook, print each check cell's verdict; whether every check passed."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=TIMEOUT, allow_errors=True, kernel_name="python3")
    client.execute(cwd=str(path.resolve().parent), stderr=subprocess.DEVNULL)  # the kernel's start-up chatter
    passed = True
    for cell in notebook.cells:
        if cell.cell_type != "code" or not CHECK_CALL.search(cell.source):
            continue
        for line in said(cell):
            print(f"  {line}")
        passed &= not any(output.get("output_type") == "error" for output in cell.outputs)
    return passed


def said(cell: nbformat.NotebookNode) -> list[str]:
    """A check cell's lines: from "Checking ..." to its verdict, then the error line if it stopped."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Checking ")), len(lines))
    shown = []
    for line in lines[start:]:
        shown.append(line)
        if not line.startswith(("Checking ", "  ")):  # the verdict ends the check's part
            break
    for output in cell.outputs:
        if output.get("output_type") == "error":
            shown.append(ANSI.sub("", f"{output['ename']}: {output['evalue']}"))
    return shown


if __name__ == "__main__":
    sys.exit(main())
