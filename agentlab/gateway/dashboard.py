"""`/dashboard`: the class's spend on one page, for the instructor (a token printed when the gateway
starts, held in memory only, never in the ledger).

Today's spend per learner against their daily budget, and the class's total against the sum of
the budgets and against the class's own budget (`agentlab gateway budget`), if it has one; then
the report's rows (per learner and model: calls, tokens fresh and cached, dollars (all time and
today), refusals, upstream failures, last seen, the learner's budget; a last row for the class:
the sums against the class's budget). Plain HTML, no script: reload to refresh.
"""

from __future__ import annotations

import html
import time

from agentlab.gateway.store import REPORT_FIELDS, Ledger, utc_day

STYLE = "body{font-family:sans-serif}td,th{padding:2px 10px;text-align:right}td:first-child{text-align:left}"


def page(ledger: Ledger, now: float | None = None) -> bytes:
    """The dashboard's HTML, from the ledger as it is now."""
    now = time.time() if now is None else now
    day = utc_day(now)
    spent, learners = ledger.spent_by_learner(day), ledger.learners()
    budgets = [one.dollars_per_day for one in learners if one.dollars_per_day is not None and not one.revoked]
    total = sum(spent.values())
    today = [
        (
            one.name,
            f"{spent.get(one.name, 0.0):.4f}",
            "none" if one.dollars_per_day is None else f"{one.dollars_per_day:.2f}",
            "revoked" if one.revoked else "active",
        )
        for one in learners
    ]
    limit = ledger.class_budget()
    against = (
        " The class has no budget of its own."
        if limit is None
        else f" Against the class's budget of ${limit:.2f}/day: ${max(0.0, limit - total):.4f} left"
        + (" (reached: every request is refused until 00:00 UTC)." if total >= limit else ".")
    )
    money = ("dollars", "dollars_today")
    shown = ({**row, **{m: f"{row[m]:.6f}" for m in money}} for row in ledger.report(day))
    rows = [tuple(str(row[name]) for name in REPORT_FIELDS) for row in shown]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>agentlab gateway</title>",
        f"<style>{STYLE}</style></head><body><h1>agentlab gateway</h1>",
        f"<p>Today ({day} UTC): the class spent <b>${total:.4f}</b>",
        f" of ${sum(budgets):.2f} in daily budgets ({len(learners)} learner(s)).{html.escape(against)}</p>",
        "<h2>Today</h2>",
        _table(("learner", "dollars today", "dollars/day", "status"), today),
        "<h2>All calls, per learner and model</h2>",
        _table(REPORT_FIELDS, rows),
        "</body></html>",
    ]
    return "".join(parts).encode()


def _table(titles: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(t)}</th>" for t in titles)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
