"""Across machines: steps and whole tasks on a Dask cluster (notebook 10).

Two ways to use more than one process, with the same code on one laptop and on a real cluster,
and what to look at once they do:

- **Steps on a cluster.** `run_plan(..., pool=client.get_executor())` (or `orchestrate`) runs
  each step on a worker process. The agent, its tools, its model backend and the step's context
  are pickled (by cloudpickle) and sent there; the `Attempt` comes back. On the virtual clock
  the outputs, trace and usage are those of threads, for the same seed (the simulator's
  randomness is a hash of the request, not of the process). What cannot travel, and a worker
  that dies mid-step, become failed attempts with a reason (`attempt.submit`, `attempt.outcome`)
  that `Retry`/`Replan` recover from on another worker.
- **Tasks on a cluster.** `run_tasks(tasks, run_one, client)` runs `run_one(task)` (a whole
  `orchestrate`, say) for many tasks at once, one per worker thread, with the results in task
  order and equal to running them one by one.
- **Seeing it.** `context_bytes(run)`: the bytes each step's context moved to its worker; and
  `viz.draw_timeline(run, by="where")`: which process (`Slot.where`, "host:pid") ran each step.

    with local_cluster(workers=2) as client:      # real scheduler and worker processes
        runs = run_tasks(tasks, run_one, client)

`Client("tcp://scheduler:8786")` instead of `local_cluster()` reaches a real cluster; the
workers need the kit installed (`pip install -e .`), as they import it to unpickle a step.

Dask is imported here only, and only when a cluster is used: `import agentlab` stays light.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import pickle
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from agentlab.valid import number


@contextlib.contextmanager
def local_cluster(workers: int = 2, threads: int = 1, host: str = "127.0.0.1") -> Iterator[Any]:
    """A `distributed.Client` on a `LocalCluster` of `workers` worker processes with `threads`
    threads each, closed (cluster and client) when the `with` block ends. Everything it opens
    (scheduler, workers, dashboard) listens on `host`: this machine only, unless you ask for
    another interface (on a classroom network, anyone could otherwise watch your tasks).

    A worker that dies fails the task it was running at once: Dask's own silent resubmission
    (`distributed.scheduler.allowed-failures`) is switched off for this cluster, so the trace
    shows the failure and the run's recovery policies decide what happens next. The dashboard's
    port is any free one (`:0`), so two clusters on one machine never collide.

    Dask's own log lines are held back while the cluster runs (only CRITICAL ones are written):
    its scheduler runs on a thread of the notebook's kernel, which prints into the cell that
    started the cluster, so a worker killed later showed a red "workers died" line under an
    unrelated cell. What happened is in the run's trace and failures instead.

    On Linux the worker processes are forked from one warm server process (multiprocessing's
    "forkserver", Python 3.14's default there) instead of each starting Python and importing Dask
    afresh: a cluster starts, restarts a dead worker and closes in about a second instead of
    several. A forked worker gets this process's environment as the cluster starts (`env=`), as a
    spawned one would, except that a variable deleted since this process's first cluster started
    is still set there; elsewhere each worker is spawned."""
    number(workers, "local_cluster's workers", minimum=1, whole=True)
    number(threads, "local_cluster's threads", minimum=1, whole=True)
    import dask
    from distributed import Client, LocalCluster

    logger = logging.getLogger("distributed")  # the scheduler's and the nannies', in this process
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        start = "forkserver" if sys.platform.startswith("linux") else "spawn"
        settings = {"distributed.scheduler.allowed-failures": 0,
                    "distributed.worker.multiprocessing-method": start}
        with dask.config.set(settings):  # for the cluster's whole life: a dead worker's restart forks too
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=threads,
                processes=True,
                host=host,
                dashboard_address=f"{host}:0",
                silence_logs=logging.CRITICAL,  # the worker processes' own
                env=dict(os.environ),  # a forked worker's would be the fork server's, from its own start
            )
            try:
                with Client(cluster) as client:
                    yield client
            finally:
                cluster.close()
    finally:
        logger.setLevel(level)


def context_bytes(run: Any) -> dict[str, int]:
    """For each step of `run.plan`, the bytes of what travels to its worker as its context: the
    pickled outputs of the steps it depends on (`len(pickle.dumps(context))`, as `run_plan`
    hands them over). Read from the run's outputs, nothing is run again; a step whose context
    was never complete (a dependency failed or never ran) is left out, as nothing was sent."""
    if not hasattr(run, "plan") or not hasattr(run, "outputs"):
        raise TypeError(f"context_bytes needs a Run, got {type(run).__name__}")
    if run.plan is None:  # planning failed: no step was sent anywhere
        return {}
    sizes = {}
    for step in run.plan:
        if all(dep in run.outputs for dep in step.depends_on):
            sizes[step.id] = len(pickle.dumps({dep: run.outputs[dep] for dep in step.depends_on}))
    return sizes


def run_tasks(
    tasks: Sequence[Any],
    run_one: Callable[[Any], Any],
    client: Any = None,
    *,
    progress: bool = True,
    out: TextIO | None = None,
) -> list[Any]:
    """`[run_one(task) for task in tasks]`, run on the cluster `client` reaches (in this process,
    one by one, without one), the results in task order.

    Each task is one Dask task: `run_one` and the task are pickled to a worker, and what it
    returns (a `Run`, say) comes back. With `progress`, a line on `out` (default stderr) counts
    the tasks done, and the Dask dashboard's address is shown when there is a dashboard to see.
    If any task fails (its `run_one` raised, or its worker died), the others still finish and a
    `TasksFailed` carries every result (None where a task failed) and what went wrong."""
    tasks = list(tasks)
    if not callable(run_one):
        raise TypeError(f"run_one must be a function of one task, got {type(run_one).__name__}")
    out = out or sys.stderr
    bar = _Progress(len(tasks), out) if progress else None
    results: list[Any] = [None] * len(tasks)
    failures: dict[int, str] = {}
    if client is None:
        for i, task in enumerate(tasks):
            try:
                results[i] = run_one(task)
            except Exception as error:  # noqa: BLE001 - one task's failure does not lose the others
                failures[i] = f"{type(error).__name__}: {error}"
            if bar:
                bar.step()
    else:
        from distributed import as_completed

        if progress and (link := dashboard(client)):
            print(f"Dask dashboard: {link}", file=out)
        try:
            submitted = client.map(functools.partial(_pickled, run_one), tasks, pure=False)
        except Exception as error:  # noqa: BLE001 - replaced by a reason that says what to do
            raise TypeError(_cannot_send(run_one, tasks, error)) from None
        index = {future.key: i for i, future in enumerate(submitted)}
        for future in as_completed(submitted):
            i = index[future.key]
            try:
                results[i] = _rebuilt(future.result())
            except Exception as error:  # noqa: BLE001 - a worker that died, run_one that raised
                failures[i] = _failure(error)
            if bar:
                bar.step()
    if bar:
        bar.done()
    if failures:
        raise TasksFailed(results, failures)
    return results


def _pickled(run_one: Callable[[Any], Any], task: Any) -> bytes:
    """`run_one(task)` on a worker, sent back pickled: Dask rebuilding a result whose class only
    the worker can import prints a traceback here and fails it with no word of which task."""
    import cloudpickle

    return cloudpickle.dumps(run_one(task))


def _rebuilt(pickled: bytes) -> Any:
    """A task's result, rebuilt here; a RuntimeError in one line if it cannot be."""
    try:
        return pickle.loads(pickled)
    except Exception as error:  # noqa: BLE001 - whatever stops it is the reason
        said = f"{type(error).__name__}: {error}"
        raise RuntimeError(f"the task's result came back but cannot be rebuilt here ({said}); return "
                           "values of classes this process can import too") from None


class TasksFailed(RuntimeError):
    """Some tasks of a `run_tasks` batch failed. `results` has every result (None where a task
    failed); `failures` maps a task's position to what went wrong."""

    def __init__(self, results: list[Any], failures: dict[int, str]):
        self.results, self.failures = results, failures
        first = min(failures)
        super().__init__(
            f"{len(failures)} of {len(results)} task(s) failed; "
            f"the first, task {first}: {_line(failures[first])} "
            "(the others' results are in this error's `results`)"
        )


def dashboard(client: Any) -> str | None:
    """The address of the Dask dashboard `client` can show, or None when there is none to see
    (its pages need `bokeh`, which the kit does not install: `pip install bokeh` to get them)."""
    info = client.scheduler_info()
    if "dashboard" not in info.get("services", {}) or importlib.util.find_spec("bokeh") is None:
        return None
    return client.dashboard_link


def _line(text: str, width: int = 200) -> str:
    """A failure in one line: its first line, and its last when there are more (a traceback's
    first line and the error it ends with), cut at `width` characters."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()] or [""]
    said = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return said if len(said) <= width else said[: width - 3] + "..."


def _failure(error: BaseException) -> str:
    from agentlab.attempt import pool_failure

    if type(error).__name__ == "KilledWorker":
        return pool_failure(error)
    return _line(f"{type(error).__name__}: {error}")


def _cannot_send(run_one: Callable[[Any], Any], tasks: list[Any], error: Exception) -> str:
    """Why `run_one` and the tasks could not be sent to the workers, naming which."""
    import cloudpickle

    for name, value in [("run_one", run_one), *((f"task {i}", t) for i, t in enumerate(tasks))]:
        try:
            cloudpickle.dumps(value)
        except Exception as problem:  # noqa: BLE001 - the pickler's words are the reason
            return (f"{name} cannot be sent to a worker ({type(problem).__name__}: {problem}); everything "
                    "it needs is pickled to the worker: create what cannot travel (a lock, an open "
                    "file, a live client) inside run_one")
    return f"the tasks could not be sent to the cluster ({type(error).__name__}: {error})"


class _Progress:
    """A one-line text progress bar: `[#####.....] 6/12 tasks`, redrawn in place."""

    WIDTH = 30

    def __init__(self, total: int, out: TextIO):
        self.total, self.count, self.out = total, 0, out
        self.draw()

    def step(self) -> None:
        self.count += 1
        self.draw()

    def draw(self) -> None:
        filled = self.WIDTH * self.count // max(1, self.total)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.out.write(f"\r[{bar}] {self.count}/{self.total} tasks")
        self.out.flush()

    def done(self) -> None:
        self.out.write("\n")
        self.out.flush()
