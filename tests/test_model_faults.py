"""What a server can do wrong, through the real SDK: a broken 200 body, a huge error page, a
retry-after of an hour, a timeout, a local server that wants its key in `x-api-key`. Each ends
as a short ModelError naming the server (and so as a failed run), never a traceback or a hang."""

import time

import anthropic
import httpx2
import pytest
from fake_api import SERVER, FakeAPI, claude, error, reply, text

from agentlab.agents import world_team
from agentlab.llm import AnthropicLLM, ModelError
from agentlab.llm.anthropic import MAX_WAIT
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate, run_plan

USER = [{"role": "user", "content": "What is the population of Varra?"}]
CAPTIVE = (
    "<!DOCTYPE html>\n<html>\n  <head><title>Guest WiFi</title></head>\n  <body>\n"
    + "    <p>Please accept the terms of use to continue.</p>\n" * 40
    + "  </body>\n</html>\n"
)

pytestmark = pytest.mark.usefixtures("no_network")  # the SDK must never reach a real server


BROKEN_BODIES = {
    "a captive portal's HTML page": httpx2.Response(200, text=CAPTIVE, headers={"content-type": "text/html"}),
    "text that is not JSON": httpx2.Response(
        200, text="upstream said: ok", headers={"content-type": "application/json"}
    ),
    "JSON of another shape": httpx2.Response(200, json={"hello": "world"}),
    "a JSON list": httpx2.Response(200, json=[1, 2, 3]),
    "content that is a string": httpx2.Response(
        200, json={"content": "hi", "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}}
    ),
    "usage that is not a number": reply(
        [{"type": "text", "text": "hi"}], usage={"input_tokens": "many", "output_tokens": 1}
    ),
    "a tool call with no input": reply([{"type": "tool_use", "id": "t1", "name": "lookup"}]),
    "a text block with no text": reply([{"type": "text"}]),
}


@pytest.mark.parametrize("kind", BROKEN_BODIES)
def test_a_200_with_a_broken_body_is_a_short_model_error_naming_the_server_and_what_came_back(kind):
    with pytest.raises(ModelError) as caught:
        claude(FakeAPI(BROKEN_BODIES[kind])).complete(system="s", messages=USER)
    message = str(caught.value)
    assert f"{SERVER}/v1/messages answered 200 but not with a message" in message
    assert len(message) < 420 and "\n" not in message  # briefly: the start of it, on one line
    assert caught.value.__cause__ is None


def test_the_broken_body_is_quoted_briefly_with_its_whitespace_collapsed():
    with pytest.raises(ModelError) as caught:
        claude(FakeAPI(BROKEN_BODIES["a captive portal's HTML page"])).complete(system="s", messages=USER)
    start = "<!DOCTYPE html> <html> <head><title>Guest WiFi</title></head> <body> <p>Please"
    assert start in str(caught.value)
    assert str(caught.value).endswith("… (2,291 characters)")


def test_a_broken_body_while_planning_or_executing_ends_as_a_failed_run_that_names_it():
    llm = claude(FakeAPI(BROKEN_BODIES["a captive portal's HTML page"]))
    team = world_team(llm)
    run = orchestrate("What is the population of Varra?", LLMPlanner(llm, team), team)
    assert run.status == "failed" and "Guest WiFi" in run.reason and SERVER in run.reason

    llm = claude(FakeAPI(BROKEN_BODIES["JSON of another shape"]))
    team = world_team(llm)
    run = run_plan(Plan([Step("s1", "writer", "Say hi.")]), team)
    assert run.status == "failed" and "answered 200 but not with a message" in run.reason
    assert '{"hello":"world"}' in run.reason


def test_a_502_error_page_becomes_a_bounded_one_line_reason():
    page = "<html><head><title>502 Bad Gateway</title></head>\n<body>" + "<p>nginx</p>\n" * 280 + "</body>"
    api = FakeAPI(httpx2.Response(502, text=page, headers={"content-type": "text/html"}))
    with pytest.raises(ModelError) as caught:
        claude(api).complete(system="s", messages=USER)
    message = str(caught.value)
    assert message.startswith("executor-model: the API answered 502")
    assert "<title>502 Bad Gateway</title>" in message and "\n" not in message
    assert len(page) > 3_700 and len(message) < 420


def test_every_api_error_message_is_bounded_even_a_json_one():
    api = FakeAPI(error(400, "bad request: " + "x" * 5_000, "invalid_request_error"))
    with pytest.raises(ModelError) as caught:
        claude(api).complete(system="s", messages=USER)
    assert "answered 400 (invalid_request_error): bad request: xxx" in str(caught.value)
    assert len(str(caught.value)) < 420


# --- waits ------------------------------------------------------------------------------------


@pytest.mark.parametrize("header", [{"retry-after": "3600"}, {"retry-after-ms": "3600000"}])
def test_a_retry_after_longer_than_the_ceiling_fails_at_once_and_says_why(monkeypatch, header):
    slept = []
    monkeypatch.setattr(anthropic._base_client.time, "sleep", slept.append)  # record, never wait
    api = FakeAPI(*[error(429, "Too many requests", "rate_limit_error", header) for _ in range(3)])
    started = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        claude(api, max_retries=2).complete(system="s", messages=USER)
    assert time.perf_counter() - started < 3
    assert all(s <= MAX_WAIT for s in slept)  # the SDK alone would sleep 3600 s, twice
    assert "the server asked to wait 3600 s before a retry" in str(caught.value)
    assert f"the kit waits at most {MAX_WAIT:g} s" in str(caught.value)


def test_the_ceiling_is_a_setting_and_a_wait_within_it_is_still_honoured(monkeypatch):
    slept = []
    monkeypatch.setattr(anthropic._base_client.time, "sleep", slept.append)
    api = FakeAPI(
        error(429, "slow down", "rate_limit_error", {"retry-after": "0.5"}),
        error(429, "slow down", "rate_limit_error", {"retry-after": "3"}),
    )
    with pytest.raises(ModelError, match="asked to wait 3 s .* at most 1 s"):
        claude(api, max_retries=3, max_wait=1.0).complete(system="s", messages=USER)
    assert slept == [0.5] and len(api.requests) == 2
    with pytest.raises(ValueError, match="max_wait must be"):
        AnthropicLLM(max_wait=float("nan"))


def test_the_timeout_in_the_message_is_the_one_in_force_even_on_a_client_passed_in():
    def hang(request):
        raise httpx2.ReadTimeout("timed out", request=request)

    client = anthropic.Anthropic(
        api_key="sk-test",
        base_url=SERVER,
        timeout=1.0,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(hang)),
    )
    with pytest.raises(ModelError) as caught:
        AnthropicLLM("p", "e", client=client).complete(system="s", messages=USER)
    assert str(caught.value) == f"e: no answer from {SERVER} within 1 s (0 retries)"


