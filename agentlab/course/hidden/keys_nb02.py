"""Notebook 02's keys: a plan written longest chain first, for the grader's own cases.

The feedback check of 02.longest-first (`checks/nb02.py`) carries, for each visible case, the
finish the longest-chain-first order reaches, as data; the rewrite that reaches it lives here,
with the instructor, never in the release. The grader adds plans drawn from `SEED`.
(02.critical-path and 02.makespan need no key here: their references are the kit's own helpers,
which those exercises forbid and the grader's sandbox lacks.)
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.checks.nb02 import _BETTER, _NO_WORSE, _durations_of, _judge_rewrite, _plan_of, _span
from agentlab.course.hidden import grading
from agentlab.plan import Plan

SEED = 2  # change it to draw other plans for a class


def highest_level_first(plan: Plan, durations: Mapping[str, float]) -> Plan:
    """The plan written by each step's level (its duration plus the longest chain waiting for it)."""
    waiting, level = {s.id: [] for s in plan}, {}
    for step in plan:
        for dependency in step.depends_on:
            waiting[dependency].append(step.id)
    for step in reversed(plan.topological_order()):
        level[step.id] = durations[step.id] + max((level[w] for w in waiting[step.id]), default=0.0)
    return Plan(sorted(plan.steps, key=lambda s: -level[s.id]))


def best_finish(plan: Plan, workers: int) -> float:
    """The finish of `plan` written longest chain first, on `workers` workers."""
    return _span(highest_level_first(plan, _durations_of(plan)), workers)


@grading("02.longest-first")
def more_plans(rewrite: Any) -> Iterator[Case]:
    rng = random.Random(SEED)
    for k in range(4):
        specs = []
        for i in range(rng.randint(4, 8)):
            deps = tuple(f"s{j}" for j in range(i) if rng.random() < 0.3)
            specs.append((f"s{i}", rng.choice([1, 2, 3, 5]), deps))
        plan, workers = _plan_of(*specs), rng.randint(2, 3)
        best = best_finish(plan, workers)
        what = f"a drawn plan {k + 1} of {len(specs)} steps on {workers} workers"
        yield _judge_rewrite(rewrite, what, plan, workers, best, best < _span(plan, workers))


REFERENCES = {"02.longest-first": best_finish}


def visible(exercise: str) -> tuple:
    """The feedback's own cases of `exercise`, (what, *inputs, expected) each."""
    return _BETTER + _NO_WORSE
