"""Evidence: is one setup better than another, on the same tasks?

When two setups answer the same tasks, every task is a pair of results. A task both get right,
or both get wrong, says nothing about which setup is better; only the tasks where they disagree
do. If the two were equally good, each disagreement would go either way with a coin's odds, so
"A alone right on 14, B alone on 5" is judged by how rarely a fair coin splits 19 tosses 14 to 5
or worse: the exact McNemar test (McNemar 1947), which is the sign test on the disagreements.
Two 95% intervals that overlap are not a test: they ignore the pairing, and two setups can
overlap and still differ clearly.

- `paired_accuracy`: right-or-wrong per task for A and B -> counts, exact McNemar p, and a 95%
  interval for the difference in accuracy (Tango's score interval, agentlab.intervals);
- `paired_cost`: dollars (or tokens, seconds) per task for A and B -> the mean difference with
  Student's t interval on the per-task differences, and a sign test on which one was cheaper
  task by task;
- `versus`: both, for two topologies of a `compare` run;
- `power` and `tasks_needed`: how many tasks it takes to see a difference of a given size;
- `seed_sweep`: the same experiment over several simulator seeds, and the spread of its numbers.

Judging several comparisons at once (Holm) and keeping a cheaper setup only when it is shown not
much worse (non-inferiority) are in agentlab.verdicts. Only numpy: the same inputs print the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from agentlab.intervals import mean_interval, paired_difference
from agentlab.valid import number

if TYPE_CHECKING:
    from agentlab.compare import Comparison


# --- the exact test -------------------------------------------------------------------------------


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1)))))


def _binomial_pmf(m: int, p: float, logf: np.ndarray | None = None) -> np.ndarray:
    """P(X = k) for k = 0..m, X ~ Binomial(m, p); exact to float precision, for any m."""
    logf = _log_factorials(m) if logf is None else logf
    k = np.arange(m + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        heads = np.where(k > 0, k * np.log(p), 0.0)
        tails = np.where(m - k > 0, (m - k) * np.log1p(-p), 0.0)
    return np.exp(logf[m] - logf[k] - logf[m - k] + heads + tails)


def sign_test(wins: int, losses: int) -> float:
    """The exact two-sided sign test: how likely a fair coin, tossed wins + losses times, comes out
    at least this lopsided. On the tasks two setups disagree on, this is the exact McNemar test."""
    wins = number(wins, "wins", minimum=0, whole=True)
    losses = number(losses, "losses", minimum=0, whole=True)
    m = wins + losses
    if m == 0:
        return 1.0
    tail = float(_binomial_pmf(m, 0.5)[: min(wins, losses) + 1].sum())
    return min(1.0, 2 * tail)


def _p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def level_text(level: float) -> str:
    """A confidence level as a reader writes it: 0.95 -> "95%", 0.975 -> "97.5%"."""
    return f"{100 * level:.4g}%"


def _level(level: float) -> float:
    return float(number(level, "level", above=0, maximum=1, must_be="a confidence level in (0, 1)"))


# --- accuracy -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedAccuracy:
    """Two setups' right-or-wrong on the same tasks: the four counts, the exact McNemar p, and the
    difference in accuracy (A minus B) with its interval. Judged in a family of `family` tests,
    `holm_p` is its Holm-adjusted p (agentlab.verdicts.family), and the verdict rests on it."""

    a: str
    b: str
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float
    interval: tuple[float, float]
    level: float = 0.95
    family: int = 1
    holm_p: float | None = None

    tasks = property(lambda self: self.both + self.only_a + self.only_b + self.neither)
    a_right = property(lambda self: self.both + self.only_a)
    b_right = property(lambda self: self.both + self.only_b)
    difference = property(lambda self: (self.only_a - self.only_b) / self.tasks)

    @property
    def p(self) -> float:
        """The p the verdict rests on: Holm-adjusted when judged in a family, else the test's own."""
        return self.p_value if self.holm_p is None else self.holm_p

    def clear(self, alpha: float = 0.05) -> bool:
        """Whether the difference is measurable: the exact test's p (adjusted in a family) below `alpha`."""
        return self.p < alpha

    @property
    def _p_said(self) -> str:
        if self.holm_p is None:
            return _p_text(self.p_value)
        return f"Holm-adjusted {_p_text(self.holm_p)} over {self.family} tests"

    @property
    def verdict(self) -> str:
        """What the data show, in words a sentence can carry."""
        if not self.clear():
            family = f", Holm-adjusted over {self.family} tests" if self.holm_p is not None else ""
            return f"no measurable difference at n = {self.tasks}{family}"
        better, worse = (self.a, self.b) if self.only_a > self.only_b else (self.b, self.a)
        return f"{better} is more accurate than {worse} ({self._p_said}, n = {self.tasks})"

    def __str__(self) -> str:
        low, high = (100 * x for x in self.interval)
        ci = f"{level_text(self.level)} CI {low:+.1f} to {high:+.1f}"
        holm = "" if self.holm_p is None else f" (Holm, {self.family} tests: {_p_text(self.holm_p)})"
        return (
            f"{self.a} {self.a_right} vs {self.b} {self.b_right} of {self.tasks} right; paired: "
            f"{self.only_a} only {self.a}, {self.only_b} only {self.b}, "
            f"exact McNemar {_p_text(self.p_value)}{holm}; "
            f"difference {100 * self.difference:+.1f} pts [{ci}]"
        )


