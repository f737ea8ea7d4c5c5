"""`agentlab gateway serve`: the Messages API for learners, each with their own token, in front of the
instructor's upstream.

Every request goes the same way: who is calling (a token the ledger knows and has not revoked, or
a 401 naming the problem), is the body well formed (a 400 naming the field, by the kit's own
`llm.request.problem`, never a 500), does it fit the learner's limits (`limits.check`), then on to
the upstream with the instructor's key (`upstream`). What comes back is passed through as it came,
its usage priced by the kit's price table (`llm.usage.cost`, with prompt caching and long-prompt
tiers) and committed to the ledger before the reply leaves. An upstream that cannot be reached or
answers garbage is a 502 (504: too slow) with one line, and the learner is charged nothing.
Streams (`"stream": true`) pass through event by event as they arrive, and are billed from the
usage their events report, when they end; one whose running cost would pass what the learner has
left is cut there with the API's `error` event (`relay`). Every billed call is recorded with
what it asked and got, cleared of keys (`recordings`), in the same commit as its bill. The
class's daily budget is checked with the learner's limits. A `model_map` sends a model id the
class's notebooks ask for (a retired one) as another, before the limits are checked.

The HTTP around it (requests bounded in size and time, connections kept alive) is the kit's own
`llm.serve_http.ReplyServer`, the listening half of `agentlab serve`.
"""

from __future__ import annotations

import hmac
import itertools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentlab.gateway import dashboard, limits
from agentlab.gateway.recordings import clean
from agentlab.gateway.relay import Relay
from agentlab.gateway.store import Call, Exchange, Learner, Ledger, utc_day
from agentlab.gateway.upstream import Answer, Upstream, UpstreamError, read_error
from agentlab.llm import request
from agentlab.llm.base import Usage
from agentlab.llm.replay import wire_key
from agentlab.llm.serve_http import Reply, ReplyServer, error_reply
from agentlab.llm.usage import PRICES, api_usage, cost

ENDPOINTS = "this gateway answers POST /v1/messages, POST /v1/messages/count_tokens and GET /v1/models"
NO_TOKEN = "no token: set ANTHROPIC_API_KEY to the token your instructor gave you (it starts with agl-)"
UNKNOWN_TOKEN = (
    "this token is not one this gateway issued: check ANTHROPIC_API_KEY (your instructor's agl- token)"
)
NOT_CHARGED = "nothing was charged"


@dataclass(frozen=True)
class Sent:
    """An admitted request on its way: the body sent; the body the learner sent (before a model
    map) and its wire key, which the recording keeps, so a replay of the learner's notebook finds
    it; whether it streams, what the learner has left to spend (dollars and which budget; None: no
    limit), when it left."""

    raw: bytes
    asked: bytes
    key: str
    stream: bool
    budget: tuple[float, str] | None
    started: float


