"""Checks for the exercises of notebook 10, across machines.

- `10.speedup`: the speedup of a batch of N tasks of t seconds on W workers, each task paying an
  overhead o for its round trip: N·t / (⌈N/W⌉·(t + o));
- `10.break-even`: the step length at which such a batch on W workers is as fast as one process:
  ⌈N/W⌉·o / (N − ⌈N/W⌉), or None when a cluster can never win;
- `10.travel`: an agent that reads a census database (SQLite) and can travel to a worker: it
  answers on threads, it pickles with cloudpickle, and its copy reads the database where it runs.

No check starts a cluster: an agent that pickles with cloudpickle is what a Dask worker receives.
"""

from __future__ import annotations

import math
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from agentlab.course.checks import Case, attempt, exercise

_TIME_LIMIT = 5.0  # seconds for one case: far more than a right answer needs


def _close(got: Any, want: float | None) -> bool:
    if want is None or got is None:
        return got is None and want is None
    number = isinstance(got, int | float) and not isinstance(got, bool)
    return number and math.isclose(got, want, rel_tol=1e-9)


def _shown(got: Any) -> str:
    return f"got {got:.4g}" if isinstance(got, float) else f"got {got!r}"


# --- 10.speedup -----------------------------------------------------------------------------------

_SPEEDUP_CASES = (  # (what, tasks, workers, seconds a task, overhead a task)
    ("a 1,000-task batch of 2 s model calls on 8 workers, 15 ms overhead each", 1000, 8, 2.0, 0.015),
    ("40 short steps of 0.3 ms on 2 workers, 24 ms overhead each", 40, 2, 0.0003, 0.024),
    ("9 tasks of 1 s on 4 workers (the last round is not full), 0.1 s overhead", 9, 4, 1.0, 0.1),
    ("3 tasks of 5 s on 8 workers (more workers than tasks), 0.2 s overhead", 3, 8, 5.0, 0.2),
    ("one worker: 12 tasks of 0.5 s, 0.05 s overhead", 12, 1, 0.5, 0.05),
    ("no overhead: 7 tasks of 2 s on 3 workers", 7, 3, 2.0, 0.0),
)


def _speedup(tasks: int, workers: int, seconds: float, overhead: float) -> float:
    return tasks * seconds / (math.ceil(tasks / workers) * (seconds + overhead))


@exercise(
    "10.speedup",
    "Predict a batch's speedup on a cluster",
    hint="look at how many rounds the workers go through when the tasks do not divide evenly among them "
    "(and when there are more workers than tasks), and at who pays the overhead: the batch once, or "
    "every task that travels?",
)
def speedup(predict: Callable[[int, int, float, float], float]) -> Iterator[Case]:
    for what, tasks, workers, seconds, overhead in _SPEEDUP_CASES:
        want = _speedup(tasks, workers, seconds, overhead)
        got, error = attempt(predict, tasks, workers, seconds, overhead, limit=_TIME_LIMIT)
        yield Case(what, not error and _close(got, want), error or _shown(got))


# --- 10.break-even --------------------------------------------------------------------------------

_BREAK_EVEN_CASES = (  # (what, tasks, workers, overhead a task)
    ("a large batch: 1,000 tasks on 2 workers, 15 ms overhead", 1000, 2, 0.015),
    ("1,000 tasks on 8 workers, 15 ms overhead", 1000, 8, 0.015),
    ("5 tasks on 2 workers (a last round of one), 0.1 s overhead", 5, 2, 0.1),
    ("3 tasks on 8 workers, 0.2 s overhead", 3, 8, 0.2),
    ("one worker: 50 tasks, 15 ms overhead", 50, 1, 0.015),
    ("one task on 4 workers, 15 ms overhead", 1, 4, 0.015),
)


def _break_even(tasks: int, workers: int, overhead: float) -> float | None:
    rounds = math.ceil(tasks / workers)
    return None if tasks <= rounds else rounds * overhead / (tasks - rounds)


@exercise(
    "10.break-even",
    "The step length from which a cluster pays",
    hint="write two times as functions of a task's seconds, one worker's and the cluster's, and find where "
    "they meet; count the cluster's rounds as exactly as in the last exercise (a small batch is not a "
    "large one), and ask for which batches the two never meet",
)
def break_even(find: Callable[[int, int, float], float | None]) -> Iterator[Case]:
    for what, tasks, workers, overhead in _BREAK_EVEN_CASES:
        want = _break_even(tasks, workers, overhead)
        got, error = attempt(find, tasks, workers, overhead, limit=_TIME_LIMIT)
        yield Case(what, not error and _close(got, want), error or _shown(got))


# --- 10.travel ------------------------------------------------------------------------------------

_CENSUS = {"Quillmoor": "4417", "Sallow Reach": "912", "Orrin's Cay": "23050"}  # islands you have not seen


def _write(path: Path, census: dict[str, str]) -> None:
    """The census as notebook 10's exercise keeps it: a table `census(island, people)`."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE IF NOT EXISTS census (island TEXT PRIMARY KEY, people TEXT)")
        db.executemany("INSERT OR REPLACE INTO census VALUES (?, ?)", census.items())


@exercise(
    "10.travel",
    "An agent that can travel to a worker",
    hint="connect to the census inside the agent's function, each time a step runs (and close it): a "
    "connection (or a lock) held by the agent cannot be pickled, and a census read once when the agent is "
    "built goes stale; read the database at `path`, and answer \"unknown\" for an island it lacks",
)
def travel(census_clerk: Callable[[str], Any]) -> Iterator[Case]:
    import cloudpickle

    from agentlab.agents import Agent
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "census.db"
        _write(path, _CENSUS)
        agent, error = attempt(census_clerk, str(path), limit=_TIME_LIMIT)
        if error or not isinstance(agent, Agent) or agent.role != "clerk":
            yield Case("census_clerk(path) builds an Agent for the role \"clerk\"", False,
                       error or f"got {agent!r}")
            return
        islands = [*_CENSUS, "Nowhere Rock"]
        plan = Plan([Step(f"s{i}", "clerk", island) for i, island in enumerate(islands, 1)])
        want = {f"s{i}": _CENSUS.get(island, "unknown") for i, island in enumerate(islands, 1)}
        run, error = attempt(run_plan, plan, {"clerk": agent}, workers=2, limit=_TIME_LIMIT)
        ok = not error and run.status == "done" and run.outputs == want
        detail = error or (run.reason if run.status != "done" else f"got {run.outputs}")
        yield Case("four lookups on threads, two at a time, in a census you have not seen (one island "
                   "missing from it)", ok, detail)
        sent, error = attempt(cloudpickle.dumps, agent, limit=_TIME_LIMIT)
        yield Case("the agent pickles with cloudpickle, as a step sent to a worker must", not error,
                   error.replace("raised ", "cloudpickle.dumps(agent) raised ", 1))
        if error:
            return
        copy = cloudpickle.loads(sent)
        _write(path, {**_CENSUS, "Quillmoor": "4420"})  # the census is corrected after the agent was built
        got, error = attempt(copy, Step("s1", "clerk", "Quillmoor"), {}, limit=_TIME_LIMIT)
        fresh = not error and got.output == "4420"
        yield Case("its copy reads the census when a step runs, after a figure in it was corrected", fresh,
                   error or f"got {got.output!r}")
