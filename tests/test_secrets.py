"""No credential the kit is given reaches what it prints: `redact` hides key-like strings, the
configured key and URL credentials, and the model layer runs every message and description
through it (a server that echoes the key, a base URL with a password in it)."""

import io
from contextlib import redirect_stdout

import httpx2
import pytest
from fake_api import FakeAPI, claude, error

from agentlab.agents import world_team
from agentlab.llm import AnthropicLLM, ModelError, describe_backend, redact
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate

KEY = "sk-ant-api03-PLANTED-KEY-0123456789abcdef"
USER = [{"role": "user", "content": "What is the population of Varra?"}]

pytestmark = pytest.mark.usefixtures("no_network")


@pytest.mark.parametrize(
    "said, hidden",
    [
        (f"invalid x-api-key: {KEY}", KEY),
        ("OpenAI-style key sk-proj-abcdefghijklmnop0123 refused", "sk-proj-abcdefghijklmnop0123"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9.payload.sig"),
        ("could not connect to https://ada:hunter2@proxy.example:8080/v1", "ada:hunter2"),
        ('{"api_key": "plain-looking-value-42"}', "plain-looking-value-42"),
        ("token=abcdef123456&user=ada", "abcdef123456"),
    ],
)
def test_redact_hides_key_like_strings_and_url_credentials(said, hidden):
    cleaned = redact(said)
    assert hidden not in cleaned and "[redacted]" in cleaned


def test_redact_leaves_ordinary_text_alone():
    for text in (
        "the API answered 500: Internal server error [request id req_42]",
        "max_tokens=1024, input_tokens: 350, a risk-free plan, https://api.anthropic.com/v1/messages",
        "step 's1' (researcher): ToolError: no entity 'Varra'",
    ):
        assert redact(text) == text


def test_redact_hides_the_configured_key_whatever_it_looks_like(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "correct-horse-battery")
    assert redact("the server saw correct-horse-battery") == "the server saw [redacted]"
    AnthropicLLM(api_key="a-key-given-in-code-only")  # a key handed over in code counts too
    assert redact("echo: a-key-given-in-code-only") == "echo: [redacted]"


def test_a_server_that_echoes_the_key_in_its_401_never_puts_it_in_an_error_or_a_run(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    echo = error(401, f"invalid x-api-key: {KEY}", "authentication_error")
    with pytest.raises(ModelError) as caught:
        claude(FakeAPI(echo), api_key=KEY).complete(system="s", messages=USER)
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)

    llm = claude(FakeAPI(error(401, f"invalid x-api-key: {KEY}", "authentication_error")), api_key=KEY)
    team = world_team(llm)
    run = orchestrate("What is the population of Varra?", LLMPlanner(llm, team), team)
    assert run.status == "failed" and "answered 401" in run.reason
    assert KEY not in run.reason and KEY not in str(run)


SECRET_URL = "https://ada:hunter2@proxy.example:8080"


def test_credentials_in_the_base_url_are_never_printed(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", SECRET_URL)
    monkeypatch.setenv("AGENTLAB_BACKEND", "anthropic")
    env = {"AGENTLAB_BACKEND": "anthropic", "ANTHROPIC_BASE_URL": SECRET_URL}
    assert "hunter2" not in describe_backend(env)
    assert describe_backend(env).endswith(", server https://[redacted]@proxy.example:8080.")
    assert "hunter2" not in repr(AnthropicLLM(base_url=SECRET_URL))

    from agentlab.course.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        main(["doctor"])
    assert "hunter2" not in out.getvalue() and "proxy.example" in out.getvalue()


def test_a_connection_error_names_the_server_without_its_credentials():
    def refuse(request):
        raise httpx2.ConnectError(f"could not reach {SECRET_URL}", request=request)

    with pytest.raises(ModelError) as caught:
        claude(refuse, base_url=SECRET_URL).complete(system="s", messages=USER)
    assert "could not connect to https://[redacted]@proxy.example:8080" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_redacted_line_of_json_is_still_json():
    """A recording is redacted line by line: what is hidden must not take a quote with it."""
    import json

    line = json.dumps(
        {"text": 'use api_key="abcdefgh1234" here', "url": "http://u:p@h/x", "raw": '{"token":"abcdefgh"}'}
    )
    assert json.loads(redact(line)) == {
        "text": 'use api_key="[redacted]" here',
        "url": "http://[redacted]@h/x",
        "raw": '{"token":"[redacted]"}',
    }
