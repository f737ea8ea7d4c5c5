"""One interface for every model the kit talks to.

A call takes a system prompt, Anthropic-style messages, optional tools and an
optional JSON Schema, and returns a `Completion`: the text, the parsed JSON (when
a schema was given), any tool calls, the token usage, the latency and the model
name. The simulator, Claude, and a replayed recording all answer this way, so
the rest of the kit never asks which one it is talking to.

Two helpers for anything built from what a server or the environment said: `redact` hides
credentials (a key, a URL's password), and `brief` quotes a long text in one short line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

Message = Mapping[str, Any]  # {"role": "user" | "assistant", "content": str | list of blocks}

REDACTED = "[redacted]"

# What a credential looks like in text the kit prints or saves, and what replaces it: Anthropic
# and other `sk-` keys, the token after "Bearer", the value after a name such as api_key, token
# or password, and the user:password part of a URL (https://user:pass@host). No pattern takes a
# quote or a backslash, so redacting a line of JSON leaves valid JSON.
#
# Each pattern comes with what every match of it holds. A search for a character or a plain word
# is far quicker than a regex's over long text, so text without them is skipped, and in text with
# them the regex is tried only next to them: a 200 KB output with no secret in it costs a few such
# searches, not a regex each.
class _Secret(NamedTuple):
    characters: str  # one of these is in every match ("": no such character)
    words: tuple[str, ...]  # and one of these words (in lower case when the pattern ignores case)
    ignores_case: bool
    starts: tuple[int, int]  # where a match can start, from the word's start: first, last
    pattern: re.Pattern
    replacement: str
    follows: re.Pattern | None = None  # what every match has right after the word


_SEPARATOR = r"\\?['\"]?\s*[:=]"  # between a name such as api_key and its value: `: `, `="`, `\":`
_SECRET_PATTERNS = (
    _Secret("-", ("sk-",), False, (0, 0),
            re.compile(r"\bsk-(?:ant-[A-Za-z0-9_\-]{4,}|[A-Za-z0-9_\-]{16,})"), REDACTED),
    _Secret("", ("bearer ",), True, (7, 7),
            re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=\-]{12,}"), REDACTED),
    _Secret(
        ":=",
        ("key", "token", "password", "secret"),
        True,
        (-7, 0),  # "access_token" starts 7 before its "token"
        re.compile(
            r"(?i)(?<![A-Za-z_])((?:x-)?api[_-]?key|access[_-]?token|auth[_-]?token|token|password|secret)"
            rf"({_SEPARATOR}\s*\\?['\"]?)(?!\[redacted\])[^\s'\",;&}}\\]{{6,}}"
        ),
        r"\1\2" + REDACTED,
        re.compile(_SEPARATOR),
    ),
    _Secret("@", ("://",), False, (3, 3), re.compile(r"(?<=://)[^/\s@\"'<>\\?#]+@"), REDACTED + "@"),
)
_SECRET_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_known_secrets: set[str] = set()  # keys handed to a backend in code (`AnthropicLLM(api_key=...)`)


def redact(text: str) -> str:
    """`text` with every credential in it replaced by "[redacted]": key-like strings (sk-ant-...,
    sk-..., long bearer tokens, `api_key=...`), the user:password part of URLs, and the key
    actually configured (ANTHROPIC_API_KEY, or one passed to a backend), whatever it looks like.

    Everything the kit prints or saves that came from a server or the environment goes through
    here: a server that echoes the key in its error message must not put it into a run's reason.
    """
    text = str(text)
    configured = {os.environ.get(name, "").strip() for name in _SECRET_VARIABLES}
    for secret in sorted(configured | _known_secrets, key=len, reverse=True):
        if len(secret) >= 8:  # a shorter "key" would blank out ordinary words
            text = text.replace(secret, REDACTED)
    lowered = None
    for secret in _SECRET_PATTERNS:
        if secret.characters and not any(c in text for c in secret.characters):
            continue
        if secret.ignores_case and lowered is None:
            lowered = text.lower()
        searched = lowered if secret.ignores_case else text
        if any(word in searched for word in secret.words):
            text, lowered = _sub_near(secret, text, searched), None
    return text


def _sub_near(secret: _Secret, text: str, searched: str) -> str:
    """`secret.pattern.sub(secret.replacement, text)`, the regex tried only where a match can
    start next to a word in `searched` (`text`, or it in lower case): a regex steps through text a
    character at a time, so on a long text with a word or two it is the slow part. ASCII only (each
    character lowers to one, the regex's case-insensitive matches are plain letters); otherwise,
    or with the words so many that trying next to each costs more, the regex runs over all."""
    (first, last), pattern, words = secret.starts, secret.pattern, secret.words
    many = 8 + len(text) // (8 * (last - first + 2))  # a try costs about what 8 characters of a regex do
    found = sorted(at for word in words for at in _where(searched, word, many)) if text.isascii() else ()
    if not found or len(found) > many:
        return pattern.sub(secret.replacement, text)
    parts, done, tried = [], 0, 0  # text[:done] is in parts; no match starts before `tried` but those found
    for at, end in found:
        if secret.follows and not secret.follows.match(text, end):
            continue
        for start in range(max(at + first, tried), at + last + 1):
            if start >= tried and (match := pattern.match(text, start)):
                parts += [text[done : match.start()], match.expand(secret.replacement)]
                done = tried = match.end()
        tried = max(tried, at + last + 1)
    return "".join([*parts, text[done:]])


def _where(text: str, word: str, many: int) -> list[tuple[int, int]]:
    """Where `word` starts and ends in `text` (up to `many` + 1 times: enough to tell there are more)."""
    found, at = [], text.find(word)
    while at >= 0 and len(found) <= many:
        found.append((at, at + len(word)))
        at = text.find(word, at + 1)
    return found


def brief(text: str, width: int = 200) -> str:
    """`text` as it may be quoted in a message: redacted, on one line (whitespace collapsed),
    and cut after `width` characters with its full length said, so that what a server sent
    (a 502 page, a captive portal's HTML) can be named without flooding a run's reason."""
    text = str(text)
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= width else f"{flat[:width]}… ({len(text):,} characters)"


def remember_secret(key: str | None) -> None:
    """Have `redact` hide `key` too (a backend calls this with a key it was given in code)."""
    if key and key.strip():
        _known_secrets.add(key.strip())


class PaidError(Exception):
    """An error that carries what was paid before it happened: the model `calls` (completions)
    and, when known, the virtual `seconds` they took. A failed step, a failed planner and a
    failed model call all raise one, so no cost is lost on the way up."""

    def __init__(self, message: str, calls: Sequence[Completion] = (), seconds: float | None = None):
        super().__init__(message)
        self.calls, self.seconds = tuple(calls), seconds


def paid(error: BaseException) -> tuple[Completion, ...]:
    """The model calls `error` paid for before it was raised (none unless it is a PaidError)."""
    return error.calls if isinstance(error, PaidError) else ()


class ModelError(PaidError, RuntimeError):
    """A model call failed for good (an API error after retries, a reply that is not a message,
    a request a replay does not hold). Its `calls` are any replies paid for before it gave up.
    Its message is redacted: a server that echoes the key cannot put it into a run's reason."""

    def __init__(self, message: str, calls: Sequence[Completion] = (), seconds: float | None = None):
        super().__init__(redact(message), calls, seconds)


@dataclass(frozen=True)
class Usage:
    """Token counts for one call, or a sum of calls (`a + b`). As the API counts them,
    `input_tokens` is only the fresh input: what a call read from the prompt cache and what it
    wrote there (for 5 minutes, or for an hour) are counted apart."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:  # field by field, spelt out: sums of thousands of calls
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )

    @property
    def prompt_tokens(self) -> int:
        """Every token of the prompt, however it was charged."""
        cached = self.cache_read_tokens + self.cache_write_tokens + self.cache_write_1h_tokens
        return self.input_tokens + cached

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


@dataclass(frozen=True)
class Tool:
    """A tool offered to a model: its name, what it does, and its input JSON Schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """The model asks for tool `name` with `args`; `id` ties the result back to the call."""

    id: str
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Completion:
    """What one model call returned. `latency` is virtual seconds for the simulator,
    wall-clock seconds for a real model."""

    text: str
    model: str
    backend: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    data: Any = None
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str = "end_turn"


@runtime_checkable
class LLM(Protocol):
    """Anything that can complete a request: SimulatedLLM, AnthropicLLM, a replayer."""

    backend: str

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[Tool] = (),
        schema: Mapping[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion: ...


def assistant_message(completion: Completion) -> dict[str, Any]:
    """The assistant turn to append to the history after `completion`, in Anthropic's block format."""
    blocks: list[dict[str, Any]] = []
    if completion.text:
        blocks.append({"type": "text", "text": completion.text})
    for call in completion.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.args)})
    return {"role": "assistant", "content": blocks}


def tool_results_message(results: Mapping[str, str], errors: Sequence[str] = ()) -> dict[str, Any]:
    """The user turn that answers tool calls: `results` maps a tool-call id to its output text;
    ids in `errors` are marked as failed calls, so the model can see and correct them."""
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": call_id in errors}
            for call_id, text in results.items()
        ],
    }
