"""AnthropicLLM drives the real `anthropic` SDK, offline: every request goes to an
`httpx2.MockTransport` that plays the API, so these tests check what the SDK really
sends and how our code reads what comes back."""

import json

import anthropic
import httpx2
import pytest
from fake_api import SERVER, FakeAPI, claude, error, reply

from agentlab.llm import (
    AnthropicLLM,
    ModelError,
    Tool,
    Usage,
    assistant_message,
    tool_results_message,
)
from agentlab.llm.anthropic import api_schema, configured_models

PLAN_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "role": {"enum": ["finder", "writer"]},
                },
                "required": ["id", "role"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["steps"],
    "additionalProperties": False,
}
GOOD_PLAN = {"steps": [{"id": "s1", "role": "finder"}]}
LOOKUP = Tool(
    "lookup", "Look up an entity by name.", {"type": "object", "properties": {"name": {"type": "string"}}}
)
USER = [{"role": "user", "content": "Plan: find the capital of Veldra."}]


pytestmark = pytest.mark.usefixtures("no_network")  # the SDK must never reach a real server


def test_a_plan_request_sends_the_schema_as_structured_output_and_parses_the_reply():
    api = FakeAPI(reply([{"type": "text", "text": json.dumps(GOOD_PLAN)}], model="planner-model"))
    completion = claude(api, cache=None).complete(system="You plan.", messages=USER, schema=PLAN_SCHEMA)

    body = api.bodies[0]
    assert body["model"] == "planner-model"  # a schema means a plan: the planner model answers
    assert body["system"] == "You plan."  # no caching asked for: the request as it was
    assert body["messages"] == USER
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"] == api_schema(PLAN_SCHEMA)
    assert fmt["schema"]["properties"]["steps"]["items"]["required"] == ["id", "role"]
    assert completion.data == GOOD_PLAN
    assert completion.backend == "anthropic" and completion.model == "planner-model"
    assert all(str(r.url).startswith("http://test.local/") for r in api.requests)


def test_the_api_schema_is_the_strict_subset_the_api_accepts():
    sent = api_schema(PLAN_SCHEMA)
    assert "$schema" not in sent
    assert sent["properties"]["steps"]["items"]["additionalProperties"] is False
    sent_id = sent["properties"]["steps"]["items"]["properties"]["id"]
    assert "minLength" not in sent_id and "minLength: 1" in sent_id["description"]  # told, not enforced


def test_a_reply_that_does_not_fit_the_schema_comes_back_as_it_is_one_request_one_completion():
    """Judging a plan, and re-asking, is the planner's job on every backend (test_claude_planning)."""
    said = '{"steps": [{"id": "s1", "role": "critic"}]}'  # a server that ignored the schema
    api = FakeAPI(reply([{"type": "text", "text": said}], usage={"input_tokens": 30, "output_tokens": 7}))
    completion = claude(api).complete(system="You plan.", messages=USER, schema=PLAN_SCHEMA)
    assert len(api.requests) == 1 and completion.usage == Usage(30, 7)
    assert completion.text == said and completion.data == json.loads(said)
    api = FakeAPI(reply([{"type": "text", "text": "Sure! Here is the plan: steps..."}]))
    assert claude(api).complete(system="You plan.", messages=USER, schema=PLAN_SCHEMA).data is None


def test_calls_paid_for_before_planning_gave_up_stay_in_the_usage_of_the_failed_run():
    """Three rejected plans cost three API calls; a failed run must still count them all."""
    from agentlab.agents import world_team
    from agentlab.llm.usage import usage_report
    from agentlab.planners import LLMPlanner
    from agentlab.run import orchestrate

    bad = [{"type": "text", "text": "First look it up, then write it down."}]
    api = FakeAPI(*[reply(bad, usage={"input_tokens": 100, "output_tokens": 7}) for _ in range(3)])
    llm = claude(api)
    team = world_team(llm)
    run = orchestrate("What is the population of Varra?", LLMPlanner(llm, team, max_attempts=3), team)
    assert run.status == "failed" and "planning failed" in run.reason
    assert len(api.requests) == 3 and len(run.calls) == 3
    with pytest.warns(UserWarning, match="no price for claude-test"):  # tokens still counted
        assert usage_report(run).total.usage == Usage(300, 21)


