"""Experiments on reliability: how likely is a whole plan to work?

The starting point is the simplest model there is. Every step is needed, and
each step succeeds on its own, independently of the others, with its own
probability. Then the plan succeeds only if every step does, so the chances
multiply: five steps at 0.9 each succeed together about 59% of the time.
Later notebooks test that model against real runs and loosen its assumptions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from agentlab.plan import Plan


def plan_success(plan: Plan, p: Mapping[str, float]) -> float:
    """The chance that every step of `plan` succeeds, when step `i` succeeds
    independently with probability `p[i]`: the product of the p's."""
    for step in plan:
        if step.id not in p:
            raise ValueError(f"no success probability for step {step.id!r}")
        value = p[step.id]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ValueError(f"the success probability of step {step.id!r} must be in [0, 1], got {value!r}")
    return math.prod(p[step.id] for step in plan)
