"""A learner's notebook as the grader reads it: its cells, the exercises its check cells name, and
the names its answers go by.

The grader never trusts the notebook's own kernel, but it must know what the file holds before it
runs anything: `read_cells` reads the cells as the JSON they are (nbformat's validator takes seconds
to import, and a broken file must be a one-line reason, not a traceback); `named` gives the
exercises the check cells name (in their metadata, or in a `check("02.x", ...)` call), which tell
an 05 saved as 06 or a notebook from before the renumbering; `answer_names` finds, in the kit's own
exercise notebook, the name each exercise's answer is defined under.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from agentlab.course.exercises import CHECK_CALL, METADATA


@dataclass(frozen=True)
class Cell:
    kind: str
    source: str
    checks: tuple[str, ...] = ()  # the exercises a check cell names in its metadata


def read_cells(path: Path) -> list[Cell]:
    """A notebook's cells, read as the JSON it is (nbformat's validator takes seconds to import)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("no list of cells in it (an nbformat 4 notebook is expected)")
    cells = []
    for cell in data["cells"]:
        if not isinstance(cell, dict):
            raise ValueError("a cell that is not a JSON object")
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        named = (meta.get(METADATA) or {}).get("checks", []) if isinstance(meta.get(METADATA), dict) else []
        cells.append(Cell(str(cell.get("cell_type", "")), source, tuple(map(str, named))))
    return cells


def named(nb: list[Cell]) -> set[str]:
    """The exercises `nb`'s check cells name: in their metadata, or in a `check("02.x", ...)` call."""
    ids = {i for c in nb for i in c.checks}
    return ids | {i for c in nb if c.kind == "code" for i in CHECK_CALL.findall(c.source)}


def answer_names(number: str, root: Path | str | None, nb: list[Cell]) -> dict[str, str]:
    """exercise -> the name its answer has: from the kit's own exercise notebook (`check("02.x", name)`),
    or, without the kit's folder, from the learner's check cells."""
    sources = [c.source for c in nb if c.kind == "code"]
    kits = [Path(root)] if root else []
    for kit in [*kits, Path(__file__).resolve().parents[2]]:
        found = sorted((kit / "exercises").glob(f"{number}_*.ipynb"))
        if found:
            sources = [c.source for c in read_cells(found[0]) if c.kind == "code"]
            break
    names: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "check"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[1], ast.Name)
            ):
                names.setdefault(str(node.args[0].value), node.args[1].id)
    return names
