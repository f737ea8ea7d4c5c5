"""What every span goes through on its way to the collector (`otel.export_runs`, `otel.LiveTrace`).

- Redaction: each text attribute, event, status and name passes through the kit's `redact`, so a
  model or a server that echoes the API key does not ship it to Phoenix, where the Run, its HTML
  and its checkpoint show "[redacted]".
- Fit: a whole number no OTLP field holds (a token count of 2^63 or more) goes as text, instead
  of the exporter logging a traceback per attribute.
- No collector: the first send looks whether anything listens at the endpoint; if nothing does
  (Phoenix not started, the usual classroom case) nothing is sent and nothing retried, and
  `check` says so, so no one takes trace ids for spans that never arrived.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Status

from agentlab.llm.base import redact

PROBE_SECONDS = 2.0  # at most this long to find out whether anything listens at the endpoint


class Sender(SpanExporter):
    """`exporter` (default: OTLP/HTTP to `endpoint`) behind the three guards above."""

    def __init__(self, exporter: SpanExporter | None, endpoint: str, timeout: float):
        self.inner, self.where = exporter or OTLPSpanExporter(endpoint=endpoint, timeout=timeout), endpoint
        self.probe, self.timeout, self.problem = exporter is None, timeout, ""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.probe:  # our own OTLP exporter: look once whether anything listens there
            self.probe, self.problem = False, unreachable(self.where, min(self.timeout, PROBE_SECONDS))
        if self.problem:
            return SpanExportResult.FAILURE
        result = self.inner.export([cleaned(span) for span in spans])
        if result is not SpanExportResult.SUCCESS:
            self.problem = "the collector did not take them"
        return result

    def check(self) -> None:
        """Raise ConnectionError, saying why, if any span could not be sent."""
        if self.problem:
            raise ConnectionError(f"the spans did not reach {redact(self.where)}: {self.problem}")

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def cleaned(span: ReadableSpan) -> ReadableSpan:
    """`span` with its texts redacted and its numbers fit for OTLP."""
    status = span.status
    if status.description:
        status = Status(status.status_code, redact(status.description))
    events = [Event(e.name, fit(e.attributes), e.timestamp) for e in span.events]
    return ReadableSpan(
        name=redact(span.name), context=span.context, parent=span.parent, resource=span.resource,
        attributes=fit(span.attributes), events=events, links=span.links, kind=span.kind, status=status,
        start_time=span.start_time, end_time=span.end_time, instrumentation_scope=span.instrumentation_scope)


def fit(value: Any) -> Any:
    """An attribute value with every text redacted and every too-large whole number as text."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return str(value)
    if isinstance(value, Mapping):
        return {k: fit(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fit(v) for v in value]
    return value


def unreachable(endpoint: str, seconds: float) -> str:
    """Why nothing can be sent to `endpoint` ("" if something accepts a connection there)."""
    url = urlsplit(endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "127.0.0.1", port), timeout=seconds).close()
    except OSError as error:
        return f"nothing is listening there ({error.strerror or error}); start the collector (Phoenix) first"
    return ""