class GatewayServer(ReplyServer):
    """The gateway on `host:port` (port 0: any free one; see `.url`), over `ledger` and `upstream`.

    A `ReplyServer`: listening from construction, `start()` (a thread) or `serve_forever()`, `stop()`.
    `log` receives one line per request, with the learner's name, never a token or the key.
    """

    def __init__(
        self,
        ledger: Ledger,
        upstream: Upstream,
        port: int = 0,
        host: str = "127.0.0.1",
        log: Callable[[str], None] | None = None,
        dashboard_token: str | None = None,
        model_map: Mapping[str, str] | None = None,
    ):
        self.ledger, self.upstream, self.host, self.log = ledger, upstream, host, log
        self.model_map = dict(model_map or {})  # a model id asked for -> the one sent (a retired id, say)
        self.dashboard_token = dashboard_token  # None: no /dashboard
        self._numbers, self.gate = itertools.count(1), limits.Gate()
        super().__init__(port)

    def server_bind(self) -> None:
        self.server_address = (self.host, self.server_address[1])  # ReplyServer binds 127.0.0.1
        super().server_bind()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server_port}"

    # --- POST -------------------------------------------------------------------------------

    def answer(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, str, Reply]:
        """The reply to one POST: (its number, who asked for which model, the Reply)."""
        n, route = next(self._numbers), path.split("?")[0].rstrip("/")
        learner, model = None, "-"
        try:
            if route not in ("/v1/messages", "/v1/messages/count_tokens"):
                reply = error_reply(404, "not_found_error", f"no endpoint POST {path}; {ENDPOINTS}")
            else:
                learner, refused = self._caller(headers)
                model, reply = ("-", refused) if learner is None else self._post(route, learner, raw, headers)
        except Exception as e:  # a bug, or a ledger that cannot be written: one line, and keep serving
            reply = broken(e)
        shown = " ".join(model.split())[:80] or "-"  # a learner's model name: one line in the log, short
        return n, f"{learner.name if learner else 'nobody'} {shown}", reply

    def _caller(self, headers: Mapping[str, str]) -> tuple[Learner | None, Reply | None]:
        """The learner whose token the request presents, or a 401 saying what is wrong with it."""
        token = presented_token(headers)
        learner = self.ledger.find(token) if token else None
        if learner is None:
            return None, error_reply(401, "authentication_error", UNKNOWN_TOKEN if token else NO_TOKEN)
        if learner.revoked:
            said = f"the token of learner {learner.name!r} was revoked: ask your instructor for a new one"
            return None, error_reply(401, "authentication_error", said)
        return learner, None

    def _post(
        self, route: str, learner: Learner, raw: bytes, headers: Mapping[str, str]
    ) -> tuple[str, Reply]:
        """(the model asked for, the reply) for an authenticated learner's POST."""
        counting = route.endswith("/count_tokens")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as e:
            said = f"the body is not JSON: {e!s:.100}"
            return "-", self._refuse(learner, "-", limits.Refusal(400, "invalid_request_error", said))
        checked = {"max_tokens": 1, **body} if counting and isinstance(body, dict) else body  # it has none
        if said := request.problem(checked):
            named = body.get("model") if isinstance(body, dict) else None
            model = named if isinstance(named, str) else "-"
            return model, self._refuse(learner, model, limits.Refusal(400, "invalid_request_error", said))
        asked, key = raw, wire_key(body)  # as the learner's notebook sent it, for the recording
        if body["model"] in self.model_map:  # before the limits: they name the models actually used
            body = {**body, "model": self.model_map[body["model"]]}
            raw = json.dumps(body).encode()
        model, now = body["model"], time.time()
        if counting:  # counting tokens is free: only a revoked token stops it
            return model, self._count(route, learner, raw, headers)
        day = utc_day(now)
        today = self.ledger.spent(learner.id, day)
        ever = self.ledger.spent(learner.id, None) if learner.dollars_total is not None else 0.0
        class_limit = self.ledger.class_budget()
        class_today = self.ledger.spent_by_class(day) if class_limit is not None else 0.0
        if refusal := (
            limits.check(learner, body, today, now, ever)
            or limits.check_class(class_limit, class_today, now)
            or self.gate.enter(learner)
        ):
            return model, self._refuse(learner, model, refusal)
        budget = limits.left(learner, today, ever, class_limit, class_today)
        streaming = False
        try:
            sent = Sent(raw, asked, key, bool(body.get("stream")), budget, time.perf_counter())
            reply = self._forward(route, learner, model, headers, sent)
            streaming = isinstance(reply.stream, Relay)
            return model, reply
        finally:
            if not streaming:  # a stream's slot is freed when the stream ends
                self.gate.leave(learner)

    def _forward(
        self, route: str, learner: Learner, model: str, headers: Mapping[str, str], sent: Sent
    ) -> Reply:
        """Send an admitted request on; the reply to pass back (billed, recorded), or a 502/504 (not)."""
        try:
            answer = self.upstream.send("POST", route, sent.raw, headers)
        except UpstreamError as e:
            return self._failed(learner, model, e.status, str(e))
        if answer.status == 200 and sent.stream and answer.content_type.startswith("text/event-stream"):
            left, why = sent.budget if sent.budget is not None else (None, "")
            relay = Relay(
                answer, model, lambda ended: self._streamed(learner, answer, ended, sent), left, _cost, why
            )
            note = f"200 stream for {learner.name}"
            return Reply(200, b"", note, "text/event-stream", _request_id(answer), relay)  # type: ignore[arg-type]
        if answer.status != 200:
            return self._passed(answer, learner, model, record=True)
        try:
            data = answer.read()
        except OSError as e:
            return self._failed(learner, model, read_error(e).status, str(read_error(e)))
        self.upstream.finished(answer, whole=True)
        usage, named = message_usage(data)
        if usage is None:
            what = answer.content_type or "no content type"
            said = f"the upstream answered 200 with something that is not a Messages API reply ({what})"
            return self._failed(learner, model, 502, said)
        note = self._bill(
            learner,
            named or model,
            usage,
            200,
            exchange=self._exchange(sent, data.decode("utf-8", "replace")),
        )
        return Reply(200, data, note, headers=_request_id(answer))

    def _exchange(self, sent: Sent, message: str, cut: str = "") -> Exchange:
        """What the call asked and got, cleared of keys and tokens, for the learner's recording."""
        key = self.upstream.key
        seconds = round(time.perf_counter() - sent.started, 3)
        return Exchange(
            sent.key, clean(sent.asked.decode("utf-8", "replace"), key), clean(message, key), seconds, cut
        )

    def _count(self, route: str, learner: Learner, raw: bytes, headers: Mapping[str, str]) -> Reply:
        """count_tokens: passed through, free, not recorded."""
        try:
            answer = self.upstream.send("POST", route, raw, headers)
        except UpstreamError as e:
            return self._failed(learner, "-", e.status, str(e), record=False)
        return self._passed(answer, learner, "-", record=False)

    def _streamed(self, learner: Learner, answer: Answer, relay: Relay, sent: Sent) -> None:
        """A stream has ended: bill what its events reported (what was delivered, if the budget
        cut it), record it (marked if cut), free the learner's slot."""
        try:
            self.upstream.finished(answer, whole=relay.whole)
            counted = relay.billed()
            if counted is not None:
                early = relay.cut or ("" if relay.whole else "stream ended early")
                exchange = self._exchange(sent, json.dumps(relay.assembly.message()), early)
                self._bill(
                    learner, relay.model, counted, 200, relay.cut and f"cut: {relay.cut}" or early, exchange
                )
            else:
                self._record(
                    Call(learner.id, relay.model, "failed", 502, note="a stream that reported no usage")
                )
        finally:
            self.gate.leave(learner)

    def _bill(
        self,
        learner: Learner,
        model: str,
        usage: Usage,
        status: int,
        note: str = "",
        exchange: Exchange | None = None,
    ) -> str:
        dollars, priced = price(model, usage)
        call = Call(learner.id, model, "ok", status, usage, dollars, " ".join(filter(None, (note, priced))))
        self.ledger.record(call, exchange=exchange)
        return f"{status} {model}: {usage.input_tokens} in, {usage.output_tokens} out, ${dollars:.6f}"

    def _passed(self, answer: Answer, learner: Learner, model: str, record: bool) -> Reply:
        """An upstream's non-200 answer (or count_tokens') passed on, unless it cannot be: the
        upstream refusing the instructor's key is the instructor's problem, not the learner's."""
        try:
            data = answer.read()
        except OSError as e:
            return self._failed(learner, model, read_error(e).status, str(read_error(e)), record)
        self.upstream.finished(answer, whole=True)
        if answer.status in (401, 403):
            said = f"the upstream refused the gateway's own key ({answer.status}): tell your instructor"
            return self._failed(learner, model, 502, said, record)
        if not answer.content_type.startswith("application/json"):
            what = answer.content_type or "no content type"
            said = f"the upstream answered {answer.status} with {what}, not JSON"
            return self._failed(learner, model, 502, said, record)
        if record:
            self._record(Call(learner.id, model, "ok" if answer.status == 200 else "failed", answer.status))
        return Reply(answer.status, data, f"{answer.status} from the upstream", headers=_request_id(answer))

    def _refuse(self, learner: Learner, model: str, refusal: limits.Refusal) -> Reply:
        self._record(Call(learner.id, model, "refused", refusal.status, note=refusal.message))
        reply = error_reply(refusal.status, refusal.kind, refusal.message, wait=refusal.retry_after)
        if not refusal.retry:  # the SDK retries a 429; this one cannot succeed before the reset
            return Reply(
                reply.status, reply.body, reply.note, headers=(*reply.headers, ("x-should-retry", "false"))
            )
        return reply

    def _failed(self, learner: Learner, model: str, status: int, said: str, record: bool = True) -> Reply:
        if record:
            self._record(Call(learner.id, model, "failed", status, note=said))
        return error_reply(status, "api_error", f"{said}; {NOT_CHARGED}")

    def _record(self, call: Call) -> None:
        self.ledger.record(call)

    # --- GET --------------------------------------------------------------------------------

    def models(self, path: str, headers: Mapping[str, str]) -> Reply:
        """`GET /v1/models` (and one model by id), from the upstream, for a learner with a token;
        `GET /dashboard?token=...` for the instructor."""
        if urlsplit(path).path.rstrip("/") == "/dashboard":
            return self._dashboard(path)
        learner = None
        try:
            learner, refused = self._caller(headers)
            reply = refused or self._get(path, learner, headers)  # type: ignore[arg-type]  # a learner
        except Exception as e:
            reply = broken(e)
        if self.log:
            self.log(f"GET {path} {learner.name if learner else 'nobody'} -> {reply.note}"[:300])
        return reply

    def _dashboard(self, path: str) -> Reply:
        given = parse_qs(urlsplit(path).query).get("token", [""])[0]
        if not self.dashboard_token or not hmac.compare_digest(given.encode(), self.dashboard_token.encode()):
            said = "the dashboard needs the token the gateway printed when it started: /dashboard?token=..."
            return error_reply(401, "authentication_error", said)
        try:
            return Reply(200, dashboard.page(self.ledger), "200 the dashboard", "text/html; charset=utf-8")
        except Exception as e:
            return broken(e)

    def _get(self, path: str, learner: Learner, headers: Mapping[str, str]) -> Reply:
        if not path.split("?")[0].startswith("/v1/models"):
            return error_reply(404, "not_found_error", f"no endpoint GET {path}; {ENDPOINTS}")
        try:
            answer = self.upstream.send("GET", path, None, headers)
        except UpstreamError as e:
            return error_reply(e.status, "api_error", str(e))
        return self._passed(answer, learner, "-", record=False)


