"""Experiments on reliability: how likely is a whole plan to work?

The starting point is the simplest model there is. Every step is needed, and each step succeeds
on its own, independently of the others, with its own probability. Then the plan succeeds only if
every step does, so the chances multiply: five steps at 0.9 each succeed together about 59% of
the time. Later notebooks test that model against real runs and loosen its assumptions.

It reads in four parts. (1) Exact answers: a chain of n steps, the longest chain that still
beats one agent, and what retries, an imperfect checker and majority voting do to one step.
(2) Monte Carlo simulation of chains and DAGs, with failures independent or correlated through
a shared per-task difficulty. (3) pass^k, the τ-bench measure (Yao et al. 2024, arXiv:2406.12045):
the chance that k tries at one task all succeed, which falls more slowly than p^k when some
tasks are simply harder. (4) Measurement: world chain tasks run on the simulated LLM with
errors injected, checked step by step against the records and compared with p^n.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from agentlab.agents import world_team
from agentlab.dag import above
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.run import run_plan
from agentlab.valid import number
from agentlab.world import Task, chain_task, check_answer
from agentlab.world.tasks import AttributeOf, Lookup, Name, gold_answer, parse_question, render


def plan_success(plan: Plan, p: Mapping[str, float]) -> float:
    """The chance that every step of `plan` succeeds, when step `i` succeeds independently with
    probability `p[i]`: the product of the p's."""
    return math.prod(step_probabilities(plan, p))


# --- checking inputs ---------------------------------------------------------------------


def check_probability(name: str, value: object) -> float:
    """`value` as a float, if it is a real number in [0, 1]; else a ValueError naming `name`."""
    return float(number(value, name, minimum=0, maximum=1, must_be="a probability in [0, 1]"))


def check_count(name: str, value: object, least: int = 1) -> int:
    """`value` as an int, if it is a whole number >= `least`; else a ValueError naming `name`."""
    return int(number(value, name, minimum=least, whole=True))


def step_probabilities(plan: Plan, p: Mapping[str, float]) -> list[float]:
    """`p[id]` for each step of `plan`, in written order, each checked to be a probability."""
    if missing := [step.id for step in plan if step.id not in p]:
        raise ValueError(f"no success probability for step {missing[0]!r}")
    return [check_probability(f"the success probability of step {s.id!r}", p[s.id]) for s in plan]


# --- 1. exact answers --------------------------------------------------------------------


def chain_success(p: float, n: int) -> float:
    """The chance that a chain of `n` steps, each right with probability `p` independently, is
    right end to end: p ** n."""
    return check_probability("p", p) ** check_count("n", n)


def longest_winning_chain(p: float, q: float) -> int | float:
    """The largest n for which a chain of n steps at `p` each beats one agent that succeeds with
    probability `q` (p ** n > q strictly).

    0 when even one step is no better than the single agent (p <= q), and math.inf when the
    chain never falls to q (p == 1, or q == 0).
    """
    p, q = check_probability("p", p), check_probability("q", q)
    if p <= q:
        return 0
    if p == 1 or q == 0:
        return math.inf
    n = math.floor(math.log(q) / math.log(p))
    while p ** (n + 1) > q:  # the logarithms can be off by one at an exact tie; settle it with powers
        n += 1
    while n > 0 and p**n <= q:
        n -= 1
    return n


def with_retries(p: float, attempts: int) -> float:
    """One step's chance when a failed try is noticed and redone, up to `attempts` tries in all,
    each independent: 1 - (1 - p) ** attempts."""
    return 1 - (1 - check_probability("p", p)) ** check_count("attempts", attempts)


def with_checker(p: float, attempts: int, catch: float, false_alarm: float) -> float:
    """One step's chance when a checker reviews every result and rejected ones are redone.

    Each try is right with probability `p`. The checker rejects a wrong result with probability
    `catch` and a right one with probability `false_alarm`; a rejected result is tried again, up
    to `attempts` tries in all, and then the step gives up. Per try, a right result is accepted
    with probability a = p (1 - false_alarm) and any result is rejected with probability
    r = p false_alarm + (1 - p) catch, so the step succeeds with a (1 + r + ... + r ** (attempts - 1)).

    More tries cannot lift it past a / (1 - r): the share of accepted results that are right. A
    checker that misses wrong results caps the step.
    """
    p, attempts = check_probability("p", p), check_count("attempts", attempts)
    catch, false_alarm = check_probability("catch", catch), check_probability("false_alarm", false_alarm)
    accept_right = p * (1 - false_alarm)
    reject = p * false_alarm + (1 - p) * catch
    return accept_right * sum(reject**i for i in range(attempts))


