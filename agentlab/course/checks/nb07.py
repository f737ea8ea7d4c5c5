"""Checks for the exercises of notebook 07, one agent or a team.

- `07.react-tokens`: predict what an n-call ReAct loop reads from one measured run;
- `07.router-share`: the share of queries a coin or a perfect router must send to the strong model
  to reach a target accuracy, from the four pair counts;
- `07.pick`: choose a topology from a measured comparison: cheapest among the measurably best;
- `07.shapes`: which topology for which shape of task (a structured answer).

The runs behind the hidden cases are made here, on the simulated LLM, so they are the same every time.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterator, Mapping

from agentlab import world
from agentlab.checks import Case, attempt, exercise
from agentlab.compare import Comparison, Setup, compare
from agentlab.experiments import wilson_interval
from agentlab.llm import SimulatedLLM
from agentlab.react import ReactRun, react
from agentlab.routing import ROUTELLM_GSM8K, PairCounts

# --- 07.react-tokens -----------------------------------------------------------------------------


def quadratic_tokens(run: ReactRun, n: int) -> float:
    """n*B + g*n*(n-1)/2, with B the first call's input tokens and g the mean growth per call."""
    inputs = [turn.input_tokens for turn in run.turns]
    first = inputs[0]
    growth = (inputs[-1] - first) / (len(inputs) - 1) if len(inputs) > 1 else 0.0
    return n * first + growth * n * (n - 1) / 2


def measured_input(run: ReactRun) -> int:
    return sum(turn.input_tokens for turn in run.turns)


@exercise(
    "07.react-tokens",
    "Predict a ReAct loop's input tokens",
    hint="call t reads B + g*(t - 1) tokens, so n calls read n*B + g*n*(n - 1)/2 (not g*n²/2); g is the "
    "growth from the first call to the last divided by the calls in between, and 0 for a one-call run",
)
def react_tokens(predict: Callable[[ReactRun, int], float]) -> Iterator[Case]:
    llm = SimulatedLLM(seed=0)
    four_hops = react(world.chain_task(random.Random(7), 4).question, llm)
    two_hops = react(world.chain_task(random.Random(3), 2).question, llm)
    ten_hops = react(world.chain_task(random.Random(103), 10).question, llm)
    one_call = react(world.chain_task(random.Random(7), 4).question, llm, max_steps=1)
    cases = (
        ("notebook 07's 4-hop run, at its own 5 calls", four_hops, len(four_hops.turns)),
        ("the same run, predicting 12 calls", four_hops, 12),
        ("a 2-hop run, predicting 11 calls", two_hops, 11),
        ("a run stopped after one call, predicting 4 calls", one_call, 4),
    )
    for what, run, n in cases:
        want = quadratic_tokens(run, n)
        got, error = attempt(predict, run, n)
        right = not error and isinstance(got, int | float) and math.isclose(got, want, rel_tol=0.005)
        yield Case(f"{what} → {want:,.0f} tokens", right, error or f"got {got!r}")
    calls = len(ten_hops.turns)
    got, error = attempt(predict, two_hops, calls)
    actual = measured_input(ten_hops)
    close = not error and isinstance(got, int | float) and abs(got - actual) <= 0.1 * actual
    yield Case(
        f"from the 2-hop run, a real 10-hop run ({calls} calls, {actual:,} tokens) within 10%",
        close,
        error or f"predicted {got!r}",
    )


# --- 07.router-share -----------------------------------------------------------------------------


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


WEAK_IS_BETTER = PairCounts(both=50, only_strong=5, only_weak=30, neither=15)  # weak 80%, strong 55%

ROUTER_CASES = (
    ("GSM8K, a coin, to 80%", ROUTELLM_GSM8K, 0.80, "coin"),
    ("GSM8K, a perfect router, to 80%", ROUTELLM_GSM8K, 0.80, "perfect"),
    ("GSM8K, a perfect router, to the strong model's accuracy", ROUTELLM_GSM8K, 1130 / 1319, "perfect"),
    ("GSM8K, a perfect router, to its ceiling", ROUTELLM_GSM8K, 1225 / 1319, "perfect"),
    ("GSM8K, a coin, to 90%: above the strong model", ROUTELLM_GSM8K, 0.90, "coin"),
    ("GSM8K, a perfect router, to 95%: above either model", ROUTELLM_GSM8K, 0.95, "perfect"),
    ("GSM8K, a coin, to 50%: the weak model is enough", ROUTELLM_GSM8K, 0.50, "coin"),
    ("GSM8K, a perfect router, to 50%", ROUTELLM_GSM8K, 0.50, "perfect"),
    ("a weak model better than the strong one, a coin, to 85%", WEAK_IS_BETTER, 0.85, "coin"),
    ("a weak model better than the strong one, a perfect router, to 85%", WEAK_IS_BETTER, 0.85, "perfect"),
)


def _share(share: float | None) -> str:
    return "None (out of reach)" if share is None else f"{share:.1%}"


