"""Record a model's calls to a file once; replay them later, offline and for free.

An instructor runs a notebook against real Claude with `RecordingLLM` wrapped around
it; the class then runs the same notebook on `ReplayLLM`, which answers each request
with the completion recorded for it. A request is found by a hash of everything that
shapes the answer (system, messages, tools, schema, model, max_tokens), so a notebook
that asks something new gets a clear error instead of a wrong answer.

A replay answers like the simulator: the same request always gets the same answer (the
first one recorded for it), in any order and from any thread. Two parallel steps that send
the same request therefore get the same reply, and a replayed run is the same run every
time, at any number of workers. (Handing out a request's recorded answers in turn would
give them in whatever order the threads arrive.)

The file is JSON Lines, one call per line: the key, the request, the completion.
Requests and completions carry no credentials; every line goes through `base.redact`
before it is written, as a second line of defence.

A recording may also hold calls as they went over the wire: a Messages API request body and
the message that answered it (`{"key", "request", "message", ...}`, keyed by `wire_key`), as
`agentlab gateway recordings export` writes a learner's session. The gateway never sees the
kit's own request (a model alias like "sim-large", a schema before `api_schema`), only what the
kit's Claude backend sent; so a ReplayLLM answers such calls through that same backend
(`AnthropicLLM`), whose requests go to the recording instead of a server: the request the kit
would send is built exactly as it was when recorded, and found by its wire key. The planner and
executor models are the ones the recording used (the one model its plan requests name, and the
one other its remaining requests name), else the configured ones (AGENTLAB_PLANNER_MODEL /
AGENTLAB_EXECUTOR_MODEL). A call the gateway cut short (`"cut"`) replays as the error it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentlab.llm.base import LLM, Completion, Message, ModelError, Tool, ToolCall, brief, redact
from agentlab.llm.usage import recorded_usage
from agentlab.valid import hash_text, utf8_json


def request_of(
    system: str,
    messages: Sequence[Message],
    tools: Sequence[Tool],
    schema: Mapping[str, Any] | None,
    model: str | None,
    max_tokens: int,
) -> dict[str, Any]:
    """A request as plain JSON data: what the recording stores and hashes."""
    return _plain(
        {
            "system": system,
            "messages": messages,
            "tools": [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
            ],
            "schema": schema,
            "model": model,
            "max_tokens": max_tokens,
        }
    )


def request_key(request: Mapping[str, Any]) -> str:
    """A stable hash of a request: the same content gives the same key on every machine."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(hash_text(canonical)).hexdigest()[:24]


def wire_key(body: Mapping[str, Any]) -> str:
    """The key of a Messages API request body as sent over the wire: streamed or not, the same
    request (a learner's stream replays as the message it assembled to)."""
    return request_key({k: v for k, v in body.items() if k != "stream"})


def completion_to_dict(c: Completion) -> dict[str, Any]:
    return {
        "text": c.text,
        "model": c.model,
        "backend": c.backend,
        "usage": {
            "input_tokens": c.usage.input_tokens,
            "output_tokens": c.usage.output_tokens,
            "cache_read_tokens": c.usage.cache_read_tokens,
            "cache_write_tokens": c.usage.cache_write_tokens,
            "cache_write_1h_tokens": c.usage.cache_write_1h_tokens,
        },
        "latency": c.latency,
        "data": _plain(c.data),
        "tool_calls": [{"id": t.id, "name": t.name, "args": _plain(t.args)} for t in c.tool_calls],
        "stop_reason": c.stop_reason,
    }


def completion_from_dict(d: Mapping[str, Any], backend: str) -> Completion:
    return Completion(
        text=d["text"],
        model=d["model"],
        backend=backend,
        usage=recorded_usage(d["usage"]),
        latency=d["latency"],
        data=d["data"],
        tool_calls=tuple(ToolCall(t["id"], t["name"], t["args"]) for t in d["tool_calls"]),
        stop_reason=d["stop_reason"],
    )


def typed_path(value: str, env: Mapping[str, str]) -> Path:
    """The file an environment variable (AGENTLAB_RECORD, AGENTLAB_REPLAY) names, as the person who
    typed it meant it: relative to the folder the command was typed in. A kernel runs in its
    notebook's folder (notebooks/), but it inherits the shell's PWD, which says where that was;
    without one, the process's own folder."""
    return (typed_in(env) / Path(value).expanduser()).absolute()


