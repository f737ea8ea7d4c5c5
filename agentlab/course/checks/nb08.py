"""Checks for the exercises of notebook 08, migration and handoffs.

- `08.threshold`: from a comparison of one agent and a team, the size from which to send tasks to
  the team (the migration case of section 1);
- `08.handoff-audit`: from a handoff run's log, the transfers after which the user's request was lost.

The runs behind the hidden cases are made in `_nb08_cases.py`, on the simulated LLM, so they are the
same every time. (Both exercises were notebook 07's, as `07.threshold` and `07.handoff-audit`, before
the course split that notebook in two.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agentlab.compare import Comparison
from agentlab.course.checks import Case, attempt, exercise
from agentlab.course.checks._nb08_cases import audit_cases, threshold_cases
from agentlab.handoffs import HandoffRun, Transfer

# --- 08.threshold ----------------------------------------------------------------------------------


_BEST = {  # each case's best threshold, by the case's name
    "notebook 08's tuning batch, the small model": 2,
    "notebook 08's tuning batch, the large model": 10,
    "notebook 08's held-out batch, the small model": 2,
    "two thresholds equally accurate, one of them cheaper": 4,
    "the team wins only where the tasks are largest": 6,
    "one agent better at every size": 6,
    "the team better at every size": 1,
    "equally accurate everywhere: the team reads fewer tokens, but writes more and costs more": 6,
    "sizes with a gap between them": 3,
}


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
        yield _judge_threshold(choose, what, comparison, _BEST[what])


def _judge_threshold(choose: Callable, what: str, comparison: Comparison, want: int) -> Case:
    """One case of 08.threshold: `choose(comparison)` against the threshold `want`."""
    got, error = attempt(choose, comparison)
    right = not error and isinstance(got, int | float) and not isinstance(got, bool) and got == want
    return Case(what, right, error or f"got {got!r}")


# --- 08.handoff-audit ------------------------------------------------------------------------------


_LOST = {  # by case: the positions, in the run's transfers, of those after which the request was lost
    "notebook 07's four-hop chain, the request forwarded": (),
    "notebook 07's four-hop chain, the note alone": (0,),
    "notebook 07's four-hop chain, the whole conversation": (),
    "a single lookup, the note alone": (),
    "two transfers: the first forwards the request, the second only a note": (1,),
    "the request in a text block": (),
    "the whole conversation, ending with a tool result": (),
    "a note that quotes the request, and messages that do not": (0,),
    "no transfer at all": (),
    "a tool result that quotes the request, after a note: only text counts": (0,),
    "the request in the third message the receiver starts from": (),
}


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
        yield _judge_audit(lost_requests, what, run, [run.transfers[i] for i in _LOST[what]])


def _judge_audit(lost_requests: Callable, what: str, run: HandoffRun, want: list[Transfer]) -> Case:
    """One case of 08.handoff-audit: `lost_requests(run)` against the transfers `want`."""
    got, error = attempt(lost_requests, run)
    right = not error and isinstance(got, list | tuple) and list(got) == want
    return Case(what, right, error or f"got {_named(got)}")
