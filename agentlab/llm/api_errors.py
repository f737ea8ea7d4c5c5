"""What an error from the Messages API says, in one line a learner can act on.

`describe_api_error` turns the SDK's `APIStatusError` into a bounded line: the status, the API's
own message (its start, if long), and a hint for the errors a learner meets most (a wrong model
name, a key without access, rate limits). `retry_after` reads how long a response asks a client
to wait, as the SDK does; `is_anthropic` tells Anthropic's own API from a compatible server.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from agentlab.llm.base import brief, redact

MAX_WAIT = 30.0  # seconds: the longest the kit waits before a retry, whatever a server asks for

# A short hint for the errors a learner is most likely to meet (401 names the server too).
_HINTS = {
    403: "this key may not have access to that model",
    404: "check the model name (AGENTLAB_PLANNER_MODEL / AGENTLAB_EXECUTOR_MODEL)",
    429: "rate limited even after retries; wait a minute or lower the number of workers",
    529: "the API is overloaded; try again shortly",
}
ASKED_WAIT = "x-agentlab-asked-wait"  # set on a response whose retry-after the kit refused


def describe_api_error(model: str, error: Any, max_wait: float = MAX_WAIT) -> str:
    """One bounded line for an `anthropic.APIStatusError`: status, the API's own message (its
    start, if long: a 502 page can be thousands of characters), and a hint."""
    status = error.status_code
    said = getattr(error, "api_message", None) or error.message
    line = f"{model}: the API answered {status}"
    if isinstance(getattr(error, "type", None), str):
        line += f" ({brief(error.type, 40)})"
    line += f": {brief(said)}"
    headers = error.response.headers
    if ASKED_WAIT in headers:
        line += (
            f" - the server asked to wait {headers[ASKED_WAIT]} s before a retry, and the kit waits at "
            f"most {max_wait:g} s (AnthropicLLM's max_wait); try again later"
        )
    elif status == 401:
        server = _origin(error.request.url)
        line += f" - {server} refused the key: check ANTHROPIC_API_KEY"
        if not is_anthropic(server):
            line += " and which key that server expects"
    elif status in _HINTS:
        line += f" - {_HINTS[status]}"
    if isinstance(getattr(error, "request_id", None), str):
        line += f" [request id {brief(error.request_id, 60)}]"
    return redact(line)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """How many seconds a response asks the client to wait before retrying, read the way the SDK
    reads it (`retry-after-ms`, then `retry-after` in seconds or as a date); None if it does not."""
    with suppress(TypeError, ValueError):
        return float(headers.get("retry-after-ms")) / 1000
    with suppress(TypeError, ValueError):
        return float(headers.get("retry-after"))
    when = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return None if when is None else email.utils.mktime_tz(when) - time.time()


def is_anthropic(url: str) -> bool:
    """Whether `url` is Anthropic's own API (else a compatible server: a local one, a proxy)."""
    import httpx2

    with suppress(httpx2.InvalidURL):
        host = httpx2.URL(str(url)).host
        return host == "anthropic.com" or host.endswith(".anthropic.com")
    return False


def _origin(url: Any) -> str:
    """scheme://host[:port] of a URL: where a request went, without credentials or path."""
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"