def test_a_tool_use_turn_sends_the_tools_parses_the_calls_and_accepts_the_results_turn():
    api = FakeAPI(
        reply(
            [
                {"type": "text", "text": "Let me look that up."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"name": "Veldra"}},
            ],
            model="executor-model",
            stop="tool_use",
        ),
        reply([{"type": "text", "text": "The capital of Veldra is Osk."}], model="executor-model"),
    )
    llm = claude(api)
    first = llm.complete(system="You find facts.", messages=USER, tools=[LOOKUP])

    assert api.bodies[0]["model"] == "executor-model"  # no schema: an executor turn
    assert api.bodies[0]["tools"] == [
        {
            "name": "lookup",
            "description": "Look up an entity by name.",
            "input_schema": dict(LOOKUP.input_schema),
        }
    ]
    assert "format" not in api.bodies[0].get("output_config", {})
    assert first.stop_reason == "tool_use"
    assert [(c.id, c.name, dict(c.args)) for c in first.tool_calls] == [
        ("toolu_1", "lookup", {"name": "Veldra"})
    ]

    history = [*USER, assistant_message(first), tool_results_message({"toolu_1": "Veldra: capital Osk"})]
    second = llm.complete(system="You find facts.", messages=history, tools=[LOOKUP])
    sent = api.bodies[1]["messages"]
    assert sent[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "lookup",
        "input": {"name": "Veldra"},
    }
    assert (
        sent[2]["content"][0]["type"] == "tool_result" and sent[2]["content"][0]["tool_use_id"] == "toolu_1"
    )
    assert second.text == "The capital of Veldra is Osk." and second.tool_calls == ()


def test_thinking_blocks_are_echoed_back_exactly_when_tool_results_return():
    thinking = {"type": "thinking", "thinking": "I need the lookup tool.", "signature": "sig-abc"}
    call = {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"name": "Osk"}}
    api = FakeAPI(reply([thinking, call], stop="tool_use"), reply([{"type": "text", "text": "done"}]))
    llm = claude(api)
    first = llm.complete(system="", messages=USER, tools=[LOOKUP])
    assert first.text == "" and first.tool_calls[0].id == "toolu_9"

    llm.complete(
        system="", messages=[*USER, assistant_message(first), tool_results_message({"toolu_9": "ok"})]
    )
    assert api.bodies[1]["messages"][1]["content"] == [thinking, call]
    assert "system" not in api.bodies[0]  # an empty system prompt is left out, not sent as ""


def test_usage_is_read_from_the_response_including_cache_tokens():
    usage = {
        "input_tokens": 120,
        "output_tokens": 40,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 300,
    }
    api = FakeAPI(reply([{"type": "text", "text": "hi"}], usage=usage))
    completion = claude(api).complete(system="s", messages=USER)
    assert completion.usage == Usage(
        input_tokens=120, output_tokens=40, cache_read_tokens=900, cache_write_tokens=300
    )
    assert completion.usage.total_tokens == 1360
    assert completion.latency >= 0.0


def test_the_cache_breakpoints_go_on_the_system_prompt_and_the_last_message_and_can_be_turned_off():
    first = FakeAPI(reply([{"type": "text", "text": "hi"}]))
    claude(first).complete(system="You plan.", messages=USER, tools=[LOOKUP])
    body = first.bodies[0]
    marker = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You plan.", "cache_control": marker}]
    assert body["messages"] == USER and body["cache_control"] == marker  # automatic caching: the API marks
    assert "cache_control" not in body["tools"][0]  # the system prompt's breakpoint covers the tools
    hour = FakeAPI(reply([{"type": "text", "text": "hi"}]))
    claude(hour, cache="1h").complete(system="", messages=USER, tools=[LOOKUP])
    body = hour.bodies[0]  # no system prompt: the last tool carries the stable prefix's breakpoint
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    off = FakeAPI(reply([{"type": "text", "text": "hi"}]))
    claude(off, cache=None).complete(system="s", messages=USER, tools=[LOOKUP])
    assert "cache_control" not in json.dumps(off.bodies[0])
    with pytest.raises(ValueError, match="cache lifetime must be one of"):
        claude(off, cache="10m")


