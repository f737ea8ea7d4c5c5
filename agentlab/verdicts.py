"""Verdicts from paired comparisons: several at once (Holm), and "not much worse" (non-inferiority).

Two mistakes hide behind a p-value printed beside a sentence:

- Several tests in one cell, each read at 0.05: with three, the chance that at least one of
  them "wins" by luck alone is about 14% (if independent), not 5%. `holm` adjusts a family of p-values (Holm
  1979) so that the chance of any false verdict in the family stays at 5%; `family` does it for
  paired comparisons, whose verdicts then say "Holm-adjusted".
- "No measurable difference" read as "as good": with few tasks a test cannot see even a large
  gap. To keep a cheaper setup, show that it loses at most a stated margin: `non_inferior` keeps
  it when the whole interval for its difference from the best lies above -margin. A result that
  is neither measurably worse nor shown within the margin says: not enough tasks, run more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentlab.evidence import PairedAccuracy, level_text
from agentlab.valid import number


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given: the smallest p is multiplied by the number
    of tests k, the next by k - 1, and so on, each kept at least as large as the one before and at
    most 1. Reading the adjusted p's at 0.05 keeps the chance of any false "differs" in the family
    at 5% whatever the tests' dependence."""
    ps = [float(number(p, "a p-value", minimum=0, maximum=1)) for p in p_values]
    order = sorted(range(len(ps)), key=ps.__getitem__)
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def family(results: Sequence[PairedAccuracy]) -> list[PairedAccuracy]:
    """The same comparisons judged together: each with its Holm-adjusted p, which its `clear()`,
    `verdict` and printed line then use (the raw p stays beside it)."""
    results = list(results)
    if not results or not all(isinstance(r, PairedAccuracy) for r in results):
        raise ValueError("family takes a list of paired_accuracy results (one per comparison)")
    adjusted = holm([r.p_value for r in results])
    return [replace(r, family=len(results), holm_p=p) for r, p in zip(results, adjusted, strict=True)]


@dataclass(frozen=True)
class NonInferiority:
    """A candidate (A) against the best (B) on the same tasks, with the margin `margin` (a share,
    e.g. 0.05 for 5 points) of accuracy the candidate may lose and still be kept."""

    comparison: PairedAccuracy
    margin: float

    @property
    def kept(self) -> bool:
        """Non-inferior: the interval's lower end (A minus B) lies above -margin."""
        return self.comparison.interval[0] > -self.margin

    @property
    def worse(self) -> bool:
        """Measurably less accurate and not shown within the margin: drop it."""
        c = self.comparison
        return not self.kept and (c.interval[1] < -self.margin or (c.clear() and c.only_b > c.only_a))

    @property
    def verdict(self) -> str:
        c, pts = self.comparison, f"{100 * self.margin:.0f} points"
        low, high = (100 * x for x in c.interval)
        ci = f"{level_text(c.level)} CI {low:+.1f} to {high:+.1f}"
        if self.kept:
            return f"{c.a} is non-inferior to {c.b}: it loses at most {pts} ({ci}, n = {c.tasks})"
        if self.worse:
            return f"{c.a} is worse than {c.b} ({ci}, {c._p_said}, n = {c.tasks})"
        return (
            f"not enough tasks: run more ({c.a} is neither measurably worse than {c.b} nor shown "
            f"within {pts}: {ci}, n = {c.tasks})"
        )

    def __str__(self) -> str:
        return self.verdict


def non_inferior(comparison: PairedAccuracy, margin: float) -> NonInferiority:
    """Is candidate A (the comparison's first setup) not much worse than B, the best? `margin` is
    the loss in accuracy you accept for A's other merits (cost, speed), as a share: state it and
    why before looking at the data. Kept when the lower end of the interval for A minus B lies
    above -margin; with too few tasks the verdict says so."""
    if not isinstance(comparison, PairedAccuracy):
        raise ValueError("non_inferior takes a paired_accuracy result: paired_accuracy(candidate, best)")
    margin = float(number(margin, "margin", above=0, maximum=1, must_be="a share in (0, 1], e.g. 0.05"))
    return NonInferiority(comparison, margin)