def paired_accuracy(
    a_right: Sequence[bool],
    b_right: Sequence[bool],
    names: tuple[str, str] = ("A", "B"),
    *,
    level: float = 0.95,
) -> PairedAccuracy:
    """Compare two setups' right-or-wrong task by task (the i-th of each is the same task).

    Two numbers answer two questions. The exact McNemar p asks whether the two differ at all: how
    often two equally good setups would split their disagreements this unevenly. The interval
    says by how much: Tango's score interval (1998) for the difference in accuracy, with the
    n / (n - 1) small-sample correction (agentlab.intervals.paired_difference), which treats every
    count as random, so it has a width even when the two never disagree. At a nominal 95% it
    covers the true difference in 93% or more of batches across the settings
    tests/test_intervals.py simulates (n 20 to 400, agreement rates 0% to 100%) and, counted
    exactly, at every point of a 0.1 grid at ten sizes from 20 to 200 tasks; counts are whole
    numbers, so at some finer settings it dips lower (92.5% at 20 tasks when the true difference
    is 95 points). The two numbers answer different questions, so they can disagree at the edge:
    an interval just excluding 0 with p just above `alpha`, or the reverse."""
    a, b = _pairs(a_right, b_right, bool)
    level = _level(level)
    cells = [int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)), int(np.sum(~a & ~b))]
    low, high = paired_difference(*cells, level)
    return PairedAccuracy(*names, *cells, sign_test(cells[1], cells[2]), (float(low), float(high)), level)


def _pairs(a: Sequence, b: Sequence, kind: type) -> tuple[np.ndarray, np.ndarray]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"a paired comparison needs one result per task from each: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("a paired comparison needs at least one task")
    if kind is bool:
        if bad := [x for x in a + b if not isinstance(x, bool | np.bool_)]:
            raise ValueError(f"right-or-wrong results must be True or False, got {bad[0]!r}")
        return np.array(a, dtype=bool), np.array(b, dtype=bool)
    for x in a + b:
        number(x, "a per-task value")
    return np.array(a, dtype=float), np.array(b, dtype=float)


# --- cost (or tokens, or seconds) -----------------------------------------------------------------