def majority_vote(p: float, voters: int) -> float:
    """The chance that a majority of `voters` independent tries, each right with probability `p`,
    is right; a tie is settled by a fair coin.

    Every wrong answer is counted as one bloc voting against the right one, which is the worst
    case: wrong answers that disagree with each other make the right one easier to pick out.
    Voting helps only when p > 0.5.
    """
    p, voters = check_probability("p", p), check_count("voters", voters)

    def exactly(k: int) -> float:  # the chance that exactly k of the voters are right
        return math.comb(voters, k) * p**k * (1 - p) ** (voters - k)

    wins = sum(exactly(k) for k in range(voters // 2 + 1, voters + 1))
    tie = exactly(voters // 2) / 2 if voters % 2 == 0 else 0.0
    return wins + tie


def correlated_chain_success(p: float, n: int, correlation: float) -> float:
    """The chance that a chain of `n` steps succeeds when tasks differ in difficulty.

    Each task draws its own step success rate from a Beta distribution with mean `p`; its steps
    then succeed independently at that rate, so two steps of one task have outcomes correlated by
    `correlation` (0: every task alike, back to p ** n; 1: a task's steps all succeed or all
    fail, so p for any n). The answer is the mean of rate ** n over tasks, a Beta moment:
    p times the product over i = 1 .. n-1 of (p k + i) / (k + i), k = 1/correlation - 1.
    """
    p, n = check_probability("p", p), check_count("n", n)
    correlation = check_probability("correlation", correlation)
    if correlation == 0:
        return p**n
    k = 1 / correlation - 1
    return p * math.prod((p * k + i) / (k + i) for i in range(1, n))


# --- 2. simulation -----------------------------------------------------------------------

Z95 = 1.959963984540054  # the normal quantile that leaves 2.5% in each tail
BATCH = 1 << 16  # runs simulated at a time, so memory stays small however many trials


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a success rate (95% with the default z).

    Unlike the textbook p ± z sqrt(p(1-p)/n), it stays inside [0, 1] and does not shrink to a
    single point when every trial succeeds, or none does.
    """
    trials, successes = check_count("trials", trials), check_count("successes", successes, least=0)
    if successes > trials:
        raise ValueError(f"successes ({successes}) cannot exceed trials ({trials})")
    rate = successes / trials
    scale = 1 + z**2 / trials
    centre = (rate + z**2 / (2 * trials)) / scale
    half = z / scale * math.sqrt(rate * (1 - rate) / trials + z**2 / (4 * trials**2))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Estimate:
    """A success rate measured by simulation (or by real runs): successes out of trials."""

    successes: int
    trials: int

    @property
    def value(self) -> float:
        return self.successes / self.trials

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval around `value`."""
        return wilson_interval(self.successes, self.trials)

    def covers(self, probability: float) -> bool:
        """Whether `probability` lies inside the 95% interval."""
        low, high = self.interval
        return low <= probability <= high

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.value:.4f} (95% interval {low:.4f} to {high:.4f}, {self.trials:,} trials)"


def task_rates(p: float, correlation: float, runs: int, rng: np.random.Generator) -> np.ndarray:
    """One step success rate per run (task): Beta with mean `p` whose spread makes two steps of one
    run correlate by `correlation`; just `p` for every run when it is 0."""
    if correlation == 0 or p in (0, 1):
        return np.full(runs, p)
    if correlation == 1:  # the Beta's limit: each run is all right (rate 1) or all wrong (rate 0)
        return (rng.random(runs) < p).astype(float)
    k = 1 / correlation - 1  # the Beta's a + b; its mean is a / (a + b) = p
    return rng.beta(p * k, (1 - p) * k, runs)


def draw_outcomes(
    p: float | np.ndarray, runs: int, steps: int, correlation: float, rng: np.random.Generator
) -> np.ndarray:
    """A runs x steps array of booleans, True where a step went right. `p` is one probability for
    every step, or (for independent failures only) one per step."""
    rate = np.asarray(p) if correlation == 0 else task_rates(float(p), correlation, runs, rng)[:, None]
    return rng.random((runs, steps)) < rate  # a rate per column, or one per row shared by its steps


def chains_right(p: float, runs: int, steps: int, correlation: float, rng: np.random.Generator) -> np.ndarray:
    """`runs` booleans, True where a chain of `steps` steps at `p` went right. A chain is wrong from
    its first wrong step on, whose number is geometric: one draw a chain, not one a step."""
    rate = np.float64(p) if correlation == 0 else task_rates(p, correlation, runs, rng)
    wrong = 1 - rate
    if not np.any(wrong):  # certain steps (rng.geometric refuses 0)
        return np.ones(runs, bool)
    return rng.geometric(np.where(wrong > 0, wrong, 1.0), runs) > np.where(wrong > 0, steps, -1)


def simulate_chain(
    p: float, n: int, trials: int = 100_000, *, correlation: float = 0.0, seed: int = 0
) -> Estimate:
    """Run `trials` chains of `n` steps at `p` each and count those that went right end to end:
    `simulate_plan` on the simplest plan there is."""
    p, n = check_probability("p", p), check_count("n", n)
    return simulate_plan(chain_plan(["a step"] * n), p, trials, correlation=correlation, seed=seed)


def simulate_plan(
    plan: Plan, p: float | Mapping, trials: int = 100_000, *, correlation: float = 0.0, seed: int = 0
) -> Estimate:
    """Run `plan` `trials` times with random step failures; count the runs whose deliverable is right.

    A failure here is a wrong result, and it flows downstream: a step's output is right only if
    the step went right and so did every output it was given. So the deliverable (the final step)
    needs exactly the steps upstream of it; a side step that nothing downstream reads cannot spoil
    it. `p` is one probability for every step, or a mapping from step id to probability. With
    `correlation` > 0 each run draws its own difficulty first (see `task_rates`), as real tasks
    do. The same seed always gives the same count.
    """
    probs = step_probabilities(plan, p) if isinstance(p, Mapping) else [check_probability("p", p)] * len(plan)
    trials, correlation = check_count("trials", trials), check_probability("correlation", correlation)
    if correlation > 0 and len(set(probs)) > 1:
        raise ValueError("correlated failures need one success probability shared by every step")
    upstream = above(plan.steps, plan.final_step.id) | {plan.final_step.id}
    each = [q for q, step in zip(probs, plan, strict=True) if step.id in upstream]  # what it needs
    rng, successes = np.random.default_rng(seed), 0
    for start in range(0, trials, BATCH):
        runs = min(BATCH, trials - start)
        if len(set(each)) == 1:  # the needed steps at one p: a chain, whatever order they run in
            right = chains_right(each[0], runs, len(each), correlation, rng)
        else:
            right = draw_outcomes(np.array(each), runs, len(each), 0.0, rng).all(axis=1)
        successes += int(right.sum())
    return Estimate(successes, trials)


def chain_plan(instructions: Sequence[str]) -> Plan:
    """A researcher step per instruction, s1, s2, ..., each depending on the one before."""
    return Plan(
        Step(f"s{i}", "researcher", text, depends_on=(f"s{i - 1}",) if i > 1 else ())
        for i, text in enumerate(instructions, start=1)
    )


def chain_band(
    p: float, n: int, runs: int, *, experiments: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Where the success rate of `runs` chains of `n` steps at `p` lands 95% of the time.

    Simulates the whole experiment (`runs` chains) `experiments` times and returns the 2.5th and
    97.5th percentiles of its success rate. A measured rate outside this band is unlikely if
    every chain really succeeds with p ** n.
    """
    p, n, runs = check_probability("p", p), check_count("n", n), check_count("runs", runs)
    experiments = check_count("experiments", experiments)
    rng = np.random.default_rng(seed)
    per_batch = max(1, BATCH // runs)  # whole experiments in each batch of chains
    rates = []
    for start in range(0, experiments, per_batch):
        size = min(per_batch, experiments - start)
        right = chains_right(p, size * runs, n, 0.0, rng)
        rates.append(right.reshape(size, runs).mean(axis=1))
    low, high = np.quantile(np.concatenate(rates), [0.025, 0.975])
    return float(low), float(high)


# --- 3. pass^k ---------------------------------------------------------------------------


def simulate_attempts(
    p: float, tasks: int, attempts: int, *, correlation: float = 0.0, seed: int = 0
) -> np.ndarray:
    """Outcomes of `attempts` independent tries at each of `tasks` tasks: a tasks x attempts
    boolean array. With `correlation` > 0, tasks differ in difficulty (see `task_rates`)."""
    p, correlation = check_probability("p", p), check_probability("correlation", correlation)
    tasks, attempts = check_count("tasks", tasks), check_count("attempts", attempts)
    return draw_outcomes(p, tasks, attempts, correlation, np.random.default_rng(seed))


def pass_hat_k(outcomes: np.ndarray, k: int) -> float:
    """τ-bench's pass^k: the chance that k tries at the same task all succeed. `outcomes` holds
    n >= k tries per task (a row per task); with c successes among n, C(c, k) / C(n, k) is an
    unbiased estimate of that task's pass^k; the answer is the mean over tasks."""
    outcomes = np.asarray(outcomes)
    if outcomes.ndim != 2 or outcomes.shape[0] == 0 or outcomes.dtype != bool:
        raise ValueError(f"outcomes must be a tasks x tries array of booleans, got shape {outcomes.shape}")
    k, tries = check_count("k", k), outcomes.shape[1]
    if k > tries:
        raise ValueError(f"pass^{k} needs at least {k} tries per task, got {tries}")
    return float(np.mean([math.comb(int(c), k) for c in outcomes.sum(axis=1)]) / math.comb(tries, k))


# --- 4. measurement ----------------------------------------------------------------------


def hop_plan(task: Task) -> tuple[Plan, list[str]]:
    """The plan a careful planner writes for a chain task, and the right output of each step (the
    records' answer to its part): one researcher step per hop, innermost first, each after the
    first asking about the previous step's answer (`$s1`, `$s2`, ...), so a wrong answer flows on."""
    if task.family not in ("chain", "single"):
        raise ValueError(f"hop_plan needs a chain (or single) task, got a {task.family!r} task")
    hops, phrase = [], parse_question(task.question).phrase
    while isinstance(phrase, AttributeOf):  # "the a of the b of X": the b of X first, then its a
        hops.insert(0, phrase)
        phrase = phrase.of
    questions = []
    for i, hop in enumerate(hops):  # the first asks about X, each later one about the answer before it
        subject = f"$s{i}" if i else phrase.text
        questions.append(render(Lookup(AttributeOf(hop.attribute, Name(subject)))))
    return chain_plan(questions), [gold_answer(Lookup(hop)) for hop in hops]


@dataclass(frozen=True)
class ChainMeasurement:
    """What real chains of `n` steps did. `answered` counts runs whose final answer was right;
    `flawless` those whose every step was right (a wrong turn can, rarely, lead back to the right
    answer). A step counts in `step` only if it was handed right inputs (the first step always
    is), and succeeds if its own output was right: the per-step p of the law."""

    n: int
    answered: Estimate
    flawless: Estimate
    step: Estimate
    calls: int  # model calls made in all


def measure_chains(
    lengths: Iterable[int] = (1, 2, 3, 4, 6, 8),
    runs: int = 100,
    *,
    error_rate: float = 0.1,
    seed: int = 0,
    model: str = "sim-large",
) -> list[ChainMeasurement]:
    """Run `runs` world chain tasks of each length through a researcher team on the simulated LLM,
    with errors injected at `error_rate` per model call, and check every step. Each run gets a fresh
    task and its own simulator seed (runs sharing a seed would share their mistakes)."""
    lengths = [check_count("chain length", n) for n in lengths]
    if not lengths:
        raise ValueError("measure_chains needs at least one chain length")
    runs, error_rate = check_count("runs", runs), check_probability("error_rate", error_rate)
    rng = random.Random(seed)
    return [measure_chain(n, runs, rng, error_rate, model) for n in lengths]


def measure_chain(n: int, runs: int, rng: random.Random, error_rate: float, model: str) -> ChainMeasurement:
    """Run `runs` fresh chain tasks of `n` hops, each with its own simulator seed, and check them."""
    answered = flawless = steps_tried = steps_right = calls = 0
    for _ in range(runs):
        task = chain_task(rng, n)
        plan, right = hop_plan(task)
        llm = SimulatedLLM(seed=rng.randrange(2**32), error_rate=error_rate, model=model)
        run = run_plan(plan, world_team(llm), task.question)  # one step at a time, in place
        calls += len(run.calls)
        answered += task.check(run.deliverable)
        for step, expected in zip(plan, right, strict=True):
            steps_tried += 1
            if not check_answer(run.outputs.get(step.id), expected):
                break  # the steps after this one were handed a wrong input
            steps_right += 1
        else:
            flawless += 1
    step = Estimate(steps_right, steps_tried)
    return ChainMeasurement(n, Estimate(answered, runs), Estimate(flawless, runs), step, calls)


def pooled_step(measured: Iterable[ChainMeasurement]) -> Estimate:
    """The per-step success over every measured length: one p for the law."""
    measured = list(measured)
    return Estimate(sum(m.step.successes for m in measured), sum(m.step.trials for m in measured))
