"""A stream passed through: the upstream's server-sent events sent on one by one as they arrive, and
billed once, from the usage the events reported, when the stream ends however it ends.

A stream can end five ways: whole (`message_stop`), cut by the upstream, cut by the learner
hanging up, never started (the learner gone before the first byte), or cut by the budget.
`Relay.close` runs once in each case (at the end of the iteration, or when the relay is
dropped), so the call is recorded once and the learner's slot is freed.

The budget: a stream's output is only counted by the upstream at its end, so the relay counts
what it has sent on as it goes (`DELIVERED`: the kit's four characters a token) and prices it.
When the next piece would take the running cost past what the learner has `left` (their daily,
course or the class's budget, the least of them), the relay sends an `error` event in the API's
own shape instead (the SDK raises it as an API error) and stops; the learner is charged the input
and the output delivered, no more.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from agentlab.gateway.recordings import Assembly
from agentlab.gateway.upstream import Answer
from agentlab.llm.base import Usage
from agentlab.llm.usage import api_usage

CHARACTERS_PER_TOKEN = 4  # the kit's rule of thumb (llm.simulated.count_tokens), for output delivered


class Relay:
    """Iterate to get (0.0, event) pairs, each due at once (the `Reply.stream` shape); `done` is
    called exactly once, at the end, with the relay (its usage, model, whether whole, the message
    assembled, why it was cut). `left`: dollars the learner may still spend (None: no limit),
    priced by `price(model, usage)`; `why`: which budget that is, for the error event."""

    def __init__(
        self,
        answer: Answer,
        model: str,
        done: Callable[[Relay], None],
        left: float | None = None,
        price: Callable[[str, Usage], float] | None = None,
        why: str = "budget",
    ):
        self.answer, self.model, self._done = answer, model, done
        self.left, self._price, self.why = left, price, why
        self.usage: dict[str, Any] = {}
        self.assembly = Assembly()
        self.delivered = 0  # characters of output sent on
        self.cut = ""  # why the gateway ended the stream ("" if it did not)
        self.whole, self._closed, self._lock = False, False, threading.Lock()

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        event = b""
        try:
            for line in self.answer.chunks():
                event += line
                if line.strip():
                    continue
                data = event_data(event)
                if (said := self._over(data)) is not None:
                    self.cut = said
                    yield 0.0, error_event("rate_limit_error", said)
                    return
                self._fold(data)
                yield 0.0, event
                event = b""
            if event:
                yield 0.0, event
        except OSError:
            pass  # the upstream broke off: the learner's SDK sees the stream end early
        finally:
            self.close()

    def _fold(self, data: dict[str, Any] | None) -> None:
        if data is None:
            return
        self.assembly.fold(data)
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self.usage.update(data["message"].get("usage") or {})
            named = data["message"].get("model")
            self.model = named if isinstance(named, str) and named else self.model
        elif kind == "message_delta" and isinstance(data.get("usage"), dict):
            self.usage.update({k: v for k, v in data["usage"].items() if v is not None})
        elif kind == "content_block_delta":
            self.delivered += delta_characters(data)
        self.whole |= kind == "message_stop"

    def _over(self, data: dict[str, Any] | None) -> str | None:
        """Why this event may not go on (it would take the cost past the budget), or None."""
        if (
            self.left is None
            or self._price is None
            or data is None
            or data.get("type") != "content_block_delta"
        ):
            return None
        after = self.billed(self.delivered + delta_characters(data))
        if after is None or self._price(self.model, after) <= self.left:
            return None
        spent = self._price(self.model, self.billed(self.delivered) or Usage())
        return (
            f"budget reached mid-stream: {self.why} had ${self.left:.4f} left, and this answer would cost "
            f"more; the stream was cut after {self.delivered_tokens()} output tokens, charged ${spent:.4f}"
        )

    def delivered_tokens(self, characters: int | None = None) -> int:
        return math.ceil((self.delivered if characters is None else characters) / CHARACTERS_PER_TOKEN)

    def billed(self, characters: int | None = None) -> Usage | None:
        """The usage to bill: the input side as reported, and the output reported or, for a stream
        the budget cut (its output is never reported), delivered; None when none was reported."""
        try:
            counted = api_usage(self.usage) if self.usage else None
        except ValueError:
            return None
        if counted is None or (characters is None and not self.cut):
            return counted
        return replace(counted, output_tokens=max(counted.output_tokens, self.delivered_tokens(characters)))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._done(self)

    def __del__(self) -> None:  # never iterated (the learner left first): recorded all the same
        self.close()


def event_data(event: bytes) -> dict[str, Any] | None:
    """The JSON data of one server-sent event, or None."""
    for line in event.splitlines():
        if line.startswith(b"data:"):
            try:
                data = json.loads(line[5:])
            except (ValueError, RecursionError):
                return None
            return data if isinstance(data, dict) else None
    return None


def delta_characters(data: dict[str, Any]) -> int:
    """Characters of output a content_block_delta carries (text, a tool call's JSON, thinking)."""
    delta = data.get("delta")
    if not isinstance(delta, dict):
        return 0
    return sum(
        len(v) for k, v in delta.items() if k in ("text", "partial_json", "thinking") and isinstance(v, str)
    )


def error_event(kind: str, message: str) -> bytes:
    """An `error` server-sent event in the API's shape: the SDK raises it as an APIStatusError."""
    data = {"type": "error", "error": {"type": kind, "message": message}}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()
