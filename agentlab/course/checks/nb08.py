"""Checks for the exercises of notebook 08, migration and handoffs.

- `08.threshold`: from a comparison of one agent and a team, the size from which to send tasks to
  the team (the migration case of section 1);
- `08.handoff-audit`: from a handoff run's log, the transfers after which the user's request was lost.

The runs behind the hidden cases are made in `_nb08_cases.py`, on the simulated LLM, so they are the
same every time. (Both exercises were notebook 07's, as `07.threshold` and `07.handoff-audit`, before
the course split that notebook in two.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from agentlab import world
from agentlab.compare import Comparison, row
from agentlab.course.checks import Case, attempt, exercise
from agentlab.course.checks._nb08_cases import audit_cases, threshold_cases
from agentlab.handoffs import HandoffRun, Transfer
from agentlab.routing import split

# --- 08.threshold ----------------------------------------------------------------------------------


def _best_threshold(comparison: Comparison) -> int:
    """The most accurate threshold for "the team from t steps, one agent below"; then the cheapest;
    then the smallest. Every t from 1 (the team for everything) to one past the largest task."""
    largest = max(world.steps_needed(t.question) for t in comparison.tasks)
    rows = {t: row("", split(comparison, t)) for t in range(1, largest + 2)}
    return min(rows, key=lambda t: (-rows[t].accuracy, rows[t].mean_cost, t))


_BEST: dict[str, int] = {}  # each case's best threshold, by the case's name


@exercise(
    "08.threshold",
    "Choose from data the size at which tasks go to the team",
    hint="look at which thresholds you try (from 1, the team for everything, to one past the largest "
    "task, one agent for everything; every number in between, not only the sizes in the batch), at "
    "what you compare (the whole policy's accuracy over the batch, not the two shapes size by size), "
    "and at ties (the cheaper, then the smaller threshold)",
)
def threshold(choose: Callable[[Comparison], int]) -> Iterator[Case]:
    for what, comparison in threshold_cases():
        if what not in _BEST:  # the case's comparison is made once a process, so its answer is too
            _BEST[what] = _best_threshold(comparison)
        want = _BEST[what]
        got, error = attempt(choose, comparison)
        right = not error and isinstance(got, int | float) and not isinstance(got, bool) and got == want
        yield Case(what, right, error or f"got {got!r}")


# --- 08.handoff-audit ------------------------------------------------------------------------------


def _lost(run: HandoffRun) -> list[Transfer]:
    """The transfers after which the receiving agent cannot see the user's request word for word in
    any message it starts from (a string content, or a text block's text)."""

    def texts(message) -> list[str]:
        content = message.get("content", "")
        if isinstance(content, str):
            return [content]
        return [b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]

    return [t for t in run.transfers if not any(run.task in text for m in t.sent for text in texts(m))]


def _named(transfers) -> str:
    if not isinstance(transfers, list | tuple):
        return f"a {type(transfers).__name__}, not a list of transfers"
    return (
        "["
        + ", ".join(f"{t.source} -> {t.target}" if isinstance(t, Transfer) else repr(t) for t in transfers)
        + "]"
    )


@exercise(
    "08.handoff-audit",
    "Audit a handoff log for lost requests",
    hint="look at every message a transfer's receiver starts from (`transfer.sent`), not at the note, "
    "and at every transfer of the run, not only the first; a message's content is a string or a list "
    "of blocks, and a text block holds its words under 'text'",
)
def handoff_audit(lost_requests: Callable[[HandoffRun], list[Transfer]]) -> Iterator[Case]:
    for what, run in audit_cases():
        want = _lost(run)
        got, error = attempt(lost_requests, run)
        right = not error and isinstance(got, list | tuple) and list(got) == want
        yield Case(what, right, error or f"got {_named(got)}")
