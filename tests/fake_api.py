"""A stand-in for Anthropic's Messages API behind the real SDK, for tests that must stay offline.

`FakeAPI` answers each request the SDK sends with the next prepared `httpx2.Response` (`reply`
for a message, `error` for an API error, or anything else a broken server could send) and keeps
the requests; `claude(api)` is an `AnthropicLLM` whose SDK client talks to it through
`httpx2.MockTransport`, so everything between our code and the wire is the SDK's own.
"""

import json

import httpx2

from agentlab.llm import AnthropicLLM

SERVER = "http://test.local"


def reply(content, *, model="claude-test", stop="end_turn", usage=None, status=200, headers=None):
    """A Messages API answer holding the `content` blocks."""
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }
    return httpx2.Response(status, json=body, headers=headers or {})


def text(said, **options):
    """A reply with one text block."""
    return reply([{"type": "text", "text": said}], **options)


def error(status, message, kind="api_error", headers=None):
    """An API error as the API sends one: a JSON body with the type and message."""
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx2.Response(status, json=body, headers={"request-id": "req_42", **(headers or {})})


class FakeAPI:
    """Answers each request with the next prepared response, and keeps what was sent."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        return self.responses.pop(0)

    @property
    def bodies(self):
        return [json.loads(r.content) for r in self.requests]


def claude(api, **options):
    """An AnthropicLLM on `api`: planner "planner-model", executor "executor-model", no retries
    unless asked for."""
    options.setdefault("max_retries", 0)
    options.setdefault("api_key", "sk-test")
    options.setdefault("base_url", SERVER)
    http = httpx2.Client(transport=httpx2.MockTransport(api))
    return AnthropicLLM("planner-model", "executor-model", http_client=http, **options)
