"""`agentlab serve`: the simulator behind Anthropic's Messages API, over real HTTP on 127.0.0.1.

For a class: the raw `anthropic` SDK (or curl, or the kit's Claude backend) talks to it offline with
no key; every request and response is a real one you can read (`--log` prints each); and faults on
demand (a 429 with `retry-after`, a 500, a 529 overload, a broken 200 body, a slow reply) let you
watch the SDK retry and see how a run ends when a server misbehaves. The answers are
`SimulatedLLM`'s, and say so: a reply's `model` is the simulator profile that wrote it.

    server = start_server(seed=0)          # listening at once, on a free port, in a thread
    client = anthropic.Anthropic(base_url=server.url, api_key="any")
    client.messages.create(model="claude-haiku-5-5", max_tokens=200, messages=[...])
    server.stop()

From a shell: `agentlab serve --log`, then `export ANTHROPIC_BASE_URL=http://127.0.0.1:8765
ANTHROPIC_API_KEY=any` in another, and the kit's `make_llm()` and any SDK client go there.

**Requests.** `POST /v1/messages` with `model`, `max_tokens`, `messages` (text, `tool_use` and
`tool_result` blocks), and optionally `system`, `tools`, and structured output as SDK 2.x sends it,
`output_config={"format": {"type": "json_schema", "schema": ...}}` (the simulator writes plans for a
plan schema; for another schema its reply may not fit, as a local model's may not). `"stream": true`
answers with server-sent events as the API does (`llm.wire`); `pace=` (real seconds per modelled
second; 0, the default, sends at once) paces a stream and delays an answer by its latency.
`cache_control` breakpoints are honoured as Claude honours them: the server remembers each prefix
it caches (`llm.cache.PromptCache`), so the same request sent again reads what the first wrote,
within the lifetime, on the server's clock (`clock=`, `time.monotonic` unless a test gives its
own). Any key is accepted, as `x-api-key` or `Authorization: Bearer`, unless the server was given
one (`api_key=`): then others get a 401.

**Models.** A simulator profile's name means that profile; a name containing "haiku" or "small"
means sim-small; any other sim-large. So the kit's default planner (claude-opus-...) plans on
sim-large and its executor (claude-haiku-...) runs on sim-small.

**Faults**, written `KIND[:SECONDS]` (429, 500, 529, broken, shape, slow: the README's table says
what each sends), hit every `every`-th request (`fault=`, `every=`), or one request that carries the
header `x-agentlab-fault` (which wins). The SDK retries 429, 500 and 529 itself (`max_retries`),
waiting what `retry-after` says: a header fault fails every try (the header goes out again with
each), `every=2` lets a retry through. `counts` tallies "requests", "answered" (by the simulator),
"faults", each status sent, and "connections" (a client sends request after request down one).

This module decides what to answer; the HTTP around it (each request read bounded in size and time,
connections kept open, a stream's events paced) is `serve_http`'s.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentlab.llm import request, wire
from agentlab.llm.anthropic import DEFAULT_EXECUTOR_MODEL, DEFAULT_PLANNER_MODEL
from agentlab.llm.base import Completion
from agentlab.llm.cache import PromptCache
from agentlab.llm.request import simulator_profile
from agentlab.llm.serve_http import Reply, ReplyServer, error_reply
from agentlab.llm.simulated import PROFILES, SimulatedLLM, with_cache
from agentlab.llm.wire import to_message
from agentlab.valid import number

FAULT_HEADER = "x-agentlab-fault"
FAULTS = ("429", "500", "529", "broken", "shape", "slow")
MAX_SLOW = 600.0  # seconds: the longest a slow reply may wait
MODELS = (DEFAULT_PLANNER_MODEL, DEFAULT_EXECUTOR_MODEL)  # listed besides the profiles
WRONG_KEY = "invalid x-api-key (this server wants its own key)"
ENDPOINTS = "this is agentlab serve, the simulator (not a real model): POST /v1/messages, GET /v1/models"


def start_server(port: int = 0, **options: Any) -> SimServer:
    """A `SimServer(port, **options)` listening on 127.0.0.1 (`port=0`: a free one; see `.url`),
    serving from a background thread until `.stop()` (or the end of a `with` block)."""
    return SimServer(port, **options).start()


@dataclass(frozen=True)
class ServerFault:
    """One fault: its kind (one of FAULTS) and its seconds (retry-after, or how long to wait)."""

    kind: str
    seconds: float | None = None


def parse_fault(text: str, where: str = "fault") -> ServerFault:
    """`"429"`, `"429:0.1"`, `"slow:3"` -> a ServerFault; ValueError names what is wrong."""
    kind, _, seconds = str(text).strip().partition(":")
    if kind not in FAULTS:
        raise ValueError(f"{where}: unknown fault {kind!r}; choose from {', '.join(FAULTS)} (KIND[:SECONDS])")
    if kind in ("broken", "shape") and seconds:
        raise ValueError(f"{where}: the fault {kind!r} takes no seconds")
    if not seconds:
        return ServerFault(kind, {"429": 1.0, "slow": 2.0}.get(kind))
    try:
        value = float(seconds)
    except ValueError:
        raise ValueError(f"{where}: seconds must be a number, got {seconds!r}") from None
    most = MAX_SLOW if kind == "slow" else 86400.0
    return ServerFault(kind, number(value, f"{where}: seconds", minimum=0, maximum=most))


class SimServer(ReplyServer):
    """The simulator (`SimulatedLLM(seed, error_rate)`) behind `POST /v1/messages` on 127.0.0.1.

    A `ReplyServer`: listening from construction, `start()` / `serve_forever()`, `stop()`, `log`.
    Bad settings raise ValueError; a port in use, OSError.
    """

    def __init__(
        self,
        port: int = 0,
        *,
        seed: int = 0,
        error_rate: float = 0.0,
        fault: str | None = None,
        every: int = 1,
        api_key: str | None = None,
        log: Callable[[str], None] | None = None,
        pace: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.llm = SimulatedLLM(seed=seed, error_rate=error_rate)
        self.cache = PromptCache(clock)  # what it cached, remembered, as Claude's cache is
        self.pace = number(pace, "pace", minimum=0, maximum=10)
        self.fault = parse_fault(fault) if fault else None
        self.every = number(every, "every", minimum=1, whole=True)
        self.api_key, self.log = api_key, log
        super().__init__(number(port, "port", minimum=0, maximum=65535, whole=True))

    def __repr__(self) -> str:
        fault = f", fault={self.fault}, every={self.every}" if self.fault else ""
        return f"SimServer({self.url!r}, seed={self.llm.seed}, error_rate={self.llm.error_rate}{fault})"

    # --- one request ------------------------------------------------------------------------

    def answer(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, str, Reply]:
        """The reply to one POST: (its number, a summary of the request, the Reply)."""
        with self._lock:
            self.counts["requests"] += 1
            n = self.counts["requests"]
        body, fault, reply = None, None, None
        if path.split("?")[0].rstrip("/") != "/v1/messages":
            reply = error_reply(404, "not_found_error", f"no endpoint POST {path}; {ENDPOINTS}")
        elif self.api_key is not None and self.api_key not in _keys(headers):
            reply = error_reply(401, "authentication_error", WRONG_KEY)
        else:
            body, fault, reply = _read(raw, headers)
            if reply is None and fault is None and self.fault is not None and n % self.every == 0:
                fault = self.fault
        if reply is None and fault is not None:
            if fault.kind != "slow":
                reply = _fault_reply(fault)
            elif self._stopping.wait(fault.seconds):
                reply = error_reply(503, "api_error", "the server is stopping")
        reply = reply or self._complete(body)
        with self._lock:
            self.counts[str(reply.status)] += 1
            self.counts["faults"] += fault is not None
        return n, request.summary(body, headers), reply

    def models(self, path: str, headers: Mapping[str, str]) -> Reply:
        """A GET: the models it answers as, as the API lists them (`GET /v1/models`, and one
        by id); 404 elsewhere."""
        where = path.split("?")[0].rstrip("/")
        if self.api_key is not None and self.api_key not in _keys(headers):
            return error_reply(401, "authentication_error", WRONG_KEY)
        listed = [_model(name) for name in (*PROFILES, *MODELS)]
        if where == "/v1/models":
            ends = {"first_id": listed[0]["id"], "last_id": listed[-1]["id"]}
            page = {"data": listed, "has_more": False, **ends}
            return Reply(200, json.dumps(page).encode(), "200 the model list")
        if found := [m for m in listed if where == f"/v1/models/{m['id']}"]:
            return Reply(200, json.dumps(found[0]).encode(), f"200 the model {where[11:]}")
        return error_reply(404, "not_found_error", f"no endpoint GET {path}; {ENDPOINTS}")

    def _complete(self, body: Mapping[str, Any]) -> Reply:
        """The simulator's answer to a valid request, as a Messages API message."""
        try:
            with self._lock:  # one at a time, so a mistake the simulator made is this request's
                made = len(self.llm.injected)
                completion = self.llm.complete(**request.to_request(body))
                mistake = self.llm.injected[made].kind if len(self.llm.injected) > made else ""
                self.counts["answered"] += 1
        except Exception as e:  # the simulator could not read this request: say so, keep serving
            return error_reply(500, "api_error", f"the simulator failed: {type(e).__name__}: {e!s:.200}")
        usage = with_cache(completion.usage, body, completion.model, self.cache)
        completion = replace(completion, usage=usage)
        asked = {k: v for k, v in body.items() if k != "stream"}  # streamed or not, the same message
        digest = hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:24]
        message = to_message(completion, f"msg_sim_{digest}")
        headers = (("request-id", f"req_sim_{digest}"),) + (("x-agentlab-mistake", mistake),) * bool(mistake)
        note = _note(completion, mistake)
        if body.get("stream"):
            profile = PROFILES[completion.model]
            sent = tuple(wire.events(message, profile.overhead, profile.tokens_per_second))
            return Reply(200, b"", note, "text/event-stream", headers, sent)
        self._stopping.wait(completion.latency * self.pace)
        return Reply(200, json.dumps(message).encode(), note, headers=headers)