@exercise(
    "07.router-share",
    "How much traffic a router must send to the strong model",
    hint="below the weak model's accuracy no strong calls are needed; a coin moves along the straight "
    "line from the weak model's accuracy to the strong one's; a perfect router gains one right answer "
    "per strong query, but only on the queries only the strong model gets right; beyond a router's "
    "reach return None",
)
def router_share(strong_share: Callable[[PairCounts, float, str], float | None]) -> Iterator[Case]:
    for what, counts, target, router in ROUTER_CASES:
        want = share_needed(counts, target, router)
        got, error = attempt(strong_share, counts, target, router)
        if want is None:
            right = not error and got is None
        else:
            right = not error and isinstance(got, int | float) and math.isclose(got, want, abs_tol=1e-6)
        yield Case(f"{what} → {_share(want)}", right, error or f"got {got!r}")


AGENTS = ("react", "plan-execute", "planner+workers")  # notebook 07's three agents, in its order

# --- 07.pick -------------------------------------------------------------------------------------


def pick_answer(comparison: Comparison) -> str:
    """Among the topologies whose 95% interval overlaps the most accurate one's, the cheapest per
    task, then the fastest; on a complete tie, the first in the comparison."""
    rows = comparison.rows()
    best = max(rows, key=lambda r: r.accuracy)
    low, high = wilson_interval(best.right, best.tasks)

    def overlaps(r) -> bool:
        r_low, r_high = wilson_interval(r.right, r.tasks)
        return r_high >= low and r_low <= high

    return min((r for r in rows if overlaps(r)), key=lambda r: (r.mean_cost, r.mean_seconds)).topology


@functools.cache  # the runs are deterministic: a learner checking again need not wait for them again
def pick_cases() -> tuple[tuple[str, Comparison], ...]:
    """The comparisons of notebook 07, sections 4 and 7, and two more."""
    rng = random.Random(11)
    short = [world.single_task(rng, f"s{i}") for i in range(10)]
    short += [world.chain_task(rng, 2, f"c{i}") for i in range(10)]
    wide = [
        world.fanout_task(rng, rng.choice((6, 7, 8)), rng.choice(("total", "highest", "lowest")), f"w{i}")
        for i in range(20)
    ]
    agents = list(AGENTS)
    clean = Setup(SimulatedLLM(seed=0), tool_seconds=1.0)
    slipping = Setup(SimulatedLLM(seed=0, error_rate=0.05), tool_seconds=1.0)
    four = ["chat", *AGENTS]
    return (
        (
            "section 4: 50 tasks, four topologies, 5% errors",
            compare(world.make_tasks(50, seed=0), slipping, four),
        ),
        ("section 7: short and sequential", compare(short, clean, agents)),
        ("section 7: wide and independent", compare(wide, clean, agents)),
        (
            "short tasks, 5% errors: one agent a task behind the team",
            compare(short, Setup(SimulatedLLM(seed=1, error_rate=0.05), tool_seconds=1.0), agents),
        ),
        ("a comparison of one topology", compare(short[:3], clean, ["plan-execute"])),
    )


@exercise(
    "07.pick",
    "Choose a topology by the numbers",
    hint="first keep every topology whose 95% interval overlaps the most accurate one's (a slightly "
    "lower accuracy may be noise); then the lowest mean cost per task; on equal cost, the lowest "
    "mean latency",
)
def pick(choose: Callable[[Comparison], str]) -> Iterator[Case]:
    for what, comparison in pick_cases():
        want = pick_answer(comparison)
        got, error = attempt(choose, comparison)
        yield Case(f"{what} → {want}", not error and got == want, error or f"got {got!r}")


# --- 07.shapes -----------------------------------------------------------------------------------

SHAPES = {
    "A": ({"react"}, "one lookup: nothing to plan or to run side by side"),
    "B": ({"planner+workers"}, "eight independent slow calls: run them side by side"),
    "C": ({"plan-execute", "planner+workers"}, "a long chain known in advance: plan once"),
    "D": ({"react"}, "each step depends on what the last one found: no plan survives the first step"),
}


@exercise(
    "07.shapes",
    "Which topology for which task",
    hint="ask of each task: can its steps be written down before the first result comes back? do they "
    "depend on each other? is each one a slow call? and how long is it: a loop re-reads its history",
)
def shapes(choice: Mapping[str, str]) -> Iterator[Case]:
    if not isinstance(choice, Mapping):
        yield Case("a dict from task letter to topology name", False, f"got {type(choice).__name__}")
        return
    for key, (right, _why) in SHAPES.items():
        got = choice.get(key)
        detail = f"got {got!r}" if got in AGENTS else f"got {got!r}; choose from {', '.join(AGENTS)}"
        yield Case(f"task {key}", got in right, detail)
    extra = sorted(set(choice) - set(SHAPES))
    yield Case("no other tasks", not extra, f"unexpected keys {extra}")
