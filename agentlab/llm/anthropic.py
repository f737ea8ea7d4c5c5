"""Real Claude models through the official `anthropic` SDK.

`AnthropicLLM.complete` answers the kit's one request shape (`base.LLM`) with one Messages API
request, and returns what the model said:

- a plan request (a `schema` is given) uses structured output: the schema goes in
  `output_config`. The reply comes back as it is, with `data` parsed when the text is JSON;
  whether it is a good plan is the planner's to judge (and to re-ask), the same on every
  backend, because Anthropic-compatible local servers (Ollama, llama.cpp, LM Studio) may ignore
  the schema;
- an executor turn (`tools` are given) uses native tool use: each `tool_use` block comes back as
  a `ToolCall`;
- retries on 429/5xx and timeouts are the SDK's own (`max_retries`, `timeout`), but no wait is
  longer than `max_wait` (`MAX_WAIT`, 30 s): a server that asks for more (`retry-after: 3600`)
  gets no retry and the call fails saying so. An API error that survives the retries, and a 200
  whose body is not a message (a captive portal's login page, say), become a short `ModelError`
  naming the server and what came back.

Prompt caching (`cache="5m"`, the default, or `"1h"`; None turns it off) marks the kit's two
cache breakpoints, the system prompt and the conversation so far (`llm.cache.mark`), and the
usage read back counts cache reads and 5-minute and 1-hour writes apart from fresh input.

An answer the server completes after the kit gave up waiting (a timeout, a connection cut)
is paid for at the API all the same, and cannot be counted here: no reply came back to count.
A run's usage is then below the bill, by those calls; the console's usage page has them.

With a `base_url` that is not Anthropic's, the key also goes in an `x-api-key` header, which
some compatible servers need. Every message and description built here goes through
`base.redact`, so no key or URL password is ever printed. The SDK client is created on the
first call: importing this module or building an `AnthropicLLM` needs no key and no network.
"""

from __future__ import annotations

import json
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from agentlab.llm.api_errors import ASKED_WAIT, MAX_WAIT, describe_api_error, is_anthropic, retry_after
from agentlab.llm.base import (
    Completion,
    Message,
    ModelError,
    Tool,
    ToolCall,
    brief,
    redact,
    remember_secret,
)
from agentlab.llm.cache import control, mark
from agentlab.llm.usage import api_usage
from agentlab.valid import MAX_TIMEOUT, loads, number

# Defaults checked against Anthropic's models overview on 2026-11-21: a strong model
# writes the plans, a fast and cheap one runs the many executor turns.
DEFAULT_PLANNER_MODEL = "claude-opus-5-5"
DEFAULT_EXECUTOR_MODEL = "claude-haiku-5-5"
ANTHROPIC_API = "https://api.anthropic.com"


# Calls written for the simulator may name its profiles; on Claude they mean the two tiers (the
# simulator's planner-trained model stands for the model the kit plans with).
SIMULATOR_TIERS = {"sim-large": "planner", "sim-small": "executor", "sim-planner": "planner"}

_KEYS: weakref.WeakKeyDictionary[AnthropicLLM, str] = weakref.WeakKeyDictionary()  # keys given in code


