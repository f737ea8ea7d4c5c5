"""Notebook 08's grading cases: handoff logs the exercise's own cases do not show, each with the
transfers that lost the request picked out by hand."""

from collections.abc import Callable, Iterator

from agentlab.course.checks import Case, attempt
from agentlab.course.hidden import grading
from agentlab.handoffs import HandoffRun, Transfer

_REQUEST = "What is the total crew of Silver Heron and Moth Queen?"
_NOTE = "Start here: What is the crew of Silver Heron?"
_ASKED = {"role": "user", "content": _REQUEST}
_NOTED = {"role": "user", "content": _NOTE}
_CUT = {"role": "user", "content": "What is the total crew of Silver Heron and Brass Lantern?"}  # 44 shared
_SECOND_BLOCK = {
    "role": "user",
    "content": [{"type": "text", "text": "Hello."}, {"type": "text", "text": _REQUEST}],
}
_SAID_BACK = {"role": "assistant", "content": f"You asked: {_REQUEST}"}  # the receiver starts from it too
_LOWER = {"role": "user", "content": _REQUEST.lower()}  # not word for word


def _run(*hops: tuple[str, str, dict]) -> HandoffRun:
    log = [Transfer(i + 1, source, target, _NOTE, (sent,)) for i, (source, target, sent) in enumerate(hops)]
    return HandoffRun(_REQUEST, "note", "an answer", "done", log[-1].target, log)


# (what, the run, the turns of the transfers that lost the request)
_LOGS = (
    (
        "three transfers, the first and the last lose the request",
        _run(
            ("triage", "researcher", _NOTED), ("researcher", "analyst", _ASKED), ("analyst", "writer", _NOTED)
        ),
        [1, 3],
    ),
    (
        "the same agent receives twice, losing the request both times",
        _run(
            ("triage", "analyst", _NOTED),
            ("analyst", "researcher", _ASKED),
            ("researcher", "analyst", _NOTED),
        ),
        [1, 3],
    ),
    ("a message that shares the request's first 44 characters only", _run(("triage", "analyst", _CUT)), [1]),
    (
        "the request in a message's second text block, then said back by an assistant, then in lower case",
        _run(
            ("triage", "analyst", _SECOND_BLOCK),
            ("analyst", "writer", _SAID_BACK),
            ("writer", "critic", _LOWER),
        ),
        [3],
    ),
)


@grading("08.handoff-audit")
def handoff_audit(lost_requests: Callable) -> Iterator[Case]:
    for what, run, lost in _LOGS:
        got, error = attempt(lost_requests, run)
        turns = [getattr(t, "turn", t) for t in got] if isinstance(got, list | tuple) else got
        yield Case(what, not error and turns == lost, error or f"got the transfers at calls {turns!r}")
