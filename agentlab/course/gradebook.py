"""What `agentlab course grade` prints and writes: a report an instructor reads, with totals per
learner and per exercise, and CSV or JSON rows for a gradebook or a spreadsheet.

All three are made from the same list of `Graded` notebooks, so they always agree. Every text that
can come from a learner (a path, a detail, why a notebook broke) goes through `grading.clean`:
no newline, control character or escape sequence of theirs reaches a terminal or a spreadsheet,
and a notebook's whole entry stays under ENTRY_CHARS.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from agentlab.course.grading import DETAIL_CHARS, Graded, clean

CSV_COLUMNS = ("learner", "notebook", "exercise", "status", "detail", "broken")
PATH_CHARS = 600  # a notebook's path or learner, as shown
ENTRY_CHARS = 2 * PATH_CHARS + 8 * (
    DETAIL_CHARS + 100
)  # a notebook's entry in any report (at most 5 exercises)


def _safe_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text, never runs as a formula (=, +, -, @ first)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def by_learner(graded: Sequence[Graded]) -> dict[str, tuple[int, int]]:
    """learner -> (exercises passed, exercises graded), over all of that learner's notebooks."""
    totals: dict[str, tuple[int, int]] = {}
    for g in graded:
        passed, total = totals.get(g.learner, (0, 0))
        totals[g.learner] = (passed + g.passed, total + len(g.results))
    return totals


def by_exercise(graded: Sequence[Graded]) -> dict[str, tuple[int, int]]:
    """exercise id -> (notebooks in which it passed, notebooks graded for it)."""
    totals: dict[str, tuple[int, int]] = {}
    for g in graded:
        for r in g.results:
            passed, total = totals.get(r.exercise, (0, 0))
            totals[r.exercise] = (passed + (r.status == "passed"), total + 1)
    return totals


def all_passed(graded: Sequence[Graded]) -> bool:
    return all(not g.broken and g.results and g.passed == len(g.results) for g in graded)


def to_text(graded: Sequence[Graded]) -> str:
    """Each notebook with a line per exercise, then the totals."""
    lines = []
    for g in graded:
        head = f"{clean(g.path, PATH_CHARS)}: {g.passed}/{len(g.results)} exercises pass"
        lines.append(f"{head}; broken: {clean(g.broken)}" if g.broken else head)
        for r in g.results:
            lines.append(f"  {r.exercise:<24} {r.status:<9} {clean(r.detail, 110)}".rstrip())
    if len(graded) > 1:
        lines += ["", "By learner:"]
        lines += [
            f"  {clean(name, PATH_CHARS):<24} {p}/{t} exercises pass"
            for name, (p, t) in sorted(by_learner(graded).items())
        ]
        lines += ["By exercise:"]
        lines += [f"  {ex:<24} passed in {p} of {t} notebooks" for ex, (p, t) in by_exercise(graded).items()]
    return "\n".join(lines)


def to_csv(graded: Sequence[Graded]) -> str:
    """One row per exercise of each notebook; a notebook with nothing graded still gets a row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for g in graded:
        learner, path, broken = clean(g.learner, PATH_CHARS), clean(g.path, PATH_CHARS), clean(g.broken)
        for r in g.results:
            row = (learner, path, r.exercise, r.status, clean(r.detail), broken)
            writer.writerow([_safe_cell(cell) for cell in row])
        if not g.results:
            writer.writerow([_safe_cell(cell) for cell in (learner, path, "", "broken", "", broken)])
    return out.getvalue()


def to_json(graded: Sequence[Graded]) -> str:
    """Every notebook with its results, and the two kinds of totals."""
    data = {
        "notebooks": [
            {
                "path": clean(g.path, PATH_CHARS),
                "learner": clean(g.learner, PATH_CHARS),
                "broken": clean(g.broken),
                "passed": g.passed,
                "exercises": len(g.results),
                "results": [
                    {"exercise": r.exercise, "status": r.status, "detail": clean(r.detail)} for r in g.results
                ],
            }
            for g in graded
        ],
        "learners": {
            clean(name, PATH_CHARS): {"passed": p, "exercises": t}
            for name, (p, t) in by_learner(graded).items()
        },
        "exercises": {ex: {"passed": p, "notebooks": t} for ex, (p, t) in by_exercise(graded).items()},
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
