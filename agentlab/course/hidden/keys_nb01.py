"""Notebook 01's keys: the majority synthesizer, worked out, for the grader's own cases.

The feedback check of 01.reconcile carries what its cases expect as data (`checks/_nb01_reconcile.py`:
literals, and digests for the generated ones); the answer that works it out lives here, with the
instructor, never in the release. The grader adds findings generated from other seeds (`SEEDS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.checks._nb01_reconcile import (
    _GENERATED,
    _RECONCILED,
    _digest,
    _findings_case,
    _reconcile_fixed,
)
from agentlab.course.checks.nb01 import _judge_generated
from agentlab.course.hidden import grading

SEEDS = range(1000, 1030)  # change them to generate other findings for a class


def majority(findings: Mapping[str, Any]) -> list[tuple[str, str | None, frozenset]]:
    """(claim, value or None, cited steps) per claim, in the order the claims first appear."""
    said: dict[str, list] = {}
    for step_id, found in findings.items():
        for f in found:
            said.setdefault(f.claim, []).append((step_id, f))
    out = []
    for claim, pairs in said.items():
        support = Counter(f.value for _, f in pairs)
        top = max(support.values())
        tied = {v for v, n in support.items() if n == top}
        newest = {v: max(f.as_of for _, f in pairs if f.value == v) for v in tied}
        latest = max(newest.values())
        kept = [v for v in tied if newest[v] == latest]
        value = kept[0] if len(kept) == 1 else None
        cited = frozenset(s for s, f in pairs if value is None or f.value == value)
        out.append((claim, value, cited))
    return out


@grading("01.reconcile")
def more_findings(answer: Any) -> Iterator[Case]:
    cases = [
        (f"seed {seed}", _findings_case(seed), _digest(majority(_findings_case(seed)))) for seed in SEEDS
    ]
    yield _judge_generated(answer, f"{len(cases)} more generated cases", cases)


def digest_of_majority(findings: Mapping[str, Any]) -> str:
    return _digest(majority(findings))


REFERENCES = {"01.reconcile": digest_of_majority}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, findings, digest of the expected answer) each."""
    fixed = [(what, findings, _digest(_RECONCILED[what])) for what, findings in _reconcile_fixed()]
    return tuple(
        fixed + [(f"hidden case {seed}", _findings_case(seed), _GENERATED[seed]) for seed in range(40)]
    )