@dataclass(frozen=True)
class PairedCost:
    """Two setups' cost per task on the same tasks: the means, the mean difference (A minus B)
    with its t interval, and the sign test on which was cheaper task by task."""

    a: str
    b: str
    tasks: int
    mean_a: float
    mean_b: float
    a_cheaper: int
    b_cheaper: int
    p_value: float
    interval: tuple[float, float]
    unit: str = "$"
    level: float = 0.95

    difference = property(lambda self: self.mean_a - self.mean_b)
    lower = property(lambda self: {"$": "cheaper", "s": "faster"}.get(self.unit, "lower"))  # on a task
    ratio = property(lambda self: self.mean_a / self.mean_b if self.mean_b else math.inf)

    def _amount(self, x: float, signed: bool = False) -> str:
        sign = "-" if x < 0 else "+" if signed else ""
        return sign + (f"${abs(x):,.5f}" if self.unit == "$" else f"{abs(x):,.1f} {self.unit}")

    def __str__(self) -> str:
        low, high = self.interval
        return (
            f"per task {self._amount(self.mean_a)} vs {self._amount(self.mean_b)} ({self.ratio:.2f}×); "
            f"paired: {self.a} {self.lower} on {self.a_cheaper}, {self.b} on {self.b_cheaper}, "
            f"sign test {_p_text(self.p_value)}; difference {self._amount(self.difference, True)} "
            f"[{level_text(self.level)} CI {self._amount(low, True)} to {self._amount(high, True)}]"
        )


def paired_cost(
    a_cost: Sequence[float],
    b_cost: Sequence[float],
    names: tuple[str, str] = ("A", "B"),
    *,
    unit: str = "$",
    level: float = 0.95,
) -> PairedCost:
    """Compare two setups' cost per task, task by task (`unit` "$", or e.g. "tokens", "s").

    The interval is Student's t on the per-task differences: costs are skewed (a few long tasks
    cost much more), and on skewed paired costs this covers the true mean difference in 93% or
    more of batches from 20 tasks up, where the bootstrap's percentiles covered 91% at 20 tasks
    (tests/test_intervals.py measures both)."""
    a, b = _pairs(a_cost, b_cost, float)
    level = _level(level)
    gaps = a - b
    cheaper_a, cheaper_b = int(np.sum(gaps < 0)), int(np.sum(gaps > 0))
    return PairedCost(
        *names,
        len(a),
        float(a.mean()),
        float(b.mean()),
        cheaper_a,
        cheaper_b,
        sign_test(cheaper_a, cheaper_b),
        mean_interval(gaps, level),
        unit,
        level,
    )


@dataclass(frozen=True)
class Versus:
    """Two topologies of one comparison, side by side: accuracy and cost, each paired."""

    accuracy: PairedAccuracy
    cost: PairedCost

    def __str__(self) -> str:
        return f"{self.accuracy}\n{self.cost}"


def versus(comparison: Comparison, a: str, b: str) -> Versus:
    """The paired accuracy and cost of topologies `a` and `b` in a `compare` result."""
    for name in (a, b):
        if name not in comparison.outcomes:
            known = ", ".join(comparison.outcomes)
            raise ValueError(f"no topology {name!r} in this comparison; it has {known}")
    runs_a, runs_b = comparison.outcomes[a], comparison.outcomes[b]
    return Versus(
        paired_accuracy([o.right for o in runs_a], [o.right for o in runs_b], (a, b)),
        paired_cost([o.cost for o in runs_a], [o.cost for o in runs_b], (a, b)),
    )


# --- how many tasks -------------------------------------------------------------------------------


def _effect(difference: float, discordance: float) -> tuple[float, float]:
    discordance = float(number(discordance, "discordance", above=0, maximum=1, must_be="a share in (0, 1]"))
    difference = float(number(difference, "difference", above=0, maximum=1, must_be="a share in (0, 1]"))
    if difference > discordance:
        raise ValueError(
            f"a difference of {difference:.0%} needs at least that share of tasks on which the two disagree, "
            f"got a discordance of {discordance:.0%}"
        )
    return difference, discordance


