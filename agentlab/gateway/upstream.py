"""The gateway's one way out: a request sent on to the upstream (Anthropic's API, `agentlab serve`, a
local model's server) with the instructor's key, and what came back.

The key is added here and nowhere else, and `redact` takes it out of anything the upstream sends
back (an error that echoes the key it refused, say) before a learner or a log can see it. Each
handler thread keeps its own connection open (HTTP/1.1, as the SDK does), so a class's calls do
not pay a new TCP (and TLS) handshake each. A failure to reach or read the upstream is an
`UpstreamError` with one line (502, or 504 when it was too slow) and never the key.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"  # sent when the learner's client named none
PASSED_HEADERS = ("anthropic-version", "anthropic-beta", "x-agentlab-fault")  # the rest stay here
REDACTED = b"[the instructor's key]"


class UpstreamError(Exception):
    """The upstream could not be reached, or answered too late or with no HTTP reply at all."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Answer:
    """What the upstream sent: status, content type, and the body (read whole, or `chunks()`)."""

    status: int
    content_type: str
    response: http.client.HTTPResponse
    redact: bytes

    def read(self) -> bytes:
        return _redacted(self.response.read(), self.redact)

    def chunks(self) -> Iterator[bytes]:
        """The body line by line as it arrives (a stream's server-sent events, in order)."""
        while line := self.response.readline():
            yield _redacted(line, self.redact)


class Upstream:
    """The server at `url` (http or https, with an optional path prefix), called with `key`."""

    def __init__(self, url: str = DEFAULT_URL, key: str = "", timeout: float = 600.0):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream {url!r}: give an http:// or https:// URL, like {DEFAULT_URL}")
        self.url, self.key, self.timeout = url.rstrip("/"), key, timeout
        self._https, self._host, self._port = parts.scheme == "https", parts.hostname, parts.port
        self._prefix = parts.path.rstrip("/")
        self._local = threading.local()

    def __repr__(self) -> str:  # the key stays out of every repr
        return f"Upstream({self.url!r}, key={'set' if self.key else 'none'})"

    def send(self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]) -> Answer:
        """Send one request (`path` as the learner asked for it); the answer's body is left to read."""
        sent = {
            "content-type": "application/json",
            "anthropic-version": API_VERSION,
            "accept-encoding": "identity",
        }
        sent.update({name: headers[name] for name in PASSED_HEADERS if name in headers})
        if self.key:
            sent["x-api-key"] = self.key
        for attempt in (1, 2):  # a kept-alive connection the upstream closed meanwhile: once more, afresh
            connection, reused = self._connection()
            try:
                connection.request(method, self._prefix + path, body, sent)
                response = connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self._drop()
                if reused and attempt == 1:
                    continue
                raise UpstreamError(
                    502, f"the upstream {self.url} closed the connection ({type(e).__name__})"
                ) from None
            except TimeoutError:
                self._drop()
                raise UpstreamError(
                    504, f"the upstream {self.url} did not answer within {self.timeout:g} s"
                ) from None
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                said = getattr(e, "strerror", None) or type(e).__name__
                raise UpstreamError(502, f"cannot reach the upstream {self.url}: {said}") from None
            kind = response.getheader("content-type", "") or ""
            return Answer(response.status, kind, response, self.key.encode())
        raise AssertionError("unreachable")

    def finished(self, answer: Answer, whole: bool) -> None:
        """After a reply: keep the connection for the next request if it was read `whole`."""
        if not whole or answer.response.will_close:
            self._drop()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            return connection, True
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=self.timeout)
        self._local.connection = connection
        return connection, False

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            try:
                connection.close()
            except OSError:
                pass


def read_error(error: Exception) -> UpstreamError:
    """A failure while reading an answer's body, as an UpstreamError (504 for a timeout)."""
    if isinstance(error, TimeoutError | socket.timeout):
        return UpstreamError(504, "the upstream stopped sending mid-reply (timed out)")
    return UpstreamError(502, f"the upstream's reply broke off ({type(error).__name__})")


def _redacted(data: bytes, key: bytes) -> bytes:
    return data.replace(key, REDACTED) if key and key in data else data
