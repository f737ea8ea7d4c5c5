"""One attempt at a step: what a worker does with it, on a thread, a process or another machine.

The loop in `run.py` hands each step to a worker, and the worker calls `attempt`: inject
the fault if one hits (`faults.py`), run the agent, then look at what came back
(`monitor.inspect`). It hands back an `Attempt` (the output, the model calls paid for,
the seconds taken, and the failure if there was one) and never raises: an agent's
exception is a failure like any other, and a `PaidError` keeps the calls it paid for.

Where an attempt runs: `InPlace` runs it in the caller's thread (one worker, no time limit),
`Daemons` on a thread of its own that the run can walk away from (both in `threads.py`), or any
`concurrent.futures` pool the caller passes, a Dask cluster's (`client.get_executor()`) among
them. The loop hands an attempt over with `submit` and reads it back with `outcome`, which
turn what only a pool of other processes can do into failed attempts with a reason: an agent
that cannot be pickled to travel there ("the writer agent cannot be sent to a worker: it holds
`lock` ..."), a worker that died mid-step, a cancelled future. Recovery then takes over.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import math
import os
import pickle
import socket
import time
from collections.abc import Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from agentlab.agents import Agent
from agentlab.faults import Fault, InjectedFault, sentinel_output, wrong_output
from agentlab.llm.base import Completion, PaidError, Usage
from agentlab.monitor import Check, Failure, inspect
from agentlab.plan import Step
from agentlab.threads import Daemons, InPlace, Ticket, wait_all


@dataclass(frozen=True, init=False)
class Attempt:
    """What one try at a step produced, and `where` it ran: the process ("host:pid", see
    `here`) that ran it, or "" when no process reported (a pool refused it, its worker died)."""

    output: str | None
    calls: tuple[Any, ...]
    seconds: float  # as reported; a declared duration still wins unless `forced`
    failure: Failure | None = None
    forced: bool = False  # set by a "slow" fault: these seconds stand
    where: str = ""

    def __init__(self, output: str | None, calls: tuple, seconds: float, failure: Failure | None = None,
                 forced: bool = False, where: str = ""):  # fmt: skip
        fields = self.__dict__  # written out, not generated: one a step (see `trace.Event`)
        fields["output"], fields["calls"], fields["seconds"] = output, calls, seconds
        fields["failure"], fields["forced"], fields["where"] = failure, forced, where


def here() -> str:
    """This process, as "host:pid": on a cluster, which machine and which worker process (asked
    of the system once per process: every attempt says it)."""
    if _HERE[0] != os.getpid():
        _HERE[:] = [os.getpid(), f"{socket.gethostname()}:{os.getpid()}"]
    return _HERE[1]


_HERE: list = [None, ""]  # (the pid it was asked in, the answer)


def attempt(
    agent: Agent,
    step: Step,
    planned: Step,
    context: Mapping[str, str],
    checks: tuple[Check, ...] = (),
    fault: Fault | None = None,
    number: int = 1,
    real_clock: bool = False,
) -> Attempt:
    """Try `step` (the plan's `planned` step, perhaps rerouted or with a retry note) once, the
    `number`th time: inject the fault if one hits, run the agent, look at what came back."""
    try:
        if fault is not None and fault.kind == "error":
            raise InjectedFault(fault.describe(planned.id, number))
        work = agent(_own(step), context)
    except Exception as error:  # noqa: BLE001 - every failure becomes part of the run's story
        calls, seconds = (error.calls, error.seconds) if isinstance(error, PaidError) else ((), None)
        if not isinstance(seconds, int | float) or not 0 <= seconds < math.inf:
            seconds = None  # unknown, or unusable: a NaN would stop the virtual clock
        failure = Failure("error", f"{type(error).__name__}: {error}")
        return Attempt(None, calls, agent.seconds if seconds is None else seconds, failure, where=here())
    output, seconds, forced = work.output, work.seconds, False
    if fault is not None and fault.kind == "sentinel":
        output = sentinel_output(fault, planned.id, number)
    elif fault is not None and fault.kind == "wrong":
        output = wrong_output(output)
    elif fault is not None and fault.kind == "slow":
        seconds, forced = fault.seconds, True
        if real_clock:
            time.sleep(fault.seconds)
    failure = inspect(planned, output, context, checks)
    return Attempt(output, work.calls, seconds, failure, forced, where=here())


def _own(step: Step) -> Step:
    """`step` for an agent to keep: its `args` a copy, so an agent that writes into them cannot
    change the plan the run executes (what a retry sees, what a checkpoint saves)."""
    return dataclasses.replace(step, args=copy.deepcopy(dict(step.args))) if step.args else step


def travelling(agent: Agent, *args: Any) -> Attempt | tuple[bytes, Attempt]:
    """`attempt`, on a worker in another process: what goes back must be pickled too, and a
    Dask future whose result cannot be never completes (the run would wait for ever). So the
    worker checks first, and a result that cannot travel is a failed attempt naming what
    holds what; the calls it paid go back as plain `Completion`s where they can. A result that
    can goes back pickled, beside its plain stand-in: a class only the worker can import would
    stop Dask rebuilding it here, and its future would never complete either (`arrived`)."""
    result = attempt(agent, *args)
    try:
        return _dumps(result), _stand_in(result, "")
    except Exception as error:  # noqa: BLE001 - what holds what is the reason
        said = _unpicklable(result) or f"{type(error).__name__}: {error}"
    said = f"the step's result cannot be sent back from the worker: {said}"
    return _stand_in(result, f"{said}; return plain text and llm.Completion calls")


def _stand_in(result: Attempt, reason: str) -> Attempt:
    """`result` failed for `reason`, with only what any process can rebuild: its paid calls as
    plain Completions (others dropped, and counted in the reason), its seconds, where it ran."""
    calls = [plain for plain in map(_plain_call, result.calls) if plain is not None]
    lost = len(result.calls) - len(calls)
    reason += f" ({lost} call(s) could not be counted)" if lost else ""
    return Attempt(None, tuple(calls), result.seconds, Failure("error", reason), where=result.where)


def arrived(result: Attempt | tuple[bytes, Attempt]) -> Attempt:
    """The attempt a worker sent back (`travelling`), rebuilt here; if it cannot be (a class this
    process cannot import), its plain stand-in, failed with the reason."""
    if not isinstance(result, tuple):
        return result
    pickled, plain = result
    try:
        return pickle.loads(pickled)
    except Exception as error:  # noqa: BLE001 - whatever stops it is the reason
        said = f"{type(error).__name__}: {error}"
        reason = (f"the step's result came back from the worker but cannot be rebuilt here ({said}); return "
                  "plain text and llm.Completion calls, of classes this process can import too")
        return dataclasses.replace(plain, failure=Failure("error", reason))


def _unpicklable(result: Attempt) -> str | None:
    """What in `result` cannot be pickled (`output`, `calls[i]`, `failure`), in words, or None."""
    for name, value in [("output", result.output), *((f"calls[{i}]", c) for i, c in enumerate(result.calls)),
                        ("failure", result.failure)]:
        if said := _problem(value):
            return f"`{name}` ({type(value).__name__}) cannot be pickled ({said})"
    return None


def _plain_call(call: Any) -> Any:
    """A call rebuilt from plain values, or None if it cannot be: a Completion from its text, model
    and counts (every one: the 1-hour cache writes are billed too), anything else as JSON."""
    if not isinstance(call, Completion):
        try:
            return json.loads(json.dumps(call, allow_nan=False))
        except (TypeError, ValueError, RecursionError):
            return None
    usage = Usage(*(int(n) for n in dataclasses.astuple(call.usage)))
    return Completion(str.__str__(call.text), str(call.model), str(call.backend), usage, float(call.latency),
                      stop_reason=str(call.stop_reason))


def submit(pool: futures.Executor, agent: Agent, *args: Any) -> futures.Future:
    """Hand `attempt(agent, *args)` to `pool` (`travelling` unless it runs in this process). If
    the pool refuses it (a Dask client cannot pickle the agent, say), the future holds a failed
    attempt saying why, not an exception."""
    same_process = isinstance(pool, InPlace | Daemons | futures.ThreadPoolExecutor)  # nothing pickled
    work = attempt if same_process else travelling
    try:
        if same_process:
            return pool.submit(work, agent, *args)
        with _quiet("distributed.protocol.pickle"):  # its traceback is replaced by our reason
            return pool.submit(work, agent, *args)
    except Exception as error:  # noqa: BLE001 - any refusal fails the attempt, with its reason
        future: futures.Future = futures.Future()
        reason = cannot_travel(agent, *args) or f"the pool refused it ({type(error).__name__}: {error})"
        future.set_result(Attempt(None, (), 0.0, Failure("error", reason)))
        return future


def outcome(future: futures.Future, timeout: float | None = None) -> Attempt:
    """The `Attempt` a future holds, waiting at most `timeout` s (then `futures.TimeoutError`).
    `attempt` never raises, so an exception here comes from the pool, and becomes a failed
    attempt that says so. The calls a dead worker made are lost with it: not counted."""
    try:
        while timeout is None and not future.done() and not wait_all([future], 0.2):  # in short
            pass  # waits, so that an interrupt (Ctrl-C) is seen at once, not when it ends
        return arrived(future.result(timeout))
    except (Exception, SystemExit) as error:  # noqa: BLE001 - all but the wait running out
        if isinstance(error, futures.TimeoutError) and not future.done():
            raise
        return Attempt(None, (), 0.0, Failure("error", pool_failure(error)))


def pool_failure(error: BaseException) -> str:
    """What went wrong with an attempt's future, in words."""
    name, said = type(error).__name__, str(error).split(". ")[0]
    if name == "KilledWorker":  # Dask's: the worker's process died running it
        return f"the worker running it died ({name}: {said})"
    if isinstance(error, futures.CancelledError):
        return f"the pool cancelled it ({name}): was the cluster closed, or its scheduler lost?"
    if isinstance(error, pickle.PicklingError) or "pickle" in said or "serializ" in said:
        return f"it could not travel to or from the worker ({name}: {said})"
    return f"the pool could not run it ({name}: {said})"


ARGUMENTS = ("step", "step", "context", "checks", "fault")  # what `attempt` takes after the agent


def cannot_travel(agent: Agent, *args: Any) -> str | None:
    """What in an attempt cannot be pickled (by cloudpickle, as Dask does), in words naming it,
    or None if everything can. For the agent, the variable its function holds that cannot."""
    problem = _problem
    how = ("everything a step needs is pickled to the worker: create what cannot travel (a lock, "
           "an open file, a live client) inside the agent's function, or run this team on threads")
    if said := problem(agent):
        for name, value in _held(agent):
            if inner := problem(value):
                said = f"it holds `{name}` ({type(value).__name__}), which cannot be pickled ({inner})"
                break
        return f"the {agent.role} agent cannot be sent to a worker: {said}; {how}"
    for name, value in zip(ARGUMENTS, args, strict=False):
        if said := problem(value):
            return f"the step's {name} cannot be sent to a worker: {said}; {how}"
    return None


def _dumps(value: Any) -> bytes:
    """`value` pickled as Dask pickles it (by cloudpickle, which comes with dask)."""
    try:
        import cloudpickle  # only a pool of other processes gets here

        return cloudpickle.dumps(value)
    except ImportError:  # pragma: no cover - without dask, plain pickle
        return pickle.dumps(value)


def _problem(value: Any) -> str | None:
    """Why `value` cannot be pickled (by cloudpickle, as Dask does), or None if it can."""
    try:
        _dumps(value)
    except Exception as error:  # noqa: BLE001 - whatever the pickler says is the reason
        return f"{type(error).__name__}: {error}"
    return None


def _held(agent: Agent) -> list[tuple[str, Any]]:
    """The variables an agent's function closes over, then the agent's own fields, by name."""
    act = getattr(agent, "act", None)
    names, cells = getattr(act, "__code__", None), getattr(act, "__closure__", None) or ()
    held = []
    for name, cell in zip(names.co_freevars if names else (), cells, strict=False):
        with contextlib.suppress(ValueError):  # an empty cell holds nothing
            held.append((name, cell.cell_contents))
    fields = vars(agent) if hasattr(agent, "__dict__") else {}
    return held + [(f"{agent.role}.{name}", value) for name, value in fields.items() if name != "act"]


class _quiet:
    """Silence one logger for the length of a `with` block."""

    def __init__(self, name: str):
        self.logger = logging.getLogger(name)

    def __enter__(self) -> None:
        self.was, self.logger.disabled = self.logger.disabled, True

    def __exit__(self, *exc: Any) -> None:
        self.logger.disabled = self.was


@dataclass(eq=False)
class Job:
    """An attempt handed to a worker, as the loop in `run.py` keeps it: what is tried, where and
    when it started, the executor's future, and when the loop stops waiting for it."""

    step: Step  # as tried: a reroute changes the role, a retry adds a note
    planned: Step  # as the plan has it
    order: int  # position in the schedule: ties are broken in written order
    worker: int
    start: float  # on the run's clock
    attempt: int
    future: futures.Future | Ticket
    wall: float | None = None  # with a time limit: the real time (`time.monotonic`) to wait until
    end: float | None = None  # known once the attempt has reported (virtual) or timed out
    late: str | None = None  # once it has timed out: "", or what more there is to say about it
    result: Attempt | None = None  # once read back (virtual clock: to learn its end)

    def wait(self) -> float | None:
        """How much longer to wait for it, in real seconds (None: for as long as it takes)."""
        return None if self.wall is None else max(0.0, self.wall - time.monotonic())


def pool_for(llm: Any) -> futures.Executor | None:
    """The pool for a run whose agents call `llm`: the caller's thread (`InPlace`) for the
    simulator, which answers at once, so threads would add hand-offs and nothing else (on the
    virtual clock the run is the same either way); None (`run_plan`'s threads) for a model
    whose calls take real time, so that they overlap."""
    return InPlace() if getattr(llm, "backend", None) == "simulated" else None
