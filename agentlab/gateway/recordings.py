"""Every answered call of a learner, kept for a replay: the request as the learner sent it (before
any `--map` of a retired model id) and the message that came back (a stream's assembled from its
events), in the ledger's `exchanges` table, and exported as a recording the kit's `ReplayLLM`
answers from.

`agentlab gateway recordings export learner-01 DIR` writes DIR/learner-01.jsonl (`--since` and
`--until`, UTC times like 2026-11-30T14:00, keep one run of a lab), one call a line in
the kit's replay format for calls over the wire (`llm.replay`: the wire key, the request, the
message, the seconds the upstream took, and "cut" for a stream the gateway ended early). Then
`AGENTLAB_BACKEND=replay AGENTLAB_REPLAY=DIR/learner-01.jsonl` replays that learner's session
offline, with the same outputs; copied to `recordings/`, the best run of a lab becomes the class's.

No key is ever written: the gateway records only bodies (never headers), and `clean` takes out of
them the instructor's key, any learner token (agl-...), and whatever else `base.redact` knows
for a credential, before they reach the ledger.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentlab.gateway.store import Ledger
from agentlab.llm.base import redact

LEARNER_TOKEN = re.compile(r"agl-[A-Za-z0-9_-]{8,}")


def clean(text: str, key: str = "") -> str:
    """`text` without the instructor's `key`, any learner's token, or a credential `redact` finds."""
    if key and key in text:
        text = text.replace(key, "[redacted]")
    if "agl-" in text:
        text = LEARNER_TOKEN.sub("[redacted]", text)
    return redact(text)


def export(
    ledger: Ledger, name: str, folder: str | Path, since: float | None = None, until: float | None = None
) -> tuple[Path, int, int]:
    """Write learner `name`'s exchanges (those from `since` to `until`, Unix times, if given: one
    run of a lab) to folder/name.jsonl (created, or replaced); return the file, the calls
    written, and how many of them were streams cut short."""
    exchanges = ledger.exchanges(name, since, until)
    where = Path(folder)
    if where.exists() and not where.is_dir():
        raise ValueError(f"{where} is a file: give a folder for the recording (it writes {name}.jsonl there)")
    try:
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for one in exchanges:
                entry = {
                    "key": one.key,
                    "request": json.loads(one.request),
                    "message": json.loads(one.message),
                    "latency": one.latency,
                    "cut": one.cut,
                    "recorded_by": "agentlab gateway",
                }
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError as e:
        raise ValueError(f"cannot write the recording into {where}: {e.strerror or e}") from None
    return path, len(exchanges), sum(1 for one in exchanges if one.cut)


def utc_time(text: str | None, option: str) -> float | None:
    """A UTC time as written on the command line (2026-11-30T14:00, or a date) as a Unix time;
    ValueError naming the option otherwise."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{option} {text!r}: write a UTC time like 2026-11-30T14:00 (or a date)") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


class Assembly:
    """The message a stream's events build, as the SDK's accumulator builds it: `fold` each
    event's data in order, `message()` at any point (a stream cut short: what arrived)."""

    def __init__(self) -> None:
        self.start: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial: dict[int, str] = {}  # a tool call's input, as JSON pieces so far
        self.usage: dict[str, Any] = {}
        self.delta: dict[str, Any] = {}

    def fold(self, data: dict[str, Any]) -> None:
        kind, index = data.get("type"), data.get("index")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self.start = {k: v for k, v in data["message"].items() if k != "content"}
            self.usage.update(data["message"].get("usage") or {})
        elif (
            kind == "content_block_start"
            and isinstance(index, int)
            and isinstance(data.get("content_block"), dict)
        ):
            self.blocks[index] = dict(data["content_block"])
        elif kind == "content_block_delta" and index in self.blocks and isinstance(data.get("delta"), dict):
            self._delta(self.blocks[index], index, data["delta"])
        elif kind == "content_block_stop" and index in self.partial:
            try:
                self.blocks[index]["input"] = json.loads(self.partial.pop(index) or "{}")
            except ValueError:
                pass  # a tool call's input that never became JSON: left as it started
        elif kind == "message_delta":
            self.delta.update(data.get("delta") or {})
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + str(delta.get("text", ""))
        elif kind == "input_json_delta":
            self.partial[index] = self.partial.get(index, "") + str(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))

    def message(self) -> dict[str, Any]:
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return {**self.start, **self.delta, "content": content, "usage": dict(self.usage)}
