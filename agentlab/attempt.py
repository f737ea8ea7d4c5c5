"""One attempt at a step: what a worker does with it, on a thread, a process or another machine.

The loop in `run.py` hands each step to a worker, and the worker calls `attempt`: inject
the fault if one hits (`faults.py`), run the agent, then look at what came back
(`monitor.inspect`). It hands back an `Attempt` (the output, the model calls paid for,
the seconds taken, and the failure if there was one) and never raises: an agent's
exception is a failure like any other, and a `PaidError` keeps the calls it paid for.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from agentlab.agents import Agent
from agentlab.faults import Fault, InjectedFault, sentinel_output, wrong_output
from agentlab.llm.base import PaidError
from agentlab.monitor import Check, Failure, inspect
from agentlab.plan import Step


@dataclass(frozen=True)
class Attempt:
    """What one try at a step produced."""

    output: str | None
    calls: tuple[Any, ...]
    seconds: float  # as reported; a declared duration still wins unless `forced`
    failure: Failure | None = None
    forced: bool = False  # set by a "slow" fault: these seconds stand


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
        work = agent(step, context)
    except Exception as error:  # noqa: BLE001 - every failure becomes part of the run's story
        calls, seconds = (error.calls, error.seconds) if isinstance(error, PaidError) else ((), None)
        failure = Failure("error", f"{type(error).__name__}: {error}")
        return Attempt(None, calls, agent.seconds if seconds is None else seconds, failure)
    output, seconds, forced = work.output, work.seconds, False
    if fault is not None and fault.kind == "sentinel":
        output = sentinel_output(fault, planned.id, number)
    elif fault is not None and fault.kind == "wrong":
        output = wrong_output(output)
    elif fault is not None and fault.kind == "slow":
        seconds, forced = fault.seconds, True
        if real_clock:
            time.sleep(fault.seconds)
    return Attempt(output, work.calls, seconds, inspect(planned, output, context, checks), forced)


class InPlace(futures.Executor):
    """An executor whose worker is the caller: `submit` runs the call at once and hands back a
    finished future. A run with one worker and no time limit uses it, since a thread would
    only add a hand-off per step (with one worker, steps run one at a time anyway)."""

    def submit(self, fn, /, *args, **kwargs) -> futures.Future:
        future: futures.Future = futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - as a pool would, keep it for .result()
            future.set_exception(error)
        return future