def typed_in(env: Mapping[str, str]) -> Path:
    """The folder a command was typed in: the shell's PWD, or this process's folder without one."""
    shell = env.get("PWD", "")
    return Path(shell) if os.path.isabs(shell) and os.path.isdir(shell) else Path.cwd()


def recording_from_env(llm: LLM, env: Mapping[str, str]) -> LLM:
    """`llm`, recording every call to the file AGENTLAB_RECORD names (when it names one)."""
    record = env.get("AGENTLAB_RECORD", "").strip()
    return RecordingLLM(llm, typed_path(record, env)) if record else llm


def replay_from_env(env: Mapping[str, str]) -> ReplayLLM:
    """The replay of the recording AGENTLAB_REPLAY names; a missing one says where it was looked for."""
    value = env.get("AGENTLAB_REPLAY", "").strip()
    if not value:
        raise ValueError("the replay backend needs a recording: set AGENTLAB_REPLAY=path/to/calls.jsonl")
    path = typed_path(value, env)
    if not path.exists() and not Path(value).is_absolute():
        raise FileNotFoundError(
            f"no recording at {path} (AGENTLAB_REPLAY={value} is read from {typed_in(env)}, where the "
            "command was typed); record one first with AGENTLAB_RECORD"
        )
    return ReplayLLM(path)


