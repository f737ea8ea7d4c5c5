"""The Messages API's wire format for `agentlab serve`: a Completion as a message, and as the
stream of server-sent events that `"stream": true` asks for.

The stream follows Anthropic's "Streaming Messages" page (docs.anthropic.com/en/api/messages-streaming,
read 2026-11-25 in its translated versions) and the SDK's own accumulator: `message_start`
(the message with its content empty and the input usage), then for each content block a
`content_block_start`, one or more `content_block_delta` (`text_delta` pieces of text, or
`input_json_delta` pieces of a tool call's JSON input) and a `content_block_stop`; then a
`message_delta` with the stop reason and the usage (output tokens counted in full), and a
last `message_stop`. Each event is `event: NAME` and `data: JSON` lines, then a blank line.

Each event carries the second it is due, counted from the request: the simulator's profile
writes `tokens_per_second` after `overhead`, so a client reading the stream sees a plan's
first step long before its last, as it would from a real model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from agentlab.llm.base import Completion

CHUNK = 16  # characters per delta: about four tokens, the kit's rule of thumb


def to_message(completion: Completion, message_id: str) -> dict[str, Any]:
    """A Completion as the Messages API's message object: a text block (when there is text), then
    one `tool_use` block per tool call; the stop reason, usage and the model that answered."""
    content: list[dict[str, Any]] = [{"type": "text", "text": completion.text}] if completion.text else []
    for c in completion.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.args)})
    u = completion.usage
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": completion.model,
        "content": content,
        "stop_reason": completion.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_creation_input_tokens": u.cache_write_tokens + u.cache_write_1h_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": u.cache_write_tokens,
                "ephemeral_1h_input_tokens": u.cache_write_1h_tokens,
            },
        },
    }


def events(message: dict[str, Any], overhead: float, speed: float) -> Iterator[tuple[float, bytes]]:
    """The server-sent events that stream `message`, each with the second it is due."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 0}}
    yield 0.0, _event("message_start", {"type": "message_start", "message": start})
    written = 0  # characters so far, for the clock
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty, kind, field, text = {"type": "text", "text": ""}, "text_delta", "text", block["text"]
        else:
            empty, kind, field = {**block, "input": {}}, "input_json_delta", "partial_json"
            text = json.dumps(block["input"])
        yield _due(written, overhead, speed), _event(
            "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        )
        for i in range(0, len(text), CHUNK) or [0]:
            written += len(text[i : i + CHUNK])
            delta = {"type": kind, field: text[i : i + CHUNK]}
            data = {"type": "content_block_delta", "index": index, "delta": delta}
            yield _due(written, overhead, speed), _event("content_block_delta", data)
        yield _due(written, overhead, speed), _event(
            "content_block_stop", {"type": "content_block_stop", "index": index}
        )
    end = _due(written, overhead, speed)
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    yield end, _event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    yield end, _event("message_stop", {"type": "message_stop"})


def _due(characters: int, overhead: float, tokens_per_second: float) -> float:
    return overhead + math.ceil(characters / 4) / tokens_per_second


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
