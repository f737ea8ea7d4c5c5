"""Where a learner is in the course: what they have done, read from their own notebooks.

    progress()            # in a notebook (00 has the cell), or `agentlab progress` in a terminal

lists, lesson by lesson, the quiz and the checked cells (the exercises in `exercises/`, and any
lesson cell that carries a check) with what each one's saved output says: done, tried, or to do.
Then where the learner is (the furthest lesson they have worked in) and what is next (the first
thing not done from there). It reads the saved notebooks and runs nothing, so it takes a moment and
shows what the notebooks show: a cell run but not saved is not seen yet.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentlab.course.checks import FORM_RIGHT

DONE, TRIED, TO_DO = "done", "tried", "to do"
KINDS = ("quiz", "lesson cell", "exercise")  # in the order a lesson's line lists them
# what a check prints when the answer passes (a multiple choice: when its form is right, all a check can see)
PASSED = re.compile(rf"^(All \d+ checks passed\.|The check passed\.|{re.escape(FORM_RIGHT)})$", re.M)
# a check cell: an exercise's `check(...)`, or a lesson's `your_turn(...)` (agentlab.yourturn)
CHECK_CALL = re.compile(r"""^\s*(?:\w+\s*=\s*)?(?:check|your_turn)\(\s*["']([\w.-]+)["']""", re.M)
QUIZ_CALL = re.compile(r"""^quiz\(\s*["']([\w.-]+)["']""")


def progress(root: str | Path | None = None) -> None:
    """Print the learner's progress in the course at `root` (default: the course folder around here)."""
    print(report(items(course_root(root))))


@dataclass(frozen=True)
class Item:
    """One thing to do in the course: a lesson's quiz, or a checked cell, and how far it got."""

    lesson: str  # "03"
    kind: str  # "quiz", "exercise" or "lesson cell"
    id: str  # "03.schema-checks", "03.sentinel"
    where: str  # the notebook, relative to the course folder
    status: str  # DONE, TRIED or TO_DO


def course_root(root: str | Path | None = None) -> Path:
    """The course folder: `root`, or the nearest folder at or above this one that holds both
    `notebooks/` and `exercises/` (a notebook's kernel runs in `notebooks/`)."""
    if root is not None:
        found = Path(root)
        if not (found / "notebooks").is_dir():
            raise FileNotFoundError(f"{found} has no notebooks/ folder: give the course folder")
        return found
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "notebooks").is_dir() and (folder / "exercises").is_dir():
            return folder
    raise FileNotFoundError(f"no course folder (with notebooks/ and exercises/) at or above {here}")


def items(root: Path) -> list[Item]:
    """Everything the course asks of the learner, in course order: each lesson's own cells, then
    its exercises."""
    found: list[Item] = []
    for folder in ("notebooks", "exercises"):
        for path in sorted((root / folder).glob("[0-9][0-9]_*.ipynb")):
            found.extend(_items_in(path, f"{folder}/{path.name}"))
    order = {"notebooks": 0, "exercises": 1}
    return sorted(found, key=lambda i: (i.lesson, order[i.where.split("/")[0]]))  # stable within a file


def _items_in(path: Path, where: str) -> Iterator[Item]:
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):  # a notebook being saved, or broken: nothing to read in it yet
        return
    lesson = path.name[:2]
    kind = "exercise" if where.startswith("exercises/") else "lesson cell"
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source, shown = _text(cell.get("source", "")), _shown(cell)
        checks = cell.get("metadata", {}).get("agentlab", {}).get("checks") or CHECK_CALL.findall(source)
        for check_id in checks:
            yield Item(lesson, kind, check_id, where, _check_status(check_id, shown))
        asked = QUIZ_CALL.match(source.lstrip())
        if asked:
            status = DONE if "✓ (" in shown else TRIED if "✗ not (" in shown else TO_DO
            yield Item(lesson, "quiz", asked[1], where, status)


def _check_status(check_id: str, shown: str) -> str:
    """What a check cell's saved output says of one check: its part runs from its "Checking <id>:"
    line to the next check's."""
    parts = re.split(r"^(?=Checking \S+:)", shown, flags=re.M)
    mine = next((p for p in parts if p.startswith(f"Checking {check_id}:")), None)
    if mine is None or "not written yet" in mine:
        return TO_DO
    return DONE if PASSED.search(mine) else TRIED


def _shown(cell: dict) -> str:
    """A cell's saved output as text: its printed lines, its displays' text and its errors."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(_text(output.get("text", "")))
        parts.append(_text(output.get("data", {}).get("text/plain", "")))
        if output.get("output_type") == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return "\n".join(p for p in parts if p)


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def report(found: list[Item]) -> str:
    """The progress as text: one line per lesson, the totals, where the learner is and what is next."""
    if not found:
        return "No quizzes or checked cells found: is this the course folder?"
    lines = ["Your progress, read from your saved notebooks:"]
    lessons = sorted({i.lesson for i in found})
    for lesson in lessons:
        mine = [i for i in found if i.lesson == lesson]
        parts = [_tally(f"{kind}s", [i for i in mine if i.kind == kind]) for kind in KINDS]
        lines.append(f"  {lesson}  " + " · ".join(p for p in parts if p))
    done = sum(i.status == DONE for i in found)
    lines.append(f"Done: {done} of {len(found)}.")
    worked = [i.lesson for i in found if i.status != TO_DO]
    here = max(worked, default=None)
    lines.append(f"Where you are: lesson {here}." if here else "Where you are: at the start.")
    ahead = [i for i in found if i.status != DONE and (here is None or i.lesson >= here)]
    upcoming = ahead or [i for i in found if i.status != DONE]
    if not upcoming:
        lines.append("Next: nothing left. Every quiz and check is done.")
        return "\n".join(lines)
    nxt = upcoming[0]
    tried = " (tried, not passed yet)" if nxt.status == TRIED else ""
    lines.append(f"Next: the {nxt.kind} {nxt.id}{tried}, in {nxt.where}.")
    return "\n".join(lines)


def _tally(label: str, mine: list[Item]) -> str:
    if not mine:
        return ""
    if len(mine) == 1:
        return f"{mine[0].kind} {mine[0].status}"
    done = sum(i.status == DONE for i in mine)
    tried = sum(i.status == TRIED for i in mine)
    return f"{label} {done}/{len(mine)} done" + (f", {tried} tried" if tried else "")
