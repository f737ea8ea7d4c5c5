"""Fault injection: make a chosen step fail, on purpose and the same way every time.

Recovery code is only tested when something fails, and a demo that fails "if you
run it a few times" teaches nothing. A `Fault` says which attempts go wrong and
how; `run_plan(faults=[...])` applies the first fault that hits each attempt.

- which: a step id and/or a role (None means any), the first `times` attempts
  (None means every attempt), each with `probability` (1.0 means always);
- how (`kind`): "error" (the attempt raises, before the agent runs), "sentinel"
  (the agent's answer is replaced by "FAILED ..."), "wrong" (the answer is
  replaced by a plausible wrong one: only a check can notice), "slow" (the
  attempt takes `seconds`: only a timeout can notice).

A step's faults leave the planner alone. `FaultyLLM` reaches it: wrap the planner's model
to make every call slower or refused, and watch what a run does when its one planner is slow
or down (notebook 10).

Whether a probabilistic fault hits is decided by a hash of (seed, step id, role,
attempt number), never by call order: the same seed gives the same faults at any
worker count. A retry is a new attempt and a rerouted step a new role, so each
gets a fresh draw; a replanned step has a new id, so the fault that was pinned to
the old id no longer hits it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from agentlab.llm.base import LLM, Completion, ModelError
from agentlab.monitor import FAILED
from agentlab.valid import MAX_TIMEOUT, number
from agentlab.world import ENTITIES

FAULT_KINDS = ("error", "sentinel", "wrong", "slow")


class InjectedFault(RuntimeError):
    """The exception an "error" fault raises in place of the agent's work."""


@dataclass(frozen=True)
class Fault:
    """Attempts at `step` (or by `role`) fail as `kind`: the first `times` of them (None: all),
    each with `probability`, drawn from `seed`."""

    step: str | None = None
    role: str | None = None
    kind: str = "error"
    times: int | None = None
    probability: float = 1.0
    seed: int = 0
    seconds: float = 60.0  # how long a "slow" attempt takes

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        number(self.probability, "a fault's probability", minimum=0, maximum=1, must_be="between 0 and 1")
        if self.times is not None:
            every = "a whole number >= 1 (or None for every attempt)"
            number(self.times, "a fault's times", minimum=1, whole=True, must_be=every)
        most = f"a number >= 0 (at most {MAX_TIMEOUT:g}, a day: a real clock sleeps it)"
        number(self.seconds, "a fault's seconds", minimum=0, maximum=MAX_TIMEOUT, must_be=most)

    def hits(self, step_id: str, role: str, attempt: int) -> bool:
        """Does attempt number `attempt` (from 1) at step `step_id`, by `role`, fail?"""
        if self.step is not None and self.step != step_id:
            return False
        if self.role is not None and self.role != role:
            return False
        if self.times is not None and attempt > self.times:
            return False
        return self.probability >= 1.0 or _draw(self.seed, step_id, role, attempt) < self.probability

    def describe(self, step_id: str, attempt: int) -> str:
        return f"injected {self.kind} fault at step {step_id!r}, attempt {attempt}"


def _draw(seed: int, step_id: str, role: str, attempt: int) -> float:
    """A number in [0, 1) that depends only on its arguments."""
    digest = hashlib.sha256(f"{seed}\x00{step_id}\x00{role}\x00{attempt}".encode()).hexdigest()
    return int(digest[:13], 16) / 16**13


def first_hit(faults: Iterable[Fault], step_id: str, role: str, attempt: int) -> Fault | None:
    """The first fault in `faults` that hits this attempt, or None."""
    return next((f for f in faults if f.hits(step_id, role, attempt)), None)


def sentinel_output(fault: Fault, step_id: str, attempt: int) -> str:
    return f"{FAILED}: {fault.describe(step_id, attempt)}"


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def wrong_output(output: str) -> str:
    """A plausible wrong answer in place of `output`: a number off by about 10%, another entity
    of the same kind for a name of the world, else the text reversed."""
    text = output.strip()
    if _NUMBER.fullmatch(text):
        value = float(text)
        wrong = value + max(1.0, round(abs(value) * 0.1))
        return str(int(wrong)) if wrong.is_integer() else f"{wrong:g}"
    if text in ENTITIES:
        kind = ENTITIES[text].kind
        same = [name for name, e in ENTITIES.items() if e.kind == kind and name != text]
        return same[sum(map(ord, text)) % len(same)]
    return text[::-1]


class FaultyLLM:
    """`llm`, with a fault of its own: each reply takes `slower` times its latency (an overloaded
    endpoint), or, with `down`, every call fails at once with a ModelError (an outage). Give it to
    the planner alone to see the coordinator as a bottleneck and as a single point of failure."""

    def __init__(self, llm: LLM, *, slower: float = 1.0, down: bool = False):
        number(slower, "FaultyLLM's slower", above=0, must_be="a factor above 0 (5 means five times slower)")
        self.llm, self.slower, self.down = llm, slower, bool(down)

    @property
    def backend(self) -> str:
        return self.llm.backend

    def __repr__(self) -> str:
        return f"FaultyLLM({self.llm!r}, slower={self.slower:g}, down={self.down})"

    def complete(self, **request: Any) -> Completion:
        if self.down:
            raise ModelError(f"{self.backend} model is down (an outage injected by FaultyLLM)")
        reply = self.llm.complete(**request)
        return replace(reply, latency=round(reply.latency * self.slower, 6))
