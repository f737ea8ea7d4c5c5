"""Notebook 07's keys: the token prediction and the router share, worked out, for the grader's cases.

The feedback checks (`checks/nb07.py`) carry the expected values of their visible cases as data;
the answers that work them out live here, with the instructor, never in the release. The grader
adds cases the visible ones do not try: an answer that looks the visible ones up fails them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from agentlab.course.checks import Case, nb07
from agentlab.course.checks.nb07 import _WEAK_IS_BETTER, _judge_react_tokens, _judge_router_share, _run
from agentlab.course.hidden import grading
from agentlab.react import ReactRun
from agentlab.routing import ROUTELLM_GSM8K, PairCounts

SEED = 7  # change it to draw other runs and targets for a class


def quadratic_tokens(run: ReactRun, n: int) -> float:
    """n*B + g*n*(n-1)/2, with B the first call's input tokens and g the mean growth per call."""
    inputs = [turn.input_tokens for turn in run.turns]
    first = inputs[0]
    growth = (inputs[-1] - first) / (len(inputs) - 1) if len(inputs) > 1 else 0.0
    return n * first + growth * n * (n - 1) / 2


def share_needed(counts: PairCounts, target: float, router: str) -> float | None:
    """The least share of queries on the strong model with which `router` reaches `target`."""
    weak_right = counts.both + counts.only_weak
    if target <= counts.weak_accuracy:
        return 0.0
    if router == "coin":
        if target > counts.strong_accuracy:
            return None
        return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)
    if target > counts.perfect_accuracy:
        return None
    return (target * counts.total - weak_right) / counts.total


@grading("07.react-tokens")
def more_runs(predict: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    for _ in range(5):
        inputs = [rng.randint(200, 900)]
        for _ in range(rng.randint(0, 6)):
            inputs.append(inputs[-1] + rng.randint(0, 250))
        run, n = _run(*inputs), rng.randint(1, 30)
        what = f"a run of {len(inputs)} calls reading {inputs} tokens, predicting {n} calls"
        yield _judge_react_tokens(predict, what, run, n, quadratic_tokens(run, n))


@grading("07.router-share")
def more_targets(strong_share: Any) -> Iterator[Case]:
    rng = random.Random(SEED + 1)
    for counts in (
        ROUTELLM_GSM8K,
        _WEAK_IS_BETTER,
        PairCounts(both=30, only_strong=40, only_weak=10, neither=20),
    ):
        for router in ("coin", "perfect"):
            target = round(rng.uniform(0.3, 0.99), 3)
            what = f"{counts}, a {router} router, to {target:.1%}"
            yield _judge_router_share(
                strong_share, what, counts, target, router, share_needed(counts, target, router)
            )


REFERENCES = {"07.react-tokens": quadratic_tokens, "07.router-share": share_needed}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return {"07.react-tokens": nb07._react_cases(), "07.router-share": nb07._ROUTER_CASES}[exercise]
