"""Evidence: is one setup better than another, on the same tasks?

When two setups answer the same tasks, every task is a pair of results. A task both get right,
or both get wrong, says nothing about which setup is better; only the tasks where they disagree
do. If the two were equally good, each disagreement would go either way with a coin's odds, so
"A alone right on 14, B alone on 5" is judged by how rarely a fair coin splits 19 tosses 14 to 5
or worse: the exact McNemar test (McNemar 1947), which is the sign test on the disagreements.
Two 95% intervals that overlap are not a test: they ignore the pairing, and two setups can
overlap and still differ clearly.

- `paired_accuracy`: right-or-wrong per task for A and B -> counts, exact McNemar p, and an exact
  95% interval for the difference in accuracy (given the number of disagreements);
- `paired_cost`: dollars (or tokens, seconds) per task for A and B -> the mean difference with a
  bootstrap interval (tasks resampled with their pairs), and a sign test on which one was cheaper
  task by task;
- `versus`: both, for two topologies of a `compare` run;
- `power` and `tasks_needed`: how many tasks it takes to see a difference of a given size;
- `seed_sweep`: the same experiment over several simulator seeds, and the spread of its numbers.

Only numpy; every random draw comes from a seeded generator, so the same inputs print the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from agentlab.valid import number

if TYPE_CHECKING:
    from agentlab.compare import Comparison

RESAMPLES = 10_000  # bootstrap resamples: the interval's ends move by well under a point between seeds
_CHUNK = 1_000  # resamples drawn at a time, so memory stays small however many tasks


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


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _level(level: float) -> float:
    return float(number(level, "level", above=0, maximum=1, must_be="a confidence level in (0, 1)"))


# --- accuracy -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedAccuracy:
    """Two setups' right-or-wrong on the same tasks: the four counts, the exact McNemar p, and the
    difference in accuracy (A minus B) with its exact interval."""

    a: str
    b: str
    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float
    interval: tuple[float, float]
    level: float = 0.95

    tasks = property(lambda self: self.both + self.only_a + self.only_b + self.neither)
    a_right = property(lambda self: self.both + self.only_a)
    b_right = property(lambda self: self.both + self.only_b)
    difference = property(lambda self: (self.only_a - self.only_b) / self.tasks)

    def clear(self, alpha: float = 0.05) -> bool:
        """Whether the difference is measurable: the exact test's p below `alpha`."""
        return self.p_value < alpha

    @property
    def verdict(self) -> str:
        """What the data show, in words a sentence can carry."""
        if not self.clear():
            return f"no measurable difference at n = {self.tasks}"
        better, worse = (self.a, self.b) if self.only_a > self.only_b else (self.b, self.a)
        return f"{better} is more accurate than {worse} ({_p_text(self.p_value)}, n = {self.tasks})"

    def __str__(self) -> str:
        low, high = (100 * x for x in self.interval)
        return (
            f"{self.a} {self.a_right} vs {self.b} {self.b_right} of {self.tasks} right; paired: "
            f"{self.only_a} only {self.a}, {self.only_b} only {self.b}, "
            f"exact McNemar {_p_text(self.p_value)}; "
            f"difference {100 * self.difference:+.1f} pts [{self.level:.0%} CI {low:+.1f} to {high:+.1f}]"
        )