# --- details ------------------------------------------------------------------------------------


def _model(name: str) -> dict[str, Any]:
    """A model as `GET /v1/models` lists one; its display name says which profile answers."""
    said = f"{name} (the agentlab simulator's {simulator_profile(name)})"
    return {"type": "model", "id": name, "display_name": said, "created_at": "2026-01-01T00:00:00Z"}


_PORTAL = b"<!DOCTYPE html><html><head><title>Sign in to Wi-Fi</title></head><body><h1>Welcome!</h1>\
<p>Accept the terms of use to continue to the internet.</p></body></html>"
_WRONG_SHAPE = b'{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", \
"content": "Hello! This is not the Messages API."}, "finish_reason": "stop"}]}'


def _fault_reply(fault: ServerFault) -> Reply:
    """The reply a fault sends in place of an answer."""
    if fault.kind == "broken":
        return Reply(200, _PORTAL, "fault broken: 200 with an HTML page", "text/html; charset=utf-8")
    if fault.kind == "shape":
        return Reply(200, _WRONG_SHAPE, "fault shape: 200 with JSON of the wrong shape")
    kind, message = {
        "429": ("rate_limit_error", "Rate limited (a fault injected by agentlab serve)"),
        "500": ("api_error", "Internal server error (a fault injected by agentlab serve)"),
        "529": ("overloaded_error", "Overloaded (a fault injected by agentlab serve)"),
    }[fault.kind]
    after = f", retry-after {fault.seconds:g} s" if fault.seconds is not None else ""
    return error_reply(int(fault.kind), kind, message, f"fault {fault.kind}{after}", fault.seconds)


