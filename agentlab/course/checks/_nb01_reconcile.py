"""The cases of 01.reconcile, and what they expect as data: the fixed cases' answers as literals,
the 40 generated cases' answers as digests (worked out by the instructor's reference in
`course/hidden/keys_nb01.py`, which never ships, and checked against it by the tests).
"""

from __future__ import annotations

import hashlib
from typing import Any

_TAMSK = "population of Tamsk"
_RECONCILED = {  # by fixed case: (claim, value or None, the steps cited) per claim, as the answer gives them
    "every worker agrees": [(_TAMSK, "410", {"s1", "s2"})],
    "two older sources outvote one newer": [(_TAMSK, "410", {"s1", "s2"})],
    "a tie in votes goes to the newer value": [(_TAMSK, "455", {"s2"})],
    "a tie in votes and in date stays open": [(_TAMSK, None, {"s1", "s2"})],
    "a tie in votes, one value also said earlier: the newest wins": [(_TAMSK, "410", {"s1", "s2"})],
    "a tie that stays open cites every step that spoke, the outvoted ones too": [
        (_TAMSK, None, {"s1", "s2", "s3"})
    ],
    "the first worker is outvoted": [(_TAMSK, "410", {"s2", "s3"})],
}
# the answers to the 40 generated cases (`_findings_case(seed)`, seed 0-39), as digests (`_digest`)
_GENERATED = """
43e7c2511ebb 82730328955f ebdfa3effa14 268bd2f0a371 b67e45037d07 727c5ba69903 76393a616781 33e89e7d6f91
3934f504d108 76a7124b9aee 7f9c7f7c1cbe 1e3c5a5edc12 557520ec28c9 6bd04d42f974 6311651c28d1 1c6c12fd7436
a8e37f942d79 ca8a9ae5565a d4a3a33d5372 84a21e55cdc4 c65a85006795 34a3da4f5524 8d2cbe84f6a3 50162bd4f03a
cc7ca5e84665 b46fe6631e66 8b6c337c55f9 8d35bda163a6 0a98ac11a69d 0e68a36870c9 2a4e3e89baf1 360a9fb59889
58079a4fd37e e12d71b8e1ec 42eb78450334 bdf9e9072c54 ddbb45654013 55a7e76b996b ca50d0440e11 7ea27cb37b95
""".split()


def _digest(rows: Any) -> str:
    """A reconciliation's rows (claim, value, cited) as a short digest: compared, never shown."""
    if isinstance(rows, str):  # a message: what went wrong
        return rows
    canonical = repr([(claim, value, tuple(sorted(cited))) for claim, value, cited in rows])
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _findings_case(seed: int) -> dict[str, list]:
    """Three to five workers reporting on three claims, with repeats, gaps and ties of date."""
    import random

    from agentlab.synthesis import Finding

    rng = random.Random(seed)
    steps = [f"s{i}" for i in range(1, rng.randint(3, 5) + 1)]
    out: dict[str, list] = {s: [] for s in steps}
    for claim in ("population of Tamsk", "governor of Solace", "area of Quillon"):
        for s in steps:
            if rng.random() < 0.85:
                value = rng.choice(["410", "455", "Maren Holt", "Tobin Vale", "73"][: rng.randint(2, 3)])
                out[s].append(Finding(claim, value, f"source {s}", rng.choice([1836, 1839, 1841])))
    return out


def _reconcile_fixed() -> list[tuple[str, dict[str, list]]]:
    from agentlab.synthesis import Finding

    def f(claim, value, year):
        return Finding(claim, value, "a source", year)

    c = "population of Tamsk"
    return [
        ("every worker agrees", {"s1": [f(c, "410", 1836)], "s2": [f(c, "410", 1841)]}),
        (
            "two older sources outvote one newer",
            {"s1": [f(c, "410", 1836)], "s2": [f(c, "410", 1836)], "s3": [f(c, "455", 1841)]},
        ),
        (
            "a tie in votes goes to the newer value",
            {"s1": [f(c, "410", 1836)], "s2": [f(c, "455", 1841)]},
        ),
        (
            "a tie in votes and in date stays open",
            {"s1": [f(c, "410", 1841)], "s2": [f(c, "455", 1841)], "s3": []},
        ),
        (
            "a tie in votes, one value also said earlier: the newest wins",
            {
                "s1": [f(c, "410", 1836)],
                "s2": [f(c, "410", 1841)],
                "s3": [f(c, "455", 1839)],
                "s4": [f(c, "455", 1839)],
            },
        ),
        (
            "a tie that stays open cites every step that spoke, the outvoted ones too",
            {"s1": [f(c, "410", 1841)], "s2": [f(c, "455", 1841)], "s3": [f(c, "73", 1836)]},
        ),
        (
            "the first worker is outvoted",
            {"s1": [f(c, "455", 1841)], "s2": [f(c, "410", 1839)], "s3": [f(c, "410", 1836)]},
        ),
    ]
