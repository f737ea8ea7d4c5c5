"""The class leaderboard for the capstone: an HTML page and a CSV, from the grader's results only.

    agentlab course leaderboard --html board.html --csv board.csv

It reads the capstone log `agentlab course grade` appends to (`.agentlab/capstone.jsonl`, beside
the results file): one line per graded submission, written by the grader, never a learner's file.

- **Which submission counts:** each learner's latest graded one (the last line of theirs in the
  log). Not their best: keeping the best of many would reward submitting again and again until the
  held-out set's luck smiles. Every graded submission is counted (a notebook graded again unchanged
  is one submission), and the board says how many each learner made.
- **The rule:** accuracy first. The most accurate entry (the cheaper of equals) leads a tier; every
  entry whose accuracy is non-inferior to the leader's at MARGIN (the paired interval for its
  difference lies above -MARGIN, `agentlab.verdicts.non_inferior`) is tied with it, and a tier is
  ordered by cost per task. The entries left form the next tier the same way.
- **Against the reference:** each entry's paired comparison with the reference team on the same
  tasks: accuracy (exact McNemar, Holm-adjusted over the board's entries as one family), whether
  it is non-inferior at MARGIN, and cost and model seconds per task (paired t interval).
- An entry with a named status (`capstone.STATUSES`) is listed, with its status, and has no rank.
"""

from __future__ import annotations

import csv
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlab.capstone import MARGIN
from agentlab.course.capstone import STATUSES
from agentlab.course.gradebook import PATH_CHARS, _safe_cell
from agentlab.course.grading import clean

RULE = (
    "Ranked by accuracy on the held-out tasks. Entries whose accuracy is non-inferior to the "
    f"tier's leader at a margin of {100 * MARGIN:.0f} points (paired 95% interval) are tied, and a "
    "tier is ordered by cost per task (cheaper first; equal costs by name). Each learner's latest "
    "graded submission counts; every graded submission is counted."
)


@dataclass
class Entry:
    """One learner on the board: their latest graded submission, and how many they made."""

    learner: str
    submissions: int
    status: str
    detail: str
    data: dict = field(repr=False)
    rank: int | None = None
    tier: int | None = None
    versus: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def right(self) -> list[bool]:
        return [bool(x) for x in self.data["right"]]

    @property
    def accuracy(self) -> float:
        return sum(self.right) / len(self.right)

    def mean(self, column: str) -> float:
        values = self.data[column]
        return sum(values) / len(values)


def read_log(path: Path) -> list[dict]:
    """The capstone log's lines, in order (a torn or foreign line is skipped)."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                if isinstance(row.get("graded", {}).get("capstone"), dict):
                    rows.append(row)
            except (ValueError, AttributeError):
                continue
    return rows


def entries(rows: list[dict]) -> list[Entry]:
    """Each learner's latest submission, with their count of distinct graded submissions."""
    latest: dict[str, dict] = {}
    seen: dict[str, set[str]] = {}
    for row in rows:
        learner = clean(str(row["graded"].get("learner", "")), PATH_CHARS)
        latest[learner] = row
        seen.setdefault(learner, set()).add(str(row.get("fingerprint", "")))
    found = []
    for learner, row in latest.items():
        data = row["graded"]["capstone"]
        status = str(data.get("status", "crashed"))
        status = status if status in STATUSES else "crashed"
        if status == "ranked" and not _complete(data):
            status = "crashed"
        found.append(Entry(learner, len(seen[learner]), status, clean(str(data.get("detail", ""))), data))
    return found


def _complete(data: dict) -> bool:
    """A ranked result with a value per task for it and for the reference."""
    try:
        n = len(data["right"])
        ref = data["reference"]
        columns = [data[c] for c in ("cost", "seconds", "calls")] + [
            ref[c] for c in ("right", "cost", "seconds")
        ]
        return n > 0 and all(len(c) == n for c in columns)
    except (KeyError, TypeError):
        return False


def rank(board: list[Entry]) -> list[Entry]:
    """The board in order: ranked entries by the stated RULE (each with its rank and tier), then
    the rest by learner. Entries graded on another held-out set than the latest are not ranked."""
    from agentlab.evidence import paired_accuracy
    from agentlab.verdicts import non_inferior

    ranked = [e for e in board if e.status == "ranked"]
    if ranked:
        reference = ranked[-1].data["reference"]["right"]
        for entry in ranked:
            if entry.data["reference"]["right"] != reference:
                entry.status = "another set"
        ranked = [e for e in ranked if e.status == "ranked"]
    _versus_reference(ranked)
    order, left, tier = [], list(ranked), 0
    while left:
        tier += 1
        leader = max(left, key=lambda e: (e.accuracy, -e.mean("cost"), e.learner))
        tied = [
            e
            for e in left
            if e is leader or non_inferior(paired_accuracy(e.right, leader.right), MARGIN).kept
        ]
        for entry in sorted(tied, key=lambda e: (e.mean("cost"), -e.accuracy, e.learner)):
            entry.tier, entry.rank = tier, len(order) + 1
            order.append(entry)
        left = [e for e in left if e not in tied]
    return order + sorted((e for e in board if e.status != "ranked"), key=lambda e: e.learner)