def paired_accuracy(
    a_right: Sequence[bool],
    b_right: Sequence[bool],
    names: tuple[str, str] = ("A", "B"),
    *,
    level: float = 0.95,
) -> PairedAccuracy:
    """Compare two setups' right-or-wrong task by task (the i-th of each is the same task). The
    interval is exact given how many tasks the two disagree on, so it leaves out 0 exactly when
    the test's p is below 1 - level."""
    a, b = _pairs(a_right, b_right, bool)
    level = _level(level)
    cells = [int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)), int(np.sum(~a & ~b))]
    n, disagree = len(a), cells[1] + cells[2]
    # Among the disagreements, the share that went A's way has an exact (Clopper-Pearson) interval;
    # the difference in accuracy is (2 * share - 1) * disagreements / tasks.
    low, high = clopper_pearson(cells[1], disagree, level) if disagree else (0.5, 0.5)
    interval = ((2 * low - 1) * disagree / n, (2 * high - 1) * disagree / n)
    return PairedAccuracy(*names, *cells, sign_test(cells[1], cells[2]), interval, level)


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval for a binomial share: every share the two one-sided
    tests at (1 - level) / 2 do not reject. It excludes 1/2 exactly when the sign test rejects."""
    successes = number(successes, "successes", minimum=0, whole=True)
    trials = number(trials, "trials", minimum=max(1, successes), whole=True)
    tail, logf = (1 - _level(level)) / 2, _log_factorials(trials)

    def solve(too_low: Callable[[float], bool]) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(60):  # halving 60 times pins the share to float precision
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if too_low(mid) else (lo, mid)
        return (lo + hi) / 2

    at_least = lambda p: _binomial_pmf(trials, p, logf)[successes:].sum()  # noqa: E731
    at_most = lambda p: _binomial_pmf(trials, p, logf)[: successes + 1].sum()  # noqa: E731
    low = 0.0 if successes == 0 else solve(lambda p: at_least(p) < tail)
    high = 1.0 if successes == trials else solve(lambda p: at_most(p) > tail)
    return low, high


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
    with its bootstrap interval, and the sign test on which was cheaper task by task."""

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
    ratio = property(lambda self: self.mean_a / self.mean_b if self.mean_b else math.inf)

    def _amount(self, x: float, signed: bool = False) -> str:
        sign = "-" if x < 0 else "+" if signed else ""
        return sign + (f"${abs(x):,.5f}" if self.unit == "$" else f"{abs(x):,.1f} {self.unit}")

    def __str__(self) -> str:
        low, high = self.interval
        return (
            f"per task {self._amount(self.mean_a)} vs {self._amount(self.mean_b)} ({self.ratio:.2f}×); "
            f"paired: {self.a} cheaper on {self.a_cheaper}, {self.b} on {self.b_cheaper}, "
            f"sign test {_p_text(self.p_value)}; difference {self._amount(self.difference, True)} "
            f"[{self.level:.0%} CI {self._amount(low, True)} to {self._amount(high, True)}]"
        )


def paired_cost(
    a_cost: Sequence[float],
    b_cost: Sequence[float],
    names: tuple[str, str] = ("A", "B"),
    *,
    unit: str = "$",
    level: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> PairedCost:
    """Compare two setups' cost per task, task by task (`unit` "$", or e.g. "tokens", "s")."""
    a, b = _pairs(a_cost, b_cost, float)
    level, resamples = _level(level), number(resamples, "resamples", minimum=1, whole=True)
    gaps, n = a - b, len(a)
    rng, means = np.random.default_rng(seed), []
    for start in range(0, resamples, _CHUNK):
        picks = rng.integers(0, n, size=(min(_CHUNK, resamples - start), n))
        means.append(gaps[picks].mean(axis=1))
    cheaper_a, cheaper_b = int(np.sum(gaps < 0)), int(np.sum(gaps > 0))
    return PairedCost(
        *names,
        n,
        float(a.mean()),
        float(b.mean()),
        cheaper_a,
        cheaper_b,
        sign_test(cheaper_a, cheaper_b),
        _percentiles(np.concatenate(means), level),
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


def versus(comparison: Comparison, a: str, b: str, *, seed: int = 0) -> Versus:
    """The paired accuracy and cost of topologies `a` and `b` in a `compare` result."""
    for name in (a, b):
        if name not in comparison.outcomes:
            known = ", ".join(comparison.outcomes)
            raise ValueError(f"no topology {name!r} in this comparison; it has {known}")
    runs_a, runs_b = comparison.outcomes[a], comparison.outcomes[b]
    return Versus(
        paired_accuracy([o.right for o in runs_a], [o.right for o in runs_b], (a, b)),
        paired_cost([o.cost for o in runs_a], [o.cost for o in runs_b], (a, b), seed=seed),
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