def _read(raw: bytes, headers: Mapping[str, str]) -> tuple[Any, ServerFault | None, Reply | None]:
    """A request's body, the fault its header asks for, and a 400 if either is not usable."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, or nested too deep
        return None, None, error_reply(400, "invalid_request_error", f"the body is not JSON: {e!s:.100}")
    try:
        fault = parse_fault(headers[FAULT_HEADER], FAULT_HEADER) if FAULT_HEADER in headers else None
    except ValueError as e:
        return body, None, error_reply(400, "invalid_request_error", str(e))
    said = request.problem(body)
    return body, fault, error_reply(400, "invalid_request_error", said) if said else None


def _keys(headers: Mapping[str, str]) -> set[str]:
    """The keys a request presents: its x-api-key, and its Authorization bearer token."""
    bearer = headers.get("authorization", "")
    return {headers.get("x-api-key", ""), bearer[7:] if bearer.lower().startswith("bearer ") else ""} - {""}


def _note(completion: Completion, mistake: str) -> str:
    """The log's few words on an answer: its tool calls or the start of its text, tokens, a mistake."""
    if completion.tool_calls:
        said = ", ".join(f"{c.name}({json.dumps(dict(c.args))[:40]})" for c in completion.tool_calls)
    else:
        text = " ".join(completion.text.split())
        said = json.dumps(text[:60] + ("..." if len(text) > 60 else ""))
    u, slip = completion.usage, f" [simulator mistake: {mistake}]" if mistake else ""
    return f"200 {completion.stop_reason}: {said} ({u.input_tokens} in, {u.output_tokens} out){slip}"