def configured_models(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(planner model, executor model) from AGENTLAB_PLANNER_MODEL / AGENTLAB_EXECUTOR_MODEL,
    falling back to the defaults above."""
    env = os.environ if env is None else env
    planner = env.get("AGENTLAB_PLANNER_MODEL", "").strip() or DEFAULT_PLANNER_MODEL
    executor = env.get("AGENTLAB_EXECUTOR_MODEL", "").strip() or DEFAULT_EXECUTOR_MODEL
    return planner, executor


class AnthropicLLM:
    """Claude (or any server speaking Anthropic's Messages API) behind the kit's `LLM` interface.

    Which model answers a call: `model=` on the call if given (the simulator's names
    "sim-large" / "sim-small" stand for the planner / executor model, "sim-planner" for the
    planner); otherwise the
    planner model for requests with a schema (plans, replans) and the executor model
    for everything else. `client` takes a ready SDK client (e.g. `anthropic.AnthropicBedrock()`);
    `http_client` an `httpx2.Client` for the one this class builds (tests use a mock transport).
    `effort` is sent as `output_config.effort` ("low" keeps the kit's small tasks cheap and
    fast; None leaves the model's default). `max_wait` caps the wait before a retry (above).
    `cache` is the prompt-cache lifetime asked for ("5m", "1h"), or None for no caching.
    """

    backend = "anthropic"

    def __init__(
        self,
        planner_model: str | None = None,
        executor_model: str | None = None,
        *,
        client: Any = None,
        http_client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
        max_wait: float = MAX_WAIT,
        effort: str | None = "low",
        cache: str | None = "5m",
    ):
        default_planner, default_executor = configured_models()
        self.planner_model = planner_model or default_planner
        self.executor_model = executor_model or default_executor
        self.base_url = base_url
        self.max_retries = number(max_retries, "max_retries", minimum=0, whole=True)
        self.timeout = number(timeout, "timeout", above=0, maximum=MAX_TIMEOUT,
                              must_be=f"a number of seconds in (0, {MAX_TIMEOUT:g}]")
        self.max_wait = number(max_wait, "max_wait", minimum=0, maximum=MAX_TIMEOUT,
                               must_be=f"a number of seconds in [0, {MAX_TIMEOUT:g}]")
        self.effort = effort
        self.cache = cache if cache is None else (control(cache) and cache)  # ValueError if unknown
        if api_key is not None:
            _KEYS[self] = api_key  # not a field: `vars` does not show it, a pickle does not carry it
        remember_secret(api_key)  # so that no message can show it, whatever it looks like
        self._http_client = http_client
        self._client = client
        if client is not None:
            for secret in (getattr(client, "api_key", None), getattr(client, "auth_token", None)):
                remember_secret(secret if isinstance(secret, str) else None)  # a key only the client holds
            self._watch(client)
        # Assistant turns that carried thinking blocks, exactly as received, by their first
        # tool_use id: the API needs them echoed unchanged when the tool results go back.
        self._raw_turns: dict[str, list[dict[str, Any]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle carries to another process (a Dask worker): the settings, never the SDK
        client (it holds a lock, and the key) nor a key given in code. The worker builds its own
        client on its first call, from its own environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL):
        a key never crosses the network, and a `client=` given here does not travel either."""
        return {**vars(self), "_client": None, "_http_client": None}

    def __repr__(self) -> str:  # never shows the key, nor a password in the URL
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        models = f"planner={self.planner_model!r}, executor={self.executor_model!r}"
        return redact(f"AnthropicLLM({models}{where})")

    # --- the one public call ----------------------------------------------------

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
        """One request, one answer: what the model said (with a `schema`, `data` is the reply
        parsed as JSON when it is JSON, else None; judging it is the caller's job). Failures
        are a ModelError."""
        model = self._pick_model(model, schema)
        started = time.perf_counter()
        response = self._send(self._request(system, messages, tools, schema, model, max_tokens), model)
        latency = time.perf_counter() - started
        try:
            completion = self._read(loads(response.text, "the body"), model, latency)
        except ValueError as problem:
            where = redact(str(response.request.url))
            raise ModelError(
                f"{model}: {where} answered {response.status_code} but not with a message ({problem}): "
                f"{brief(response.text)}"
            ) from None
        if schema is not None and completion.stop_reason != "max_tokens":
            with suppress(ValueError):
                completion = replace(completion, data=loads(completion.text, "the reply"))
        return completion

    # --- pieces -----------------------------------------------------------------

    def _pick_model(self, model: str | None, schema: Mapping[str, Any] | None) -> str:
        if model and model not in SIMULATOR_TIERS:
            return model
        tier = SIMULATOR_TIERS[model] if model else ("planner" if schema is not None else "executor")
        return self.planner_model if tier == "planner" else self.executor_model

    def _request(self, system, messages, tools, schema, model, max_tokens) -> dict[str, Any]:
        """The Messages API request body for one call."""
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": self._echo_raw_turns(messages),
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                for t in tools
            ]
        output_config: dict[str, Any] = {}
        if schema is not None:
            output_config["format"] = {"type": "json_schema", "schema": api_schema(schema)}
        if self.effort:
            output_config["effort"] = self.effort
        if output_config:
            request["output_config"] = output_config
        return mark(request, self.cache) if self.cache else request

    def _send(self, request: dict[str, Any], model: str) -> Any:
        """Send the request through the SDK (its retries included): the raw HTTP response of a
        2xx answer; every SDK error becomes a one-line ModelError naming the server."""
        import anthropic  # the SDK; imported here so `import agentlab` stays light

        try:
            return self.client.messages.with_raw_response.create(**request).http_response
        except anthropic.APITimeoutError:
            seconds, retries = _seconds(self.client.timeout), self.client.max_retries
            raise ModelError(
                f"{model}: no answer from {self.server} within {seconds:g} s "
                f"({retries} {'retry' if retries == 1 else 'retries'})"
            ) from None
        except anthropic.APIConnectionError as e:
            raise ModelError(f"{model}: could not connect to {self.server}: {brief(e.message)}") from None
        except anthropic.APIStatusError as e:
            raise ModelError(describe_api_error(model, e, self.max_wait)) from None
        except anthropic.CredentialsError as e:  # a credentials profile named but unreadable
            raise ModelError(f"could not load Anthropic credentials: {brief(str(e))}") from None
        except TypeError as e:  # the SDK found no key when it came to send the request
            if "authentication" not in str(e):
                raise
            raise ModelError(
                "no API key: set ANTHROPIC_API_KEY (or AGENTLAB_BACKEND=simulated to stay offline)"
            ) from None

    def _read(self, body: Any, model: str, latency: float) -> Completion:
        """A Messages API body as a Completion; ValueError says how a body is not a message."""
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            raise ValueError("no 'content' list")
        text, calls = [], []
        for block in body["content"]:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
            elif kind == "tool_use" and _is_call(block):
                calls.append(ToolCall(block["id"], block["name"], dict(block["input"])))
            elif kind in ("text", "tool_use") or not isinstance(kind, str):
                raise ValueError(f"a content block that is not one: {brief(json.dumps(block), 60)}")
        if calls and any(b["type"] in ("thinking", "redacted_thinking") for b in body["content"]):
            self._raw_turns[calls[0].id] = body["content"]
        usage = api_usage(body.get("usage"))
        stop, named = body.get("stop_reason"), body.get("model")
        return Completion(
            text="".join(text),
            model=named if isinstance(named, str) and named else model,
            backend=self.backend,
            usage=usage,
            latency=latency,
            tool_calls=tuple(calls),
            stop_reason=stop if isinstance(stop, str) else "end_turn",
        )

    def _echo_raw_turns(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The messages to send: plain copies, except that an assistant turn we received with
        thinking blocks goes back exactly as received (the API rejects it otherwise)."""
        out = []
        for m in messages:
            content = m["content"]
            if m["role"] == "assistant" and isinstance(content, list):
                ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
                if ids and ids[0] in self._raw_turns:
                    content = self._raw_turns[ids[0]]
            out.append({"role": m["role"], "content": content})
        return out

    @property
    def server(self) -> str:
        """The server the calls go to, as it may be printed (no credentials)."""
        where = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API
        if self._client is not None:
            where = str(getattr(self._client, "base_url", "") or where)
        return redact(where.rstrip("/"))

    @property
    def client(self) -> Any:
        """The SDK client, built on first use (so no key is needed before the first call)."""
        if self._client is None:
            import anthropic

            api_key = _KEYS.get(self)
            local = not is_anthropic(self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API)
            if api_key is None and local:
                api_key = os.environ.get("ANTHROPIC_API_KEY") or "local-server"  # some key, any value
            http = self._http_client or anthropic.DefaultHttpxClient()
            self._client = anthropic.Anthropic(
                api_key=api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                http_client=http,
                default_headers={"x-api-key": api_key} if local and api_key else None,
            )
            self._watch(self._client)
        return self._client

    def _watch(self, client: Any) -> None:
        """Have the SDK client's HTTP client show us every response before the SDK sees it."""
        http = getattr(client, "_client", None)  # the httpx2.Client inside the SDK's client
        hooks = getattr(http, "event_hooks", None)
        if isinstance(hooks, dict):
            http.event_hooks = {**hooks, "response": [*hooks.get("response", []), self._refuse_long_waits]}

    def _refuse_long_waits(self, response: Any) -> None:
        """On an error response, before the SDK decides to retry: a retry-after longer than
        `max_wait` turns the retry off (`x-should-retry: false`), so the SDK never sleeps it."""
        asked = retry_after(response.headers)
        if response.status_code >= 400 and asked is not None and asked > self.max_wait:
            response.headers["x-should-retry"] = "false"
            response.headers[ASKED_WAIT] = f"{asked:g}"


# --- helpers, each usable (and tested) on its own --------------------------------


def api_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema in the strict subset the API accepts for structured output.

    The SDK's `transform_schema` closes every object (`additionalProperties: false`) and moves
    keywords the API does not enforce (minLength, minimum, ...) into descriptions. The full
    schema, and everything a schema cannot say, is checked by whoever reads the reply (for a
    plan, `planners.LLMPlanner`).
    """
    from anthropic import transform_schema

    return transform_schema({k: v for k, v in schema.items() if k != "$schema"})


def _seconds(timeout: Any) -> float:
    """A client's timeout in seconds: a number, or an httpx2.Timeout (its read timeout)."""
    return timeout if isinstance(timeout, int | float) else getattr(timeout, "read", None) or 0.0


def _is_call(block: Mapping[str, Any]) -> bool:
    return (
        isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
        and isinstance(block.get("input"), dict)
    )
