"""A stream passed through: the upstream's server-sent events sent on one by one as they arrive, and
billed once, from the usage the events reported, when the stream ends however it ends.

A stream can end four ways: whole (`message_stop`), cut by the upstream, cut by the learner
hanging up, or never started (the learner gone before the first byte). `Relay.close` runs once
in each case (at the end of the iteration, or when the relay is dropped), so the call is recorded
once and the learner's slot is freed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from agentlab.gateway.upstream import Answer

Done = Callable[[dict[str, Any], str, bool], None]  # (usage seen, model named, ended whole)


class Relay:
    """Iterate to get (0.0, event) pairs, each due at once (the `Reply.stream` shape); `done` is
    called exactly once, at the end, with what was seen."""

    def __init__(self, answer: Answer, model: str, done: Done):
        self.answer, self.model, self._done = answer, model, done
        self.usage: dict[str, Any] = {}
        self.whole, self._closed, self._lock = False, False, threading.Lock()

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        event = b""
        try:
            for line in self.answer.chunks():
                event += line
                if line.strip():
                    continue
                self.model = read_event(event, self.usage) or self.model
                self.whole |= b"message_stop" in event
                yield 0.0, event
                event = b""
            if event:
                yield 0.0, event
        except OSError:
            pass  # the upstream broke off: the learner's SDK sees the stream end early
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._done(self.usage, self.model, self.whole)

    def __del__(self) -> None:  # never iterated (the learner left first): recorded all the same
        self.close()


def read_event(event: bytes, usage: dict[str, Any]) -> str:
    """Fold one server-sent event's usage into `usage`; the model it names, if it is message_start.
    message_start carries the input side, message_delta the output so far (and may update both)."""
    for line in event.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            data = json.loads(line[5:])
        except (ValueError, RecursionError):
            return ""
        if not isinstance(data, dict):
            return ""
        if data.get("type") == "message_start" and isinstance(data.get("message"), dict):
            usage.update(data["message"].get("usage") or {})
            named = data["message"].get("model")
            return named if isinstance(named, str) else ""
        if data.get("type") == "message_delta" and isinstance(data.get("usage"), dict):
            usage.update({k: v for k, v in data["usage"].items() if v is not None})
    return ""