def test_one_hour_cache_writes_are_read_apart_when_the_api_splits_them():
    usage = {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 1500,
             "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1000}}
    api = FakeAPI(reply([{"type": "text", "text": "hi"}], usage=usage))
    completion = claude(api, cache="1h").complete(system="s", messages=USER)
    assert completion.usage == Usage(5, 7, 0, 500, 1000)


def test_a_429_is_retried_by_the_sdk_honouring_retry_after_then_succeeds(monkeypatch):
    slept = []
    monkeypatch.setattr(
        anthropic._base_client.time, "sleep", slept.append
    )  # only the SDK's wait, not its logic
    api = FakeAPI(
        error(
            429, "Number of requests has exceeded your rate limit", "rate_limit_error", {"retry-after": "2"}
        ),
        reply([{"type": "text", "text": "fine now"}]),
    )
    completion = claude(api, max_retries=2).complete(system="s", messages=USER)
    assert completion.text == "fine now"
    assert len(api.requests) == 2
    assert slept == [2.0]  # the SDK waited as long as the server asked


def test_a_500_that_outlasts_the_retries_is_a_model_error_naming_status_and_message(monkeypatch):
    monkeypatch.setattr(anthropic._base_client.time, "sleep", lambda seconds: None)
    api = FakeAPI(error(500, "Internal server error"), error(500, "Internal server error"))
    with pytest.raises(ModelError) as caught:
        claude(api, max_retries=1).complete(system="s", messages=USER)
    message = str(caught.value)
    assert (
        message
        == "executor-model: the API answered 500 (api_error): Internal server error [request id req_42]"
    )
    assert len(api.requests) == 2  # one try and the SDK's one retry
    assert caught.value.__cause__ is None  # no SDK traceback chained underneath


def test_a_wrong_model_name_gets_a_hint():
    api = FakeAPI(error(404, "model: claude-nonesuch", "not_found_error"))
    with pytest.raises(ModelError, match=r"answered 404 \(not_found_error\).*AGENTLAB_PLANNER_MODEL"):
        claude(api).complete(system="s", messages=USER, model="claude-nonesuch")
    assert api.bodies[0]["model"] == "claude-nonesuch"  # model= on the call wins


def test_the_simulator_profile_names_map_to_the_two_claude_tiers():
    api = FakeAPI(*[reply([{"type": "text", "text": "ok"}]) for _ in range(3)])
    llm = claude(api)
    llm.complete(system="s", messages=USER, model="sim-large")
    llm.complete(system="s", messages=USER, model="sim-small")
    llm.complete(system="s", messages=USER, model="sim-planner")  # a capstone team routes plans there
    assert [b["model"] for b in api.bodies] == ["planner-model", "executor-model", "planner-model"]


def test_effort_is_sent_unless_turned_off():
    api = FakeAPI(reply([{"type": "text", "text": "ok"}]), reply([{"type": "text", "text": "ok"}]))
    claude(api).complete(system="s", messages=USER)
    claude(api, effort=None).complete(system="s", messages=USER)
    assert api.bodies[0]["output_config"] == {"effort": "low"}
    assert "output_config" not in api.bodies[1]


def test_construction_needs_no_key_and_no_network_and_never_shows_the_key(monkeypatch, tmp_path):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no credentials file to find
    llm = AnthropicLLM(api_key=None)
    assert llm._client is None  # nothing built yet
    secret = AnthropicLLM(api_key="sk-ant-very-secret")
    assert "sk-ant" not in repr(secret)
    with pytest.raises(ModelError, match="no API key: set ANTHROPIC_API_KEY"):
        llm.complete(system="s", messages=USER)


def test_models_come_from_arguments_then_environment_then_defaults(monkeypatch):
    monkeypatch.setenv("AGENTLAB_PLANNER_MODEL", "claude-fable-5-2")
    monkeypatch.delenv("AGENTLAB_EXECUTOR_MODEL", raising=False)
    llm = AnthropicLLM()
    assert (llm.planner_model, llm.executor_model) == ("claude-fable-5-2", "claude-haiku-5-5")
    assert AnthropicLLM("a", "b").planner_model == "a"
    assert configured_models({}) == ("claude-opus-5-5", "claude-haiku-5-5")


@pytest.mark.parametrize("by_env", [False, True])
def test_a_local_server_gets_a_placeholder_key_and_the_base_url(monkeypatch, by_env):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    api = FakeAPI(reply([{"type": "text", "text": "hello from a local model"}], model="qwen3:8b"))
    http = httpx2.Client(transport=httpx2.MockTransport(api))
    if by_env:  # the SDK reads ANTHROPIC_BASE_URL itself
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://localhost:11434")
        llm = AnthropicLLM("qwen3:8b", "qwen3:8b", http_client=http, max_retries=0)
    else:
        llm = AnthropicLLM("qwen3:8b", "qwen3:8b", base_url="http://localhost:11434", http_client=http)
    completion = llm.complete(system="s", messages=USER)
    assert completion.model == "qwen3:8b"
    assert str(api.requests[0].url) == "http://localhost:11434/v1/messages"
    assert api.requests[0].headers["authorization"] == "Bearer local-server"
    assert api.requests[0].headers["x-api-key"] == "local-server"  # what some local servers read


def test_a_broken_credentials_setup_is_a_model_error(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))  # a config dir that holds no profile
    with pytest.raises(ModelError, match="could not load Anthropic credentials: Config file not found"):
        AnthropicLLM().complete(system="s", messages=USER)


def test_a_key_held_only_by_a_ready_sdk_client_is_redacted_when_a_server_echoes_it():
    """With `client=`, the key never reached `redact`: an echo put it into the reason."""
    key = "plain-looking-key-a1b2c3d4"  # no sk- prefix: only knowing it can hide it
    api = FakeAPI(error(401, f"invalid key {key}", "authentication_error"))
    sdk = anthropic.Anthropic(api_key=key, base_url=SERVER, max_retries=0,
                              http_client=httpx2.Client(transport=httpx2.MockTransport(api)))
    with pytest.raises(ModelError) as caught:
        AnthropicLLM("planner-model", "executor-model", client=sdk).complete(system="s", messages=USER)
    assert key not in str(caught.value) and "[redacted]" in str(caught.value)