# --- details ------------------------------------------------------------------------------------


def broken(error: Exception) -> Reply:
    """A 500 for a failure inside the gateway: its kind for the learner, the detail for the log."""
    said = f"the gateway failed ({type(error).__name__}); tell your instructor"
    return error_reply(
        500, "api_error", said, note=f"500 the gateway failed: {type(error).__name__}: {error!s:.200}"
    )


def presented_token(headers: Mapping[str, str]) -> str:
    """The token a request presents: its x-api-key, else its Authorization bearer token."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key", "") or (
        bearer[7:].strip() if bearer.lower().startswith("bearer ") else ""
    )


def price(model: str, usage: Usage) -> tuple[float, str]:
    """Dollars for `usage` on `model` by the kit's price table, and a note when the table has no
    price for it: then the table's dearest rates, so an unknown model never spends a budget for free."""
    try:
        return cost(model, usage), ""
    except ValueError:
        return max(
            cost(name, usage) for name in PRICES
        ), f"no price for {model}: charged at the dearest rates"


def _cost(model: str, usage: Usage) -> float:
    return price(model, usage)[0]


def message_usage(data: bytes) -> tuple[Usage | None, str]:
    """The usage and model of a Messages API reply; (None, "") if it is not one."""
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        return None, ""
    if not isinstance(message, dict) or message.get("type") != "message":
        return None, ""
    counted = _usage_or_none(message.get("usage"))
    if counted is None:
        return None, ""
    named = message.get("model")
    return counted, named if isinstance(named, str) else ""


def _usage_or_none(usage: Any) -> Usage | None:
    """The counts a reply's usage reports, read as the rest of the kit reads them (`usage.api_usage`);
    None for what no real reply carries, which is then not billed as if it were."""
    try:
        return api_usage(usage) if usage else None
    except ValueError:
        return None


def _request_id(answer: Answer) -> tuple[tuple[str, str], ...]:
    said = answer.response.getheader("request-id")
    return (("request-id", said),) if said else ()
