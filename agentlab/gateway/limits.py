"""A learner's limits, checked before a request is forwarded: the one thing that keeps a class's bill
to what the instructor set.

Each refusal is the Messages API's own error shape with a message that says which limit, how much
is left and when it resets, so the SDK raises the matching exception (`RateLimitError` for the
daily budget, `PermissionDeniedError` for a model not allowed, `BadRequestError` for a `max_tokens`
over the cap) and the learner reads why. A budget refusal carries `x-should-retry: false`: the
SDK would otherwise retry a 429 that cannot succeed before midnight.

The daily budget is checked against what the learner has already spent: a call that is not
streamed and crosses the line is answered (its cost is only known afterwards), so a learner can
overshoot by at most one call (or by one call per concurrent request), which the `max_tokens` cap
bounds. A stream is cut where its running cost would pass what is `left` (`relay`). The class's
own daily budget (`check_class`, set by `agentlab gateway budget`) is checked the same way,
against what the whole class has spent today.

Requests per minute and requests at once are counted in memory by a `Gate` (a restarted gateway
starts them afresh; the dollars are in the ledger and never do). Those refusals are 429s the SDK
may retry: `retry-after` says when a slot frees up.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from agentlab.gateway.store import Learner


@dataclass(frozen=True)
class Refusal:
    """Why a request is not forwarded: an HTTP status, the API's error type, and a message."""

    status: int
    kind: str
    message: str
    retry_after: float | None = None  # seconds until the limit resets
    retry: bool = True  # False: the SDK must not retry it (it cannot succeed before retry_after)


def parse_dollars(text: str) -> float | None:
    """`"2/day"` or `"2"` -> 2.0 dollars a day; `"none"` -> no daily limit. ValueError otherwise."""
    said = str(text).strip().lower()
    if said == "none":
        return None
    match = re.fullmatch(r"\$?(\d+(?:\.\d+)?)(?:\s*/\s*day)?", said)
    if not match:
        raise ValueError(f"--dollars {text!r}: write dollars per day, like 2/day or 0.50/day (or none)")
    return float(match.group(1))


def parse_models(text: str | None) -> tuple[str, ...]:
    """`"a,b"` -> ("a", "b"); None or "" -> () (any model)."""
    return tuple(m.strip() for m in (text or "").split(",") if m.strip())


def next_reset(now: float) -> float:
    """The next 00:00 UTC after `now` (a Unix time), when daily budgets start again."""
    today = datetime.fromtimestamp(now, timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return (today + timedelta(days=1)).timestamp()


def check(
    learner: Learner, body: dict[str, Any], spent_today: float, now: float, spent_ever: float = 0.0
) -> Refusal | None:
    """The first of `learner`'s limits that `body` (a well-formed Messages request) breaks, if any:
    model, max_tokens, the course budget (`spent_ever`), the daily budget (`spent_today`)."""
    model = body["model"]
    if learner.models and model not in learner.models:
        allowed = ", ".join(learner.models)
        return Refusal(
            403, "permission_error", f"model {model!r} is not allowed in this class; use one of: {allowed}"
        )
    if learner.max_tokens is not None and body.get("max_tokens", 0) > learner.max_tokens:
        return Refusal(
            400,
            "invalid_request_error",
            f"max_tokens: {body['max_tokens']} is over this class's cap of {learner.max_tokens} per request",
        )
    total = learner.dollars_total
    if total is not None and spent_ever >= total:
        return Refusal(
            403,
            "permission_error",
            f"course budget reached: {learner.name} has spent ${spent_ever:.4f} of ${total:.2f} "
            "for the course, $0.00 left; it does not reset (ask your instructor)",
        )
    limit = learner.dollars_per_day
    if limit is not None and spent_today >= limit:
        wait = next_reset(now) - now
        return Refusal(
            429,
            "rate_limit_error",
            f"daily budget reached: {learner.name} has spent ${spent_today:.4f} of ${limit:.2f}/day, "
            f"$0.00 left; it resets at 00:00 UTC (in {_duration(wait)})",
            retry_after=math.ceil(wait),
            retry=False,
        )
    return None


def check_class(limit: float | None, spent_today: float, now: float) -> Refusal | None:
    """The class's daily budget (all learners together), if `spent_today` has reached it: a 429
    that names the class limit, what is left and when it resets, not retried before then."""
    if limit is None or spent_today < limit:
        return None
    wait = next_reset(now) - now
    return Refusal(
        429,
        "rate_limit_error",
        f"class budget reached: the class has spent ${spent_today:.4f} of its ${limit:.2f}/day, "
        f"$0.00 left; it resets at 00:00 UTC (in {_duration(wait)}); tell your instructor",
        retry_after=math.ceil(wait),
        retry=False,
    )


def left(
    learner: Learner, spent_today: float, spent_ever: float, class_limit: float | None, class_today: float
) -> tuple[float, str] | None:
    """(dollars, which budget) this learner may still spend now: the least of what their daily
    budget, their course budget and the class's daily budget leave (None: no limit at all). A
    stream is cut when its running cost would pass it."""
    room = [
        (max(0.0, limit - spent), which)
        for limit, spent, which in (
            (learner.dollars_per_day, spent_today, f"the daily budget of {learner.name}"),
            (learner.dollars_total, spent_ever, f"the course budget of {learner.name}"),
            (class_limit, class_today, "the class's daily budget"),
        )
        if limit is not None
    ]
    return min(room) if room else None


class Gate:
    """Each learner's requests in the last minute and requests in flight, for `per_minute` and
    `concurrent`. `enter` admits a request (or says why not); every admitted one must `leave`."""

    WINDOW = 60.0  # seconds

    def __init__(self, clock=time.monotonic):
        self._clock, self._lock = clock, threading.Lock()
        self._recent: dict[int, deque[float]] = {}
        self._running: dict[int, int] = {}

    def enter(self, learner: Learner) -> Refusal | None:
        with self._lock:
            now, running = self._clock(), self._running.get(learner.id, 0)
            recent = self._recent.setdefault(learner.id, deque())
            while recent and recent[0] <= now - self.WINDOW:
                recent.popleft()
            if learner.concurrent is not None and running >= learner.concurrent:
                said = f"{learner.concurrent} request(s) at once is this class's limit; {running} under way"
                return Refusal(429, "rate_limit_error", f"too many requests at once: {said}", retry_after=1)
            if learner.per_minute is not None and len(recent) >= learner.per_minute:
                wait = math.ceil(recent[0] + self.WINDOW - now)
                said = f"{learner.per_minute} requests per minute, 0 left; the next in {wait} s"
                return Refusal(429, "rate_limit_error", f"rate limit reached: {said}", retry_after=wait)
            recent.append(now)
            self._running[learner.id] = running + 1
            return None

    def leave(self, learner: Learner) -> None:
        with self._lock:
            self._running[learner.id] = max(0, self._running.get(learner.id, 0) - 1)

    def running(self, learner: Learner) -> int:
        with self._lock:
            return self._running.get(learner.id, 0)


def _duration(seconds: float) -> str:
    hours, minutes = divmod(int(seconds) // 60, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