# --- local servers ----------------------------------------------------------------------------


def only_x_api_key(request):
    """A local server that reads the key from x-api-key, and refuses a request without one."""
    if request.headers.get("x-api-key") != "local-key":
        return error(401, "missing x-api-key", "authentication_error")
    return text("hello from a local model", model="qwen3:8b")


def test_a_local_server_gets_the_key_in_x_api_key_too():
    llm = claude(only_x_api_key, api_key="local-key", base_url="http://localhost:11434")
    assert llm.complete(system="s", messages=USER).text == "hello from a local model"


def test_anthropics_own_api_gets_the_key_only_the_sdks_way():
    api = FakeAPI(text("hi"))
    claude(api, base_url="https://api.anthropic.com").complete(system="s", messages=USER)
    assert "x-api-key" not in api.requests[0].headers
    assert api.requests[0].headers["authorization"] == "Bearer sk-test"


def test_a_401_names_the_server_that_refused():
    api = FakeAPI(error(401, "invalid key", "authentication_error"))
    with pytest.raises(ModelError) as caught:
        claude(api, base_url="http://localhost:11434").complete(system="s", messages=USER)
    assert "answered 401" in str(caught.value)
    assert "http://localhost:11434 refused the key" in str(caught.value)
    api = FakeAPI(error(401, "invalid x-api-key", "authentication_error"))
    with pytest.raises(ModelError, match="https://api.anthropic.com refused the key: check ANTHROPIC_API"):
        claude(api, base_url="https://api.anthropic.com").complete(system="s", messages=USER)
