"""How `agentlab serve` moves bytes: each request read bounded in size and time, each Reply written.

`serve.SimServer` decides what to answer (the API's routes, keys, faults and the simulator's
message); this module is the HTTP around it, the part a class's load tests. `ReplyServer` listens
on 127.0.0.1 with a long backlog, keeps each client's connection open for its next request
(HTTP/1.1, as the API does) and ends them all on `stop()`; its `Handler` gives a body over MAX_BODY
a 413 (read first, so the client is there to read it), cuts off a client trickling its request
after REQUEST_SECONDS, and sends a streamed answer's events each at its second, at the server's pace.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

MAX_BODY = 16 * 1024 * 1024  # bytes: a larger request gets a 413
REQUEST_SECONDS = 30.0  # the longest a client may take to send a whole request
BACKLOG = 1024  # connections waiting to be accepted (a class of 50 connecting at once: 5 dropped some)


@dataclass(frozen=True)
class Reply:
    """What the server sends back: status, body, headers, and a few words for the log."""

    status: int
    body: bytes
    note: str
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    stream: tuple[tuple[float, bytes], ...] = ()  # server-sent events, each with its second


def error_reply(status: int, kind: str, message: str, note: str = "", wait: float | None = None) -> Reply:
    """An error reply as the API sends one; `wait`: a retry-after header."""
    body = json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    headers = (("retry-after", f"{wait:g}"),) if wait is not None else ()
    return Reply(status, body, note or f"{status} {kind}: {message}", headers=headers)



S = TypeVar("S", bound="ReplyServer")


class ReplyServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 whose subclass decides each Reply: `answer` for a POST, `models`
    for a GET. Listening from construction; `start()` serves from a daemon thread, `serve_forever()`
    from this one (the CLI's way: Ctrl-C ends it); `stop()` ends either and closes the socket. `log`
    receives one line per request; `counts` tallies "connections" and "handler errors"."""

    daemon_threads = True  # a request still being answered never keeps the process alive
    request_queue_size = BACKLOG
    request_seconds = REQUEST_SECONDS
    log: Callable[[str], None] | None = None
    pace = 0.0  # real seconds per second a streamed event is due at (0: all at once)

    def __init__(self, port: int):
        self.counts: Counter[str] = Counter()
        self._lock, self._stopping = threading.Lock(), threading.Event()
        self._open: set[socket.socket] = set()  # connections being served (a client keeps its own alive)
        self._thread: threading.Thread | None = None
        super().__init__(("127.0.0.1", port), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"

    def start(self: S) -> S:
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (seen within 0.05 s; a slow reply waiting is cut short) and close the socket."""
        self._stopping.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout=5)
        with self._lock:  # a connection kept alive for a client's next request ends here too
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RD)
        self.server_close()

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.counts["handler errors"] += 1  # a client gone mid-reply, say: no traceback on the console

    def answer(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, str, Reply]:
        """The reply to one POST: (its number, a summary of the request, the Reply)."""
        raise NotImplementedError

    def models(self, path: str, headers: Mapping[str, str]) -> Reply:
        """The reply to one GET."""
        raise NotImplementedError


class Handler(BaseHTTPRequestHandler):
    """The HTTP side: read each request (bounded in size and time), write the server's Reply.

    HTTP/1.1 keeps a connection open for the client's next request, as the API does: the SDK
    sends all of a model's calls down one connection instead of opening one per call.
    """

    server: ReplyServer
    timeout = REQUEST_SECONDS  # for each read; a whole request has REQUEST_SECONDS too
    server_version = "agentlab-serve"
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a reply's headers and body leave together, not 40 ms apart

    def setup(self) -> None:
        super().setup()
        with self.server._lock:
            self.server._open.add(self.connection)
            self.server.counts["connections"] += 1

    def handle_one_request(self) -> None:
        # a client trickling a byte at a time is cut off when its time is up (an idle one too)
        self.cut = threading.Timer(self.server.request_seconds, self._too_slow)
        self.cut.daemon, self.late = True, False
        self.cut.start()
        try:
            super().handle_one_request()
        finally:
            self.cut.cancel()
        self.close_connection |= self.server._stopping.is_set()

    def _too_slow(self) -> None:
        self.late = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RD)  # the read under way ends; replies still go

    def finish(self) -> None:
        with self.server._lock:
            self.server._open.discard(self.connection)
        super().finish()

    def parse_request(self) -> bool:
        if self.server._stopping.is_set():  # read as stop() ran (down a kept-alive connection): no answer
            self.close_connection = True
            return False
        return super().parse_request()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if self.late:  # the first line or the headers cut off when the time was up: say that
            self.close_connection, self.request_version = True, self.protocol_version  # (not HTTP/0.9)
            self._send(self._timed_out())
        else:
            super().send_error(code, message, explain)

    def _timed_out(self) -> Reply:
        late = f"the request did not arrive within {self.server.request_seconds:g} s"
        return error_reply(408, "request_timeout", late)

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("content-length", ""))
        except ValueError:
            required = error_reply(411, "invalid_request_error", "a Content-Length header is required")
            self._send(self._timed_out() if self.late else required)  # the headers were cut off
            return
        if not 0 <= length <= MAX_BODY:
            while 0 < length <= 4 * MAX_BODY and self.rfile.read(min(length, 1 << 20)):
                length -= 1 << 20  # read what was sent, so the client is there to read the 413
            self._send(error_reply(413, "request_too_large", f"the request body is over {MAX_BODY} bytes"))
            return
        raw = self.rfile.read(length)
        self.cut.cancel()  # the request is in: answering it may take its time (a slow fault)
        if len(raw) < length:
            ended = error_reply(408, "request_timeout", "the request body ended early")
            self._send(self._timed_out() if self.late else ended)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        n, summary, reply = self.server.answer(self.path, headers, raw)
        if self.server.log:
            self.server.log(f"#{n} POST {self.path} {summary} -> {reply.note}"[:300])
        self._send(reply)

    def do_GET(self) -> None:
        self.cut.cancel()
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._send(self.server.models(self.path, headers))

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status, "Overloaded" if reply.status == 529 else None)
        self.send_header("Content-Type", reply.content_type)
        if not reply.stream:
            self.send_header("Content-Length", str(len(reply.body)))
        if reply.stream or reply.status in (408, 411, 413):  # a stream's end is the connection's;
            self.send_header("Connection", "close")  # a body not read whole cannot be followed
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(reply.body)
        began = time.monotonic()
        for due, event in reply.stream:  # each event when it is due, at the server's pace
            if self.server._stopping.wait(max(0.0, began + due * self.server.pace - time.monotonic())):
                return
            self.wfile.write(event)
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the server's own `log` says what happened, one line per request
