"""Checks for the exercises of notebook 07, one agent or a team.

- `07.react-tokens`: predict what an n-call ReAct loop reads from one measured run;
- `07.router-share`: the share of queries a coin or a perfect router must send to the strong model
  to reach a target accuracy, from the four pair counts;
- `07.pick`: choose a topology from a measured comparison: the cheapest of those shown
  non-inferior to the best within a stated margin, or "run more" when a cheaper one is undecided;
- `07.shapes`: which topology for which shape of task (a structured answer);

The runs behind the hidden cases are made here, on the simulated LLM, so they are the same every time.
The migration case and the handoff audit, once part of notebook 07, are notebook 08's (`nb08.py`).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterator, Mapping

from agentlab import world
from agentlab.compare import Comparison, Outcome, Setup, compare
from agentlab.course.checks import Case, attempt, exercise
from agentlab.evidence import paired_accuracy
from agentlab.llm import SimulatedLLM
from agentlab.llm.base import Completion, Usage
from agentlab.react import ReactRun, Turn, react
from agentlab.routing import ROUTELLM_GSM8K, PairCounts
from agentlab.verdicts import non_inferior

# --- 07.react-tokens -----------------------------------------------------------------------------


def _measured_input(run: ReactRun) -> int:
    return sum(turn.input_tokens for turn in run.turns)


@functools.cache  # runs on a seeded simulator: the same every time, so made once
def _react_cases() -> tuple[tuple[str, ReactRun, int, float], ...]:
    """(what, run, calls to predict, the input tokens expected): runs on the simulator, and made-up
    runs whose growth is uneven (a fit through every call gives another g than the first and last)."""
    llm = SimulatedLLM(seed=0)
    four_hops = react(world.chain_task(random.Random(7), 4).question, llm)
    two_hops = react(world.chain_task(random.Random(3), 2).question, llm)
    one_call = react(world.chain_task(random.Random(7), 4).question, llm, max_steps=1)
    return (
        ("notebook 07's 4-hop run, at its own 5 calls", four_hops, len(four_hops.turns), 2330.0),
        ("the same run, predicting 12 calls", four_hops, 12, 6810.0),
        ("a 2-hop run, predicting 11 calls", two_hops, 11, 5907.0),
        ("a run stopped after one call, predicting 4 calls", one_call, 4, 1632.0),
        (
            "a run whose last call grew far more than the others, predicting 12 calls",
            _run(400, 410, 420, 430, 600),
            12,
            8100.0,
        ),
        (
            "a run whose first call grew far more than the others, predicting 10 calls",
            _run(500, 560, 570, 580),
            10,
            6200.0,
        ),
    )


@exercise(
    "07.react-tokens",
    "Predict a ReAct loop's input tokens",
    hint="look at how many growth steps call t has had (t - 1: the first call has none), so at the sum "
    "over n calls; at where B and g come from (the first call, and the first and last calls only, not a "
    "fit through all of them); and at a run of one call, which shows no growth",
)
def react_tokens(predict: Callable[[ReactRun, int], float]) -> Iterator[Case]:
    for case in _react_cases():
        yield _judge_react_tokens(predict, *case)
    llm = SimulatedLLM(seed=0)
    two_hops = react(world.chain_task(random.Random(3), 2).question, llm)
    ten_hops = react(world.chain_task(random.Random(103), 10).question, llm)
    calls = len(ten_hops.turns)
    got, error = attempt(predict, two_hops, calls)
    actual = _measured_input(ten_hops)
    close = not error and isinstance(got, int | float) and abs(got - actual) <= 0.1 * actual
    yield Case(
        f"from the 2-hop run, a real 10-hop run of {calls} calls, within 10%",
        close,
        error or f"predicted {got!r}, the real run read {actual:,} tokens",
    )


def _judge_react_tokens(predict: Callable, what: str, run: ReactRun, n: int, want: float) -> Case:
    """One case of 07.react-tokens: `predict(run, n)` against `want` tokens, within 0.5%."""
    got, error = attempt(predict, run, n)
    right = not error and isinstance(got, int | float) and math.isclose(got, want, rel_tol=0.005)
    direction = "" if not isinstance(got, int | float) else " (too many)" if got > want else " (too few)"
    return Case(what, right, error or f"got {got!r}{direction}")


def _run(*inputs: int) -> ReactRun:
    """A ReAct run reduced to what the prediction reads: the input tokens of each call."""
    turns = [
        Turn(
            i + 1,
            "",
            (),
            Completion("", "sim-large", "simulated", Usage(input_tokens=n, output_tokens=20)),
            1.0,
        )
        for i, n in enumerate(inputs)
    ]
    return ReactRun("a question", "an answer", "done", turns)


# --- 07.router-share -----------------------------------------------------------------------------


_WEAK_IS_BETTER = PairCounts(both=50, only_strong=5, only_weak=30, neither=15)  # weak 80%, strong 55%

_ROUTER_CASES = (  # (what, counts, target, router, the least share expected or None)
    ("GSM8K, a coin, to 80%", ROUTELLM_GSM8K, 0.80, "coin", 0.7402777777777779),
    ("GSM8K, a perfect router, to 80%", ROUTELLM_GSM8K, 0.80, "perfect", 0.16163760424564066),
    (
        "GSM8K, a perfect router, to the strong model's accuracy",
        ROUTELLM_GSM8K,
        1130 / 1319,
        "perfect",
        0.21834723275208492,
    ),
    ("GSM8K, a perfect router, to its ceiling", ROUTELLM_GSM8K, 1225 / 1319, "perfect", 0.29037149355572406),
    ("GSM8K, a coin, to the strong model's accuracy", ROUTELLM_GSM8K, 1130 / 1319, "coin", 1.0),
    ("GSM8K, a coin, to 90%: above the strong model", ROUTELLM_GSM8K, 0.90, "coin", None),
    ("GSM8K, a perfect router, to 95%: above either model", ROUTELLM_GSM8K, 0.95, "perfect", None),
    ("GSM8K, a coin, to 50%: the weak model is enough", ROUTELLM_GSM8K, 0.50, "coin", 0.0),
    ("GSM8K, a perfect router, to 50%", ROUTELLM_GSM8K, 0.50, "perfect", 0.0),
    ("a weak model better than the strong one, a coin, to 85%", _WEAK_IS_BETTER, 0.85, "coin", None),
    (
        "a weak model better than the strong one, a perfect router, to 85%",
        _WEAK_IS_BETTER,
        0.85,
        "perfect",
        0.05,
    ),
)


@exercise(
    "07.router-share",
    "How much traffic a router must send to the strong model",
    hint="look at targets the weak model reaches alone, at the line a coin moves along (from the weak "
    "model's accuracy to the strong one's), at which queries a perfect router's strong calls turn from "
    "wrong to right (only those only the strong model gets right), and at targets beyond a router's reach",
)
def router_share(strong_share: Callable[[PairCounts, float, str], float | None]) -> Iterator[Case]:
    for what, *case in _ROUTER_CASES:
        yield _judge_router_share(strong_share, what, *case)


def _judge_router_share(
    strong_share: Callable, what: str, counts: PairCounts, target: float, router: str, want: float | None
) -> Case:
    """One case of 07.router-share: `strong_share(counts, target, router)` against `want` (or None)."""
    got, error = attempt(strong_share, counts, target, router)
    if want is None:
        right = not error and got is None
    else:
        right = not error and isinstance(got, int | float) and math.isclose(got, want, abs_tol=1e-6)
    return Case(what, right, error or f"got {got!r}")


_AGENTS = ("react", "plan-execute", "planner+workers")  # notebook 07's three agents, in its order

# --- 07.pick -------------------------------------------------------------------------------------


_RUN_MORE = "run more"  # what pick answers when the tasks cannot decide


def _pick_answer(comparison: Comparison, margin: float) -> str:
    """The most accurate topology, and every one shown non-inferior to it (the lower end of the
    95% interval for its difference from the best above -margin): of those, the cheapest per task,
    then the fastest. If a topology neither measurably worse nor shown within the margin would
    come before that choice, the tasks cannot decide: _RUN_MORE. On an exact tie, the first row."""
    rows = comparison.rows()
    best = max(rows, key=lambda r: r.accuracy)
    right = {name: [o.right for o in runs] for name, runs in comparison.outcomes.items()}
    kept, undecided = [best], []
    for r in rows:
        if r is not best:
            verdict = non_inferior(paired_accuracy(right[r.topology], right[best.topology]), margin)
            if verdict.kept:
                kept.append(r)
            elif not verdict.worse:
                undecided.append(r)
    cost = lambda r: (r.mean_cost, r.mean_seconds)  # noqa: E731
    choice = min(kept, key=cost)
    return _RUN_MORE if any(cost(r) < cost(choice) for r in undecided) else choice.topology


@functools.cache  # the runs are deterministic: a learner checking again need not wait for them again
def _pick_cases() -> tuple[tuple[str, Comparison, float], ...]:
    """The comparisons of notebook 07, sections 4 and 7 (and section 4's at 400 tasks), and
    hand-made pairs that tell non-inferiority from "no measurable difference", from a margin of
    points on the totals, and from intervals that overlap; each with the margin to decide by."""
    rng = random.Random(11)
    short = [world.single_task(rng, f"s{i}") for i in range(10)]
    short += [world.chain_task(rng, 2, f"c{i}") for i in range(10)]
    wide = [
        world.fanout_task(rng, rng.choice((6, 7, 8)), rng.choice(("total", "highest", "lowest")), f"w{i}")
        for i in range(20)
    ]
    agents = list(_AGENTS)
    clean = Setup(SimulatedLLM(seed=0), tool_seconds=1.0)
    slipping = Setup(SimulatedLLM(seed=0, error_rate=0.05), tool_seconds=1.0)
    four = ["chat", *_AGENTS]
    return (
        (
            "section 4: 50 tasks, four topologies, 5% errors",
            compare(world.make_tasks(50, seed=0), slipping, four),
            0.05,
        ),
        ("the same at 400 tasks", compare(world.make_tasks(400, seed=0), slipping, four), 0.05),
        ("section 7: short and sequential", compare(short, clean, agents), 0.05),
        ("section 7: wide and independent", compare(wide, clean, agents), 0.05),
        (
            "short tasks, 5% errors: one agent a task behind the team",
            compare(short, Setup(SimulatedLLM(seed=1, error_rate=0.05), tool_seconds=1.0), agents),
            0.05,
        ),
        ("a comparison of one topology", compare(short[:3], clean, ["plan-execute"]), 0.05),
        # (both right, only the costly one, only the cheap one, neither) and the margin: where "no
        # measurable difference", a margin of points, or two intervals that overlap choose otherwise
        ("20 tasks: a costly topology right on all 20, a cheap one on 16", _paired(16, 4, 0, 0), 0.05),
        ("400 tasks: the cheap one a point behind, margin 5 points", _paired(300, 12, 8, 80), 0.05),
        ("1,000 tasks: a costly one right on 960, a cheap one on 920", _paired(920, 40, 0, 40), 0.05),
        ("the same 1,000 tasks, margin 10 points", _paired(920, 40, 0, 40), 0.10),
        (
            "200 tasks, 130 against 110 right: the intervals overlap, but all 20 disagreements go one way",
            _paired(110, 20, 0, 70),
            0.05,
        ),
        (
            "100 tasks, 60 against 40 right: the intervals do not overlap, but every task is a disagreement",
            _paired(0, 60, 40, 0),
            0.05,
        ),
        ("40 tasks: the cheap one also the most accurate", _paired(30, 1, 2, 7), 0.05),
        (
            "1,000 tasks, equal cost and accuracy, one twice as fast",
            _paired(900, 5, 5, 90, (1000, 5.0)),
            0.05,
        ),
    )


def _paired(
    both: int, only_costly: int, only_cheap: int, neither: int, cheap: tuple[int, float] = (200, 10.0)
) -> Comparison:
    """Two topologies on the same tasks, given by the four paired counts: "planner+workers" at
    1,000 input tokens and 10 s a task, "react" at `cheap`'s tokens and seconds (200 and 10 s)."""
    count = both + only_costly + only_cheap + neither
    tasks = [world.single_task(random.Random(i), f"p{i}") for i in range(count)]
    costly = [True] * (both + only_costly) + [False] * (only_cheap + neither)
    cheaper = [True] * both + [False] * only_costly + [True] * only_cheap + [False] * neither
    outcomes = {}
    for name, rights, (tokens, seconds) in (
        ("planner+workers", costly, (1000, 10.0)),
        ("react", cheaper, cheap),
    ):
        call = Completion("", "sim-large", "simulated", Usage(tokens, 10), 1.0)
        outcomes[name] = [
            Outcome(task, task.answer if right else "no answer", ((f"{name}1", "agent", call),), seconds)
            for task, right in zip(tasks, rights, strict=True)
        ]
    return Comparison(tasks, outcomes)


def _judge_pick(
    choose: Callable[[Comparison, float], str], what: str, comparison: Comparison, margin: float
) -> Case:
    """One case of 07.pick: the learner's choice against the rule's, on one comparison and margin."""
    got, error = attempt(choose, comparison, margin)
    return Case(what, not error and got == _pick_answer(comparison, margin), error or f"got {got!r}")


@exercise(
    "07.pick",
    "Choose a topology by the numbers",
    hint="look at which topologies you keep: the most accurate one, and every one whose paired "
    'interval for its difference from the best lies above -margin (non-inferior; not "no measurable '
    'difference", not two intervals that overlap, not the totals); at those neither worse nor '
    'non-inferior (if one is cheaper than your choice, answer "run more"); then at cost, and on equal '
    "cost at latency",
)
def pick(choose: Callable[[Comparison, float], str]) -> Iterator[Case]:
    for what, comparison, margin in _pick_cases():
        yield _judge_pick(choose, what, comparison, margin)


# --- 07.shapes -----------------------------------------------------------------------------------

_TASKS = ("A", "B", "C", "D")
# The key is the grader's (agentlab/course/hidden/nb07.py): a check that said how many choices are right
# would let trial and error walk to it.


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
    unknown = {k: choice.get(k) for k in _TASKS if choice.get(k) not in _AGENTS}
    yield Case(
        "every task gets one topology's name", not unknown, f"got {unknown}; choose from {', '.join(_AGENTS)}"
    )
    extra = sorted(set(choice) - set(_TASKS))
    yield Case("no other tasks", not extra, f"unexpected keys {extra}")
    yield Case(
        "the answer is well formed: the choices themselves are marked by your instructor's grader", True
    )
