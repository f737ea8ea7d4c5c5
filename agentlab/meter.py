"""A meter on a model: every call counted as it is paid, whichever run or thread paid it.

A `Budget` caps one run, and the run adds up its own calls. Runs that share one purse (the
teams of a hierarchy, each with a run of its own, side by side on threads) need one count for
all of them, kept where the calls are paid: at the model. `Metered(llm)` is the model with a
meter on it; every run is given it in place of `llm`. `metered.budget(Budget(...))` is a budget
that every run checks against the meter, so once a cap is reached no run starts anything new,
whichever run spent it. As with any budget, attempts in flight finish (and pay) after that.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from agentlab.budget import Budget, Spent, spent
from agentlab.llm.base import LLM, Completion, PaidError


class Metered:
    """`llm`, with every call it pays for kept in `paid` (a call that fails may have paid too)."""

    def __init__(self, llm: LLM):
        self.llm, self.backend = llm, llm.backend
        self.paid: list[Completion] = []
        self.lock = threading.Lock()

    def complete(self, **request: Any) -> Completion:
        replies: list[Completion] = []
        try:
            replies.append(self.llm.complete(**request))
            return replies[0]
        except PaidError as error:  # e.g. replies that never fitted the schema, then an API error
            replies += error.calls
            raise
        finally:
            with self.lock:
                self.paid += replies

    def spent(self, seconds: float = 0.0) -> Spent:
        """What every run on this model has paid so far (and `seconds`, which the caller knows)."""
        with self.lock:
            return spent([("", "", c) for c in self.paid], seconds)

    def budget(self, caps: Budget, shared_by: str = "all runs together") -> Budget:
        """A budget with the caps of `caps` on what this meter has counted; its seconds are each
        run's own clock. The reason a run stops says who shared it."""
        return _Shared(**vars(caps), meter=self, shared_by=shared_by)


@dataclass(frozen=True)
class _Shared(Budget):
    meter: Metered | None = None
    shared_by: str = ""

    def reached(self, used: Spent) -> str | None:
        reason = super().reached(self.meter.spent(used.seconds))
        return reason and f"{reason}, {self.shared_by}"
