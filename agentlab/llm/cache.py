"""Prompt caching: where the kit puts cache breakpoints, and what a request then pays for.

Anthropic's API caches a prompt's *prefix* (tools, then system, then messages, in that order)
up to a block marked with `cache_control`. A later request that starts with the same prefix
reads it back instead of paying for it as fresh input. What this module follows, read on
2026-11-25: Anthropic's prompt-caching page (platform.claude.com/docs/en/build-with-claude/
prompt-caching: automatic caching with a top-level `cache_control`, or explicit breakpoints,
with 5-minute or 1-hour lifetimes), the Haiku 5.5 overview (platform.claude.com/docs/en/models/
haiku-5-5/overview: its cache and long-prompt prices), and for the limits and multipliers the
restatements of that page by docs.litellm.ai/docs/completion/prompt_caching (minimum lengths)
and docs.orq.ai/docs/proxy/prompt-caching and docs.electronhub.ai (4 breakpoints, 1.25x / 2x /
0.1x), whose figures agree with each other:

- at most `MAX_BREAKPOINTS` (4) blocks per request may carry `cache_control`;
- an entry lives 5 minutes after its last use (`{"type": "ephemeral"}`), or 1 hour with
  `"ttl": "1h"`; writing one costs 1.25x (5 minutes) or 2x (1 hour) the input price, reading
  one a fraction of it that depends on the model (the sources' 0.1x on some, less on others):
  `usage.PRICES` holds the dollar rates, and `usage.cache_multipliers` the multiples;
- a prefix shorter than the model's minimum (`min_cacheable`) is not cached, silently: both
  cache counters stay at 0 and the request pays full price;
- usage reports `cache_creation_input_tokens` (written), `cache_read_input_tokens` (read) and
  `input_tokens`: only what came after the last breakpoint.

**The kit's breakpoints** (`mark`): one on the system prompt, which covers the tool
definitions before it (the stable prefix every call of an agent shares), and the
documentation's automatic caching for the conversation so far (a top-level `cache_control`:
the API marks the last block, which the next turn of a tool loop starts with). Two of the
four allowed.

**The model of the cache** (`cache_usage`), used by the in-process simulator, is deterministic
and reads only the request, so threads cannot change it (`agentlab serve` instead remembers what
it cached, as Claude does: `PromptCache`, at the end):

- *the conversation so far*: the request that produced each assistant turn ended with the
  message before it and wrote the prefix up to there; a later request reads the longest such
  prefix that was long enough to be cached and is still alive, its age being the modelled
  time of the replies written since (tool time is not in the request, so it is not counted);
- *the stable prefix* (everything up to a breakpoint before the last one: tools, a
  structured-output schema, which the kit takes to be cached with the prompt it shapes, and
  the system prompt) is taken to be in the cache already, kept warm by the calls before: the
  steady state of a deployed agent whose every task starts with the same prompt. A one-off
  run would pay one write for it; deciding which concurrent call pays it would make the bill
  depend on thread timing.

What a request reads is charged as a read, what lies between that and its last breakpoint as
a write, the rest as input. The 20-block lookback never binds here: a turn adds a few blocks.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

MAX_BREAKPOINTS = 4
LOOKBACK = 20  # blocks before a breakpoint where the API looks for an earlier entry
MAX_ENTRIES = 100_000  # entries a `PromptCache` holds (the oldest are forgotten first)
LIFETIMES = {"5m": 300.0, "1h": 3600.0}  # seconds an entry lives after its last use

# The shortest prefix each model caches, by a fragment of its name (first match wins). Claude's
# from the sources above; Haiku 5.5's was not in them, so Haiku 4.5's 4,096 stands in. Each
# simulator profile takes the minimum of the model it stands for (`AnthropicLLM` sends sim-large
# to the planner model, claude-opus-5-5, and sim-small to claude-haiku-5-5); sim-planner, a
# small trained planner, a small model's 2,048 (Haiku 3.5's).
MIN_CACHEABLE = (
    ("opus-5", 512),
    ("fable-5", 512),
    ("mythos-5", 512),
    ("sonnet-5", 1024),
    ("haiku", 4096),
    ("sim-large", 512),
    ("sim-small", 4096),
    ("sim-planner", 2048),
)
DEFAULT_MIN = 1024


def min_cacheable(model: str) -> int:
    """The fewest tokens a prefix needs to be cached on `model`."""
    return next((tokens for part, tokens in MIN_CACHEABLE if part in model), DEFAULT_MIN)


def control(ttl: str) -> dict[str, str]:
    """The `cache_control` object for a lifetime: "5m" (the API's default) or "1h"."""
    if ttl not in LIFETIMES:
        raise ValueError(
            f"cache lifetime must be one of {list(LIFETIMES)} (or None for no caching), got {ttl!r}"
        )
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def mark(request: dict[str, Any], ttl: str) -> dict[str, Any]:
    """`request` (a Messages API body) with the kit's two breakpoints: on the system prompt (or,
    without one, the last tool), and automatic caching (a top-level `cache_control`), which
    the API puts on the last block of the conversation and moves along as it grows."""
    marker = control(ttl)
    if isinstance(request.get("system"), str) and request["system"]:
        request["system"] = [{"type": "text", "text": request["system"], "cache_control": marker}]
    elif request.get("tools"):
        request["tools"] = [*request["tools"][:-1], {**request["tools"][-1], "cache_control": marker}]
    request["cache_control"] = marker
    return request


def breakpoint_of(part: Any) -> str | None:
    """The lifetime a tool, a system block list or a message asks for ("5m", "1h"), or None (a
    plain string asks for none)."""
    if isinstance(part, str):
        return None
    blocks = part if isinstance(part, list) else part.get("content") if "content" in part else [part]
    ttl = None
    for block in blocks if isinstance(blocks, list) else ():
        marker = block.get("cache_control") if isinstance(block, Mapping) else None
        if isinstance(marker, Mapping):
            ttl = marker.get("ttl", "5m") if marker.get("ttl", "5m") in LIFETIMES else "5m"
    return ttl


@dataclass(frozen=True)
class Piece:
    """One part of a prompt in the API's order (a tool, the system prompt, a message): its
    tokens, the lifetime its breakpoint asks for (None: no breakpoint), and for an assistant
    message the modelled seconds it took to write."""

    tokens: int
    ttl: str | None = None
    assistant: bool = False
    seconds: float = 0.0
    key: str = ""  # what it says (a remembering cache, `PromptCache`, tells prefixes apart by it)


class CacheUse(NamedTuple):
    """How a request's input tokens split: fresh input, read from the cache, written to it."""

    input: int
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0


def cache_usage(pieces: Sequence[Piece], total: int, minimum: int) -> CacheUse:
    """Split a request's `total` input tokens by the model described in the module docstring.
    `pieces` in API order; `total` may exceed their sum (a schema's tokens, which stay input)."""
    ends, sofar = [], 0
    for piece in pieces:
        sofar += piece.tokens
        ends.append(sofar)
    marks = [i for i, p in enumerate(pieces) if p.ttl is not None][-MAX_BREAKPOINTS:]
    if not marks or ends[marks[-1]] < minimum:
        return CacheUse(total)
    # Entries earlier calls wrote: the stable prefix (at every breakpoint but the last: warm),
    # and, if this request marks its last message as the earlier ones did, each prefix that
    # ended a request, just before an assistant turn. Each with its age in seconds.
    turns = [i for i, p in enumerate(pieces) if p.assistant]
    entries = dict.fromkeys(marks[:-1], 0.0)
    if marks[-1] == len(pieces) - 1:
        entries |= {i - 1: sum(p.seconds for p in pieces[i:] if p.assistant) for i in turns if i}
    read = max(
        (
            ends[i]
            for i, age in entries.items()
            if ends[i] >= minimum and age <= LIFETIMES[_ttl_at(pieces, marks, i)]
        ),
        default=0,
    )
    written = {"5m": 0, "1h": 0}
    start = read
    for i in marks:  # each segment up to a breakpoint is written at that breakpoint's lifetime
        if ends[i] > start and ends[i] >= minimum:
            written[pieces[i].ttl] += ends[i] - start
            start = ends[i]
    return CacheUse(total - start, read, written["5m"], written["1h"])


def _ttl_at(pieces: Sequence[Piece], marks: Sequence[int], index: int) -> str:
    """The lifetime an entry ending at `index` was written with: its breakpoint's, assumed the
    same as this request's last (the earlier call marked its last message as this one does)."""
    return pieces[index].ttl or pieces[marks[-1]].ttl or "5m"


@dataclass
class PromptCache:
    """A cache that remembers, as Claude's does: `agentlab serve`'s. Each prefix written (named by a
    digest of what it says, per model) lives its lifetime after its last use, on `clock` (the
    server's; a test may give its own). `use` splits one request as `cache_usage` does, but reads
    only what an earlier request wrote and is still alive, and writes what it did not find. The
    in-process simulator keeps `cache_usage`: its bill cannot depend on the order threads ran in."""

    clock: Callable[[], float] = time.monotonic
    entries: dict[str, tuple[float, str]] = field(default_factory=dict)  # digest -> (expires, ttl)

    def __post_init__(self):
        self._lock = threading.Lock()

    def use(self, pieces: Sequence[Piece], total: int, minimum: int, model: str) -> CacheUse:
        ends, digests, sofar, chain = [], [], 0, hashlib.sha256(model.encode())
        for piece in pieces:
            sofar += piece.tokens
            chain.update(hashlib.sha256(piece.key.encode()).digest())
            ends.append(sofar)
            digests.append(chain.hexdigest())
        marks = [i for i, p in enumerate(pieces) if p.ttl is not None][-MAX_BREAKPOINTS:]
        if not marks or ends[marks[-1]] < minimum:
            return CacheUse(total)
        near = {j for i in marks for j in range(max(0, i - LOOKBACK + 1), i + 1) if ends[j] >= minimum}
        with self._lock:
            now = self.clock()
            alive = [j for j in near if self.entries.get(digests[j], (-1.0, ""))[0] >= now]
            hit = max(alive, key=ends.__getitem__, default=None)
            if hit is not None:  # a read keeps the entry alive for another lifetime
                self._keep(digests[hit], self.entries[digests[hit]][1], now)
            written = {"5m": 0, "1h": 0}
            start = read = ends[hit] if hit is not None else 0
            for i in marks:
                if ends[i] > start and ends[i] >= minimum:
                    written[pieces[i].ttl] += ends[i] - start
                    start = ends[i]
                    self._keep(digests[i], pieces[i].ttl, now)
        return CacheUse(total - start, read, written["5m"], written["1h"])

    def _keep(self, digest: str, ttl: str, now: float) -> None:
        self.entries.pop(digest, None)  # to the end: the dict runs from the least recently used
        self.entries[digest] = (now + LIFETIMES[ttl], ttl)
        while len(self.entries) > MAX_ENTRIES:
            del self.entries[next(iter(self.entries))]