def _versus_reference(ranked: list[Entry]) -> None:
    """Each entry against the reference on the same tasks; the accuracy tests judged as a family."""
    from agentlab.evidence import paired_accuracy, paired_cost
    from agentlab.intervals import wilson
    from agentlab.verdicts import family, non_inferior

    if not ranked:
        return
    names = ("this entry", "reference")
    tests = family([paired_accuracy(e.right, e.data["reference"]["right"], names) for e in ranked])
    for entry, test in zip(ranked, tests, strict=True):
        ref = entry.data["reference"]
        low, high = wilson(sum(entry.right), len(entry.right))
        entry.versus = {
            "interval": (float(low), float(high)),
            "accuracy": test,
            "kept": non_inferior(test, MARGIN),
            "cost": paired_cost(entry.data["cost"], ref["cost"], names),
            "seconds": paired_cost(entry.data["seconds"], ref["seconds"], names, unit="s"),
        }


COLUMNS = (
    "rank", "tier", "learner", "submissions", "status", "right", "tasks", "accuracy", "ci_low",
    "ci_high", "usd_per_task", "model_seconds_per_task", "calls_per_task", "vs_reference_accuracy",
    "non_inferior_to_reference", "vs_reference_cost", "vs_reference_seconds", "detail",
)  # fmt: skip


def row(entry: Entry) -> list[str]:
    """One CSV row: the numbers of a ranked entry, the status and detail of any."""
    cells: list[Any] = [entry.rank or "", entry.tier or "", entry.learner, entry.submissions, entry.status]
    if entry.status == "ranked":
        v = entry.versus
        cells += [sum(entry.right), len(entry.right), f"{entry.accuracy:.4f}"]
        cells += [f"{v['interval'][0]:.4f}", f"{v['interval'][1]:.4f}", f"{entry.mean('cost'):.6f}"]
        cells += [f"{entry.mean('seconds'):.3f}", f"{entry.mean('calls'):.2f}"]
        cells += [str(v["accuracy"]), "yes" if v["kept"].kept else "no", str(v["cost"]), str(v["seconds"])]
    else:
        cells += [""] * 12
    cells.append(entry.detail if entry.status == "ranked" else STATUSES[entry.status])
    return [_safe_cell(clean(str(c))) for c in cells]


def to_csv(board: list[Entry]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for entry in board:
        writer.writerow(row(entry))
    return out.getvalue()


def to_html(board: list[Entry]) -> str:
    """A page an instructor can publish: every learner's text escaped, the rule stated above."""
    e = html.escape
    head = ("rank", "learner", "submissions", "accuracy (95% CI)", "$ per task", "model s per task",
            "against the reference (same tasks)")  # fmt: skip
    lines = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Capstone leaderboard</title>',
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px;"
        "vertical-align:top}table{border-collapse:collapse}.tier{color:#555}</style></head><body>",
        "<h1>Capstone leaderboard</h1>",
        f"<p>{e(RULE)}</p>",
        "<table>",
        "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>",
    ]
    for entry in board:
        if entry.status == "ranked":
            v = entry.versus
            low, high = v["interval"]
            accuracy = f"{sum(entry.right)}/{len(entry.right)} ({100 * low:.0f}–{100 * high:.0f}%)"
            versus = "<br>".join(e(str(x)) for x in (v["accuracy"], v["kept"], v["cost"], v["seconds"]))
            place = f"{entry.rank} <span class=tier>(tier {entry.tier})</span>"
            cells = [place, e(entry.learner), str(entry.submissions), e(accuracy)]
            cells += [f"${entry.mean('cost'):.5f}", f"{entry.mean('seconds'):.1f}", versus]
        else:
            said = f"{entry.status}: {STATUSES[entry.status]}"
            cells = ["—", e(entry.learner), str(entry.submissions)]
            lines.append(
                "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f'<td colspan="4">{e(said)}</td></tr>'
            )
            continue
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines += ["</table>", "</body></html>", ""]
    return "\n".join(lines)


def to_text(board: list[Entry]) -> str:
    """The board in a terminal: rank, learner, submissions, accuracy, cost, or the status."""
    lines = [RULE, ""]
    for entry in board:
        name = clean(entry.learner, 40)
        if entry.status == "ranked":
            acc = f"{sum(entry.right)}/{len(entry.right)}"
            lines.append(
                f"{entry.rank:>3}  {name:<24} {entry.submissions:>3} sub  {acc:>6} right  "
                f"${entry.mean('cost'):.5f}/task  tier {entry.tier}"
            )
        else:
            lines.append(
                f"  —  {name:<24} {entry.submissions:>3} sub  {entry.status}: {STATUSES[entry.status]}"
            )
    return "\n".join(lines)


def board(log: Path) -> list[Entry]:
    """The leaderboard from the capstone log at `log`."""
    return rank(entries(read_log(log)))