def power(tasks: int, difference: float, discordance: float, alpha: float = 0.05) -> float:
    """The chance that the exact McNemar test at `alpha` detects a true difference in accuracy of
    `difference`, on `tasks` tasks of which a share `discordance` split the two setups.

    Exact: the number of disagreements is binomial, and each disagreement goes A's way with
    probability (discordance + difference) / (2 discordance)."""
    tasks = number(tasks, "tasks", minimum=1, whole=True)
    difference, discordance = _effect(difference, discordance)
    alpha = float(number(alpha, "alpha", above=0, maximum=1, must_be="a level in (0, 1)"))
    toward_a = (discordance + difference) / (2 * discordance)
    logf = _log_factorials(tasks)
    split = _binomial_pmf(tasks, discordance, logf)
    total = 0.0
    for m in np.flatnonzero(split > 1e-15):  # counts of disagreements that can happen
        m = int(m)
        if m == 0:
            continue
        fair = np.cumsum(_binomial_pmf(m, 0.5, logf))
        # the last k with 2 F(k) <= alpha: the test rejects at k or fewer, and at m - k or more
        low = int(np.searchsorted(2 * fair, alpha * (1 + 1e-12), side="right")) - 1
        if low < 0:
            continue  # too few disagreements for any split to reach alpha
        ways = _binomial_pmf(m, toward_a, logf)
        total += split[m] * float(ways[: low + 1].sum() + ways[m - low :].sum())
    return total


def tasks_needed(difference: float, discordance: float, power: float = 0.8, alpha: float = 0.05) -> int:
    """Tasks needed for a paired test at `alpha` to see a difference in accuracy of `difference`
    with chance `power`, when a share `discordance` of tasks split the two setups (Connor 1987:
    n = (z_a sqrt(d) + z_b sqrt(d - diff^2))^2 / diff^2, rounded up). That is the normal
    approximation; the exact test is a little conservative, so `power` at this n comes out a
    point or two short of the target."""
    difference, discordance = _effect(difference, discordance)
    power = float(number(power, "power", above=0, maximum=1, must_be="a chance in (0, 1)"))
    alpha = float(number(alpha, "alpha", above=0, maximum=1, must_be="a level in (0, 1)"))
    z_alpha, z_power = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(power)
    root = z_alpha * math.sqrt(discordance) + z_power * math.sqrt(discordance - difference**2)
    return math.ceil(root**2 / difference**2 - 1e-9)


# --- the same experiment over several seeds -------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """One number measured once per seed: its values, and their mean, standard deviation and range."""

    name: str
    seeds: tuple[int, ...]
    values: tuple[float, ...]

    mean = property(lambda self: float(np.mean(self.values)))
    sd = property(lambda self: float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0)
    low = property(lambda self: min(self.values))
    high = property(lambda self: max(self.values))

    def __str__(self) -> str:
        return (
            f"{self.name}: mean {self.mean:.4g}, sd {self.sd:.2g}, from {self.low:.4g} to {self.high:.4g} "
            f"over {len(self.seeds)} seeds"
        )


@dataclass(frozen=True)
class SeedSweep:
    """The spreads of every number an experiment returned, one value per seed."""

    spreads: dict[str, Spread]

    def __getitem__(self, name: str) -> Spread:
        return self.spreads[name]

    def __str__(self) -> str:
        return "\n".join(str(s) for s in self.spreads.values())


def seed_sweep(experiment: Callable[[int], float | Mapping[str, float]], seeds: Iterable[int]) -> SeedSweep:
    """Run `experiment(seed)` for each seed; it returns a number, or a dict of named numbers (e.g.
    each topology's accuracy). A result that holds for one seed only is luck; its spread says."""
    seeds = tuple(number(s, "a seed", whole=True) for s in seeds)
    if not seeds:
        raise ValueError("seed_sweep needs at least one seed")
    values: dict[str, list[float]] = {}
    for seed in seeds:
        got = experiment(seed)
        named = got if isinstance(got, Mapping) else {"value": got}
        if values and set(named) != set(values):
            raise ValueError(f"seed {seed} returned {sorted(named)}, the first seed {sorted(values)}")
        for name, value in named.items():
            values.setdefault(name, []).append(float(number(value, f"{name!r} at seed {seed}")))
    return SeedSweep({name: Spread(name, seeds, tuple(v)) for name, v in values.items()})
