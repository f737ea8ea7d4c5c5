"""MCP over streamable HTTP, with the same cap on one message as over stdio.

A server answers each request over HTTP either as a stream of server-sent events or as one JSON
body. The SDK caps one event at 1 MiB, so a tool's 0.5 MB text answer (a message carries it
twice: text and structured) failed over HTTP where stdio takes 64 MB, and it reads a JSON body
whole, however large. `http_streams` gives both the `limit` stdio has (`mcp_stdio.LIMIT`): an
answer over it fails its call with the message stdio gives (and only that: the SDK would also
log a traceback, which a notebook shows), and the session goes on. Both are read in linear time
(tests/test_interop_mcp.py times 1 and 4 MB).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentlab.interop.mcp_stdio import LIMIT, too_large

SSE_OVER = re.compile(r"Server-sent event exceeded the (\d+) byte limit")  # the SDK's words for it
OURS = re.compile(r"the answer is over the \S+ MB limit on one message \(limit=\)")


@contextlib.asynccontextmanager
async def http_streams(url: str, limit: int = LIMIT) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP transport to `url` with `limit` on one message: (read, write)."""

    async def cap_json(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            response.stream = _Capped(response.stream, limit)

    async with create_mcp_http_client() as client:
        client.event_hooks["response"].append(cap_json)
        async with streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams:
            yield streams


def _not_our_refusal(record: logging.LogRecord) -> bool:
    """False for the SDK's log of a JSON body refused here (its call already says why)."""
    error = record.exc_info[1] if record.exc_info else None
    return not (isinstance(error, httpx2.StreamError) and OURS.search(str(error)))


logging.getLogger("mcp.client.streamable_http").addFilter(_not_our_refusal)


def over_limit(said: str) -> str | None:
    """The kit's words for an answer refused for its size, from what the transport said; else None."""
    if found := SSE_OVER.search(said):
        return too_large(int(found.group(1)))
    found = OURS.search(said)  # a JSON body's refusal, inside the SDK's "Failed to parse ..."
    return found.group(0) if found else None


class _Capped(httpx2.AsyncByteStream):
    """A response body that stops with httpx2.StreamError (which the SDK turns into the request's
    error) once it passes `limit` bytes, instead of being read whole."""

    def __init__(self, inner: Any, limit: int):
        self.inner, self.limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise httpx2.StreamError(too_large(self.limit))
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
