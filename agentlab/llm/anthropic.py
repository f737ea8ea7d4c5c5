"""Real Claude models through the official `anthropic` SDK.

`AnthropicLLM.complete` answers the kit's one request shape (`base.LLM`) with a
Messages API call:

- a plan request (a `schema` is given) uses structured output: the schema goes in
  `output_config`, and the reply is parsed and checked against it here too, because
  Anthropic-compatible local servers (Ollama, llama.cpp, LM Studio) may ignore it. A
  reply that does not fit is re-asked with the validation error, a bounded number of
  times, then the call fails with a `ModelError` saying why;
- an executor turn (`tools` are given) uses native tool use: each `tool_use` block
  comes back as a `ToolCall`;
- retries on 429/5xx and timeouts are the SDK's own (`max_retries`, `timeout`); an
  API error that survives them becomes a `ModelError` naming the status and message.

The SDK client is created on the first call, so importing this module or building
an `AnthropicLLM` never needs a key or the network.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agentlab.llm.base import Completion, Message, ModelError, Tool, ToolCall, Usage

# Defaults checked against Anthropic's models overview on 2026-11-21: a strong model
# writes the plans, a fast and cheap one runs the many executor turns.
DEFAULT_PLANNER_MODEL = "claude-opus-5-5"
DEFAULT_EXECUTOR_MODEL = "claude-haiku-5-5"

# Calls written for the simulator may name its profiles; on Claude they mean the two tiers.
SIMULATOR_TIERS = {"sim-large": "planner", "sim-small": "executor"}

# A short hint for the errors a learner is most likely to meet.
_HINTS = {
    401: "check ANTHROPIC_API_KEY",
    403: "this key may not have access to that model",
    404: "check the model name (AGENTLAB_PLANNER_MODEL / AGENTLAB_EXECUTOR_MODEL)",
    429: "rate limited even after retries; wait a minute or lower the number of workers",
    529: "the API is overloaded; try again shortly",
}


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
    "sim-large" / "sim-small" stand for the planner / executor model); otherwise the
    planner model for requests with a schema (plans, replans) and the executor model
    for everything else. `client` takes a ready SDK client (e.g. `anthropic.AnthropicBedrock()`);
    `http_client` an `httpx2.Client` for the one this class builds (tests use a mock transport).
    `effort` is sent as `output_config.effort` ("low" keeps the kit's small tasks cheap and
    fast; None leaves the model's default).
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
        schema_retries: int = 2,
        effort: str | None = "low",
    ):
        default_planner, default_executor = configured_models()
        self.planner_model = planner_model or default_planner
        self.executor_model = executor_model or default_executor
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.schema_retries = schema_retries
        self.effort = effort
        self._api_key = api_key
        self._http_client = http_client
        self._client = client
        # Assistant turns that carried thinking blocks, exactly as received, by their first
        # tool_use id: the API needs them echoed unchanged when the tool results go back.
        self._raw_turns: dict[str, list[dict[str, Any]]] = {}

    def __repr__(self) -> str:  # never shows the key
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"AnthropicLLM(planner={self.planner_model!r}, executor={self.executor_model!r}{where})"

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
        """One model answer; with a `schema`, an answer whose `data` fits it (or a ModelError)."""
        model = self._pick_model(model, schema)
        history = list(messages)
        usage, latency, problem = Usage(), 0.0, ""
        attempts = self.schema_retries + 1
        made: list[Completion] = []  # every reply paid for, in case none fits
        for _ in range(attempts):
            completion = self._call(system, history, tools, schema, model, max_tokens)
            made.append(completion)
            usage, latency = usage + completion.usage, latency + completion.latency
            if schema is None:
                return completion
            try:
                data = check_json(completion.text, schema)
            except ValueError as e:
                problem = str(e)
                if completion.stop_reason == "max_tokens":
                    problem += f" (the reply was cut off at max_tokens={max_tokens})"
                history += [
                    {"role": "assistant", "content": completion.text or "(empty reply)"},
                    {"role": "user", "content": reask_message(problem)},
                ]
                continue
            return replace(completion, usage=usage, latency=latency, data=data)
        raise ModelError(
            f"{model} did not return JSON matching the schema after {attempts} attempt(s); "
            f"last problem: {problem}",
            calls=made,
        )

    # --- pieces -----------------------------------------------------------------

    def _pick_model(self, model: str | None, schema: Mapping[str, Any] | None) -> str:
        if model and model not in SIMULATOR_TIERS:
            return model
        tier = SIMULATOR_TIERS[model] if model else ("planner" if schema is not None else "executor")
        return self.planner_model if tier == "planner" else self.executor_model

    def _call(self, system, messages, tools, schema, model, max_tokens) -> Completion:
        """One request to the API: the reply as a Completion, SDK errors as ModelError."""
        import anthropic  # the SDK; imported here so `import agentlab` stays light

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

        started = time.perf_counter()
        try:
            message = self.client.messages.create(**request)
        except anthropic.APITimeoutError:
            raise ModelError(
                f"{model}: no answer within {self.timeout:g} s, {self.max_retries} retries included"
            ) from None
        except anthropic.APIConnectionError as e:
            where = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "the Anthropic API"
            raise ModelError(f"{model}: could not connect to {where}: {e.message}") from None
        except anthropic.APIStatusError as e:
            raise ModelError(describe_api_error(model, e)) from None
        except anthropic.CredentialsError as e:  # a credentials profile named but unreadable
            raise ModelError(f"could not load Anthropic credentials: {e}") from None
        except TypeError as e:  # the SDK found no key when it came to send the request
            if "authentication" not in str(e):
                raise
            raise ModelError(
                "no API key: set ANTHROPIC_API_KEY (or AGENTLAB_BACKEND=simulated to stay offline)"
            ) from None
        latency = time.perf_counter() - started

        blocks = message.content
        tool_calls = tuple(ToolCall(b.id, b.name, dict(b.input)) for b in blocks if b.type == "tool_use")
        if tool_calls and any(b.type in ("thinking", "redacted_thinking") for b in blocks):
            self._raw_turns[tool_calls[0].id] = [b.to_dict(mode="json") for b in blocks]
        u = message.usage
        return Completion(
            text="".join(b.text for b in blocks if b.type == "text"),
            model=message.model or model,
            backend=self.backend,
            usage=Usage(
                u.input_tokens,
                u.output_tokens,
                u.cache_read_input_tokens or 0,
                u.cache_creation_input_tokens or 0,
            ),
            latency=latency,
            tool_calls=tool_calls,
            stop_reason=message.stop_reason or "end_turn",
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
    def client(self) -> Any:
        """The SDK client, built on first use (so no key is needed before the first call)."""
        if self._client is None:
            import anthropic

            api_key = self._api_key
            local = self.base_url or os.environ.get("ANTHROPIC_BASE_URL")
            if api_key is None and local and not os.environ.get("ANTHROPIC_API_KEY"):
                api_key = "local-server"  # local servers want some key, and ignore its value
            self._client = anthropic.Anthropic(
                api_key=api_key,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                http_client=self._http_client,
            )
        return self._client


# --- helpers, each usable (and tested) on its own --------------------------------


def api_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema in the strict subset the API accepts for structured output.

    The SDK's `transform_schema` closes every object (`additionalProperties: false`) and moves
    keywords the API does not enforce (minLength, minimum, ...) into descriptions. The full
    schema is still checked on our side by `check_json`.
    """
    from anthropic import transform_schema

    return transform_schema({k: v for k, v in schema.items() if k != "$schema"})


def check_json(text: str, schema: Mapping[str, Any]) -> Any:
    """Parse a model's JSON reply and validate it against `schema`; ValueError says what is wrong.

    A reply wrapped in a ```json fence (some local models add one) is unwrapped first.
    """
    import jsonschema

    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    if not body:
        raise ValueError("the reply was empty, not JSON")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"the reply is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise ValueError(f"at {where}: {error.message}")
    return data


def reask_message(problem: str) -> str:
    """The follow-up turn that asks the model to fix a reply that did not fit the schema."""
    return (
        f"Your reply did not match the required JSON Schema: {problem}. "
        "Reply again with only the corrected JSON object, no other text."
    )


def describe_api_error(model: str, error: Any) -> str:
    """One line for an `anthropic.APIStatusError`: status, the API's own message, a hint."""
    status = error.status_code
    said = getattr(error, "api_message", None) or error.message
    line = f"{model}: the API answered {status}"
    if getattr(error, "type", None):
        line += f" ({error.type})"
    line += f": {said}"
    if status in _HINTS:
        line += f" - {_HINTS[status]}"
    if getattr(error, "request_id", None):
        line += f" [request id {error.request_id}]"
    return line
