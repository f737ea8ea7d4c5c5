"""What `agentlab course grade` prints and writes: a report an instructor reads, with totals per
learner and per exercise, and CSV or JSON rows for a gradebook or a spreadsheet.

All three are made from the same list of `Graded` notebooks, so they always agree.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from agentlab.course.grading import Graded

CSV_COLUMNS = ("learner", "notebook", "exercise", "status", "detail", "broken")


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
        head = f"{g.path}: {g.passed}/{len(g.results)} exercises pass"
        lines.append(f"{head}; broken: {g.broken}" if g.broken else head)
        for r in g.results:
            lines.append(f"  {r.exercise:<24} {r.status:<9} {r.detail[:110]}".rstrip())
    if len(graded) > 1:
        lines += ["", "By learner:"]
        lines += [
            f"  {name:<24} {p}/{t} exercises pass" for name, (p, t) in sorted(by_learner(graded).items())
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
        for r in g.results:
            writer.writerow((g.learner, g.path, r.exercise, r.status, r.detail, g.broken))
        if not g.results:
            writer.writerow((g.learner, g.path, "", "broken", "", g.broken))
    return out.getvalue()


def to_json(graded: Sequence[Graded]) -> str:
    """Every notebook with its results, and the two kinds of totals."""
    data = {
        "notebooks": [
            {
                "path": g.path,
                "learner": g.learner,
                "broken": g.broken,
                "passed": g.passed,
                "exercises": len(g.results),
                "results": [
                    {"exercise": r.exercise, "status": r.status, "detail": r.detail} for r in g.results
                ],
            }
            for g in graded
        ],
        "learners": {name: {"passed": p, "exercises": t} for name, (p, t) in by_learner(graded).items()},
        "exercises": {ex: {"passed": p, "notebooks": t} for ex, (p, t) in by_exercise(graded).items()},
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