class RecordingLLM:
    """Wraps any LLM and appends each call (request and completion) to `path`."""

    def __init__(self, llm: LLM, path: str | os.PathLike):
        self.llm = llm
        self.path = Path(path).absolute()  # errors name the whole path: a kernel runs in another folder
        self.backend = llm.backend
        self._lock = threading.Lock()

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[Tool] = (),
        schema: Mapping[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        completion = self.llm.complete(
            system=system, messages=messages, tools=tools, schema=schema, model=model, max_tokens=max_tokens
        )
        request = request_of(system, messages, tools, schema, model, max_tokens)
        key, answer = request_key(request), completion_to_dict(completion)
        entry = {"key": key, "request": request, "completion": answer}
        line = utf8_json(json.loads(redact(json.dumps(entry, ensure_ascii=False))))  # redacted, then UTF-8
        try:
            with self._lock, self.path.open("ab") as f:
                f.write(line + b"\n")
        except OSError as e:  # the call was paid: the error carries it, so it is counted
            said = f"could not record the call to {self.path}: {e.strerror or e}"
            raise ModelError(said, [completion]) from None
        return completion


class ReplayLLM:
    """Answers from a recording: each request with the first answer recorded for it, every
    time it is asked (so a replay does not depend on thread timing); a request never
    recorded is a ModelError."""

    backend = "replay"

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).absolute()
        if not self.path.exists():
            raise FileNotFoundError(
                f"no recording at {self.path}; record one first (see agentlab.llm.replay)"
            )
        self._answers: dict[str, Completion] = {}
        self._wire: dict[str, dict[str, Any]] = {}  # wire key -> {"message", "latency", "cut"}
        self._requests: list[dict[str, Any]] = []  # the wire requests, for the models they name
        self._calls = 0
        self.recorded_from: set[str] = set()
        with self.path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    if "message" in entry:  # a call as it went over the wire (the gateway's)
                        original = "anthropic"
                        wired = {"message": dict(entry["message"]), "latency": float(entry.get("latency", 0))}
                        self._wire.setdefault(str(entry["key"]), {**wired, "cut": str(entry.get("cut", ""))})
                        self._requests.append(entry["request"])
                    else:
                        original = entry["completion"]["backend"]
                        completion = completion_from_dict(entry["completion"], f"replay of {original}")
                        self._answers.setdefault(entry["key"], completion)
                except (ValueError, KeyError, TypeError) as e:  # not JSON, or not as the kit records
                    raise ValueError(f"{self.path}, line {number}: not a recorded call ({e!r})") from None
                self.recorded_from.add(original)
                self._calls += 1
        self._claude: Any = None  # the Claude backend that sends wire calls to the recording
        self._local = threading.local()
        self._claude_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # to another process (a Dask worker): no lock, no client
        return {**vars(self), "_claude": None, "_local": None, "_claude_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._local, self._claude_lock = threading.local(), threading.Lock()

    def __len__(self) -> int:
        """How many calls the recording holds."""
        return self._calls

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[Tool] = (),
        schema: Mapping[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        request = request_of(system, messages, tools, schema, model, max_tokens)
        key = request_key(request)
        if key not in self._answers and self._wire:
            asked = {"system": system, "messages": messages, "tools": tools, "schema": schema}
            return self._over_the_wire(**asked, model=model, max_tokens=max_tokens)
        if key not in self._answers:
            raise ModelError(
                f"this request is not in the recording {self.path} ({len(self)} calls recorded): "
                f"{summarize(request)} [key {key}]. Record it with AGENTLAB_RECORD on a live backend."
            )
        return self._answers[key]

    def _over_the_wire(self, **call: Any) -> Completion:
        """The call answered by the Claude backend, its request sent to the recording."""
        with self._claude_lock:
            if self._claude is None:
                import httpx2

                from agentlab.llm.anthropic import AnthropicLLM

                http = httpx2.Client(transport=httpx2.MockTransport(self._wire_answer))
                self._claude = AnthropicLLM(
                    *recorded_models(self._requests),
                    base_url="http://recording.invalid",
                    api_key="replay",
                    http_client=http,
                    max_retries=0,
                )
        self._local.found, self._local.missing = None, ""
        try:
            completion = self._claude.complete(**call)
        except ModelError:
            if self._local.missing:
                raise ModelError(self._local.missing) from None
            raise
        found = self._local.found or {}
        return replace(completion, backend="replay of anthropic", latency=found.get("latency", 0.0))

    def _wire_answer(self, sent: Any) -> Any:
        """The recording's answer to one request the Claude backend sent (an httpx2 request)."""
        import httpx2

        body = json.loads(sent.content)
        key = wire_key(body)
        found = self._wire.get(key)
        if found is None or found["cut"]:
            said = (
                f"this call was cut short when it was recorded ({found['cut']}) [key {key}]"
                if found
                else f"this request is not in the recording {self.path} ({len(self)} calls recorded): "
                f"{wire_summary(body)} [wire key {key}]. Record it through the gateway, or with "
                "AGENTLAB_RECORD on a live backend."
            )
            self._local.missing = said
            error = {"type": "error", "error": {"type": "not_found_error", "message": said}}
            return httpx2.Response(404, json=error, headers={"x-should-retry": "false"})
        self._local.found = found
        return httpx2.Response(200, json=found["message"])


def recorded_models(requests: Sequence[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """(planner, executor) models a wire recording used: the one model its plan requests (those
    with a schema) name, and the one other model the rest name; None where that is not one."""

    def planned(request: Mapping[str, Any]) -> bool:
        return bool((request.get("output_config") or {}).get("format"))

    plans = {r.get("model") for r in requests if planned(r)}
    planner = plans.pop() if len(plans) == 1 else None
    rest = {r.get("model") for r in requests if not planned(r)} - {planner}
    executor = rest.pop() if len(rest) == 1 else None
    return tuple(m if isinstance(m, str) else None for m in (planner, executor))  # type: ignore[return-value]


def wire_summary(body: Mapping[str, Any], width: int = 60) -> str:
    """A one-line description of a Messages API request body, for error messages."""
    system = body.get("system") or ""
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    messages = [{**m, "content": m.get("content", "")} for m in body.get("messages") or []]
    tools = [{"name": t.get("name", "?")} for t in body.get("tools") or []]
    schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
    kit_form = {"model": body.get("model"), "system": system, "messages": messages, "tools": tools}
    return summarize({**kit_form, "schema": schema}, width)


def summarize(request: Mapping[str, Any], width: int = 60) -> str:
    """A one-line description of a request, for error messages."""
    last = request["messages"][-1] if request["messages"] else {"role": "-", "content": ""}
    content = last["content"]
    if not isinstance(content, str):
        content = " ".join(str(b.get("text") or b.get("content") or b.get("type")) for b in content)
    parts = [
        f"model={request['model']}",
        f"system={brief(request['system'], width)!r}",
        f"last {last['role']} message={brief(content, width)!r}",
    ]
    if request["tools"]:
        parts.append("tools=" + ",".join(t["name"] for t in request["tools"]))
    if request["schema"] is not None:
        parts.append("with a schema")
    return ", ".join(parts)


def _plain(value: Any) -> Any:
    """Mappings to dicts and sequences to lists, so any request serialises the same way."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
