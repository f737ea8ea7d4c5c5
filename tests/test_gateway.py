"""`agentlab gateway` over real HTTP: the real `anthropic` SDK as a learner's client, the gateway in
between, and `agentlab serve` as the upstream (wanting the instructor's key). A call goes through
and is billed by the price table; every limit is refused in the API's shape before anything is
forwarded; an upstream that fails costs the learner nothing; the instructor's key never leaves the
gateway; and a gateway killed with SIGKILL has counted each completed call exactly once."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent import futures

import anthropic
import console
import pytest

from agentlab import world
from agentlab.agents import world_team
from agentlab.course.cli import main
from agentlab.gateway.server import GatewayServer
from agentlab.gateway.store import Ledger, utc_day
from agentlab.gateway.upstream import Upstream
from agentlab.llm.anthropic import AnthropicLLM
from agentlab.llm.base import Usage
from agentlab.llm.serve import start_server
from agentlab.llm.usage import cost, usage_report
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate

KEY = "sk-ant-instructor-0123456789-SECRET"  # the instructor's key: must never leave the gateway
HELLO = {"model": "claude-haiku-5-5", "max_tokens": 200, "messages": [{"role": "user", "content": "Hello"}]}
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


pytestmark = pytest.mark.usefixtures("local_without_proxy")  # conftest.py: 127.0.0.1 past any proxy


@pytest.fixture
def upstream():
    with start_server(api_key=KEY) as running:  # refuses any other key: the gateway must send it
        yield running


@pytest.fixture
def ledger(tmp_path):
    book = Ledger(tmp_path / "class.db")
    yield book
    book.close()


@pytest.fixture
def lines():
    return []


@pytest.fixture
def gateway(ledger, upstream, lines):
    with GatewayServer(ledger, Upstream(upstream.url, KEY, timeout=5), log=lines.append) as running:
        yield running


def learner(gateway, token: str, **options) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key=token, **{"max_retries": 0, **options})


def post(url: str, body: bytes, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(url, body, {"content-type": "application/json", "x-api-key": token})
    try:
        with LOCAL.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def rows(ledger) -> dict[str, dict]:
    """The report summed per learner (its rows are per learner and model), model names joined."""
    out: dict[str, dict] = {}
    for row in ledger.report():
        if row["learner"] not in out:
            out[row["learner"]] = dict(row)
            continue
        mine = out[row["learner"]]
        for name in ("calls", "input_tokens", "output_tokens", "dollars", "refusals", "upstream_failures"):
            mine[name] += row[name]
        mine["model"] += f",{row['model']}"
    return out


# --- a call, billed ------------------------------------------------------------------------------


def test_a_call_goes_through_unchanged_and_is_billed_by_the_price_table(gateway, ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    reply = learner(gateway, token).messages.create(**HELLO)
    direct = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0).messages.create(**HELLO)
    assert reply.model_dump() == direct.model_dump()  # the upstream's own message, as it sent it
    usage = Usage(reply.usage.input_tokens, reply.usage.output_tokens)
    row = rows(ledger)["ada"]
    assert (row["model"], row["calls"], row["refusals"]) == ("sim-small", 1, 0)  # the model that answered
    assert (row["input_tokens"], row["output_tokens"]) == (usage.input_tokens, usage.output_tokens)
    assert row["dollars"] == pytest.approx(cost("sim-small", usage)) and row["dollars"] > 0
    assert ledger.spent(ledger.find(token).id, utc_day(time.time())) == pytest.approx(row["dollars"])


def test_a_stream_passes_through_in_order_and_is_billed_once_from_its_events(gateway, ledger):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    client = learner(gateway, token)
    with client.messages.stream(**HELLO) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert streamed.content[0].text == client.messages.create(**HELLO).content[0].text
    row = rows(ledger)["ada"]
    assert row["calls"] == 2 and row["output_tokens"] == 2 * streamed.usage.output_tokens


def test_the_model_list_passes_through_for_a_learner_with_a_token(gateway, ledger):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    assert "claude-haiku-5-5" in [m.id for m in learner(gateway, token).models.list()]
    with pytest.raises(anthropic.AuthenticationError):
        learner(gateway, "agl-nobody").models.list()


# --- who may call ---------------------------------------------------------------------------------


def test_an_unknown_a_missing_or_a_revoked_token_gets_a_401_that_names_the_problem(gateway, ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    with pytest.raises(anthropic.AuthenticationError, match="not one this gateway issued"):
        learner(gateway, "agl-made-up").messages.create(**HELLO)
    assert post(gateway.url + "/v1/messages", json.dumps(HELLO).encode(), "")[1]["error"][
        "message"
    ].startswith("no token")
    ledger.revoke("ada")
    with pytest.raises(anthropic.AuthenticationError, match="learner 'ada' was revoked"):
        learner(gateway, token).messages.create(**HELLO)
    fresh = ledger.rotate("ada")
    assert learner(gateway, fresh).messages.create(**HELLO).content
    with pytest.raises(anthropic.AuthenticationError):  # the old token stays dead after a rotation
        learner(gateway, token).messages.create(**HELLO)
    assert upstream.counts["requests"] == 1  # only the one authorised call went on


# --- limits, before forwarding ------------------------------------------------------------------


def test_a_spent_budget_is_a_rate_limit_error_naming_limit_left_and_reset_and_is_not_retried(
    gateway, ledger, upstream
):
    token = ledger.add_learner("ada", dollars_per_day=0.000001)
    client = learner(gateway, token, max_retries=2)  # the SDK's default retries: none may happen
    client.messages.create(**HELLO)  # under budget: answered, and it crosses the line
    began = time.monotonic()
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(**HELLO)
    assert time.monotonic() - began < 1.0 and upstream.counts["requests"] == 1
    said = caught.value.body["error"]["message"]
    assert (
        "daily budget reached" in said
        and "of $0.00/day, $0.00 left" in said
        and "resets at 00:00 UTC" in said
    )
    assert int(caught.value.response.headers["retry-after"]) <= 86400
    assert rows(ledger)["ada"]["refusals"] == 1 and rows(ledger)["ada"]["calls"] == 1


def test_a_max_tokens_over_the_cap_and_a_model_not_allowed_are_refused_naming_the_limit(
    gateway, ledger, upstream
):
    token = ledger.add_learner("ada", 2.0, max_tokens=100, models=("claude-haiku-5-5",))
    client = learner(gateway, token)
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: 200 is over this class's cap of 100"):
        client.messages.create(**HELLO)
    with pytest.raises(
        anthropic.PermissionDeniedError, match="'claude-opus-5-5' is not allowed.*claude-haiku-5-5"
    ):
        client.messages.create(**{**HELLO, "model": "claude-opus-5-5", "max_tokens": 50})
    assert client.messages.create(**{**HELLO, "max_tokens": 100}).content
    assert upstream.counts["requests"] == 1 and rows(ledger)["ada"]["refusals"] == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "the body is not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({**HELLO, "max_tokens": "lots"}).encode(), "max_tokens:"),
        (json.dumps({**HELLO, "messages": []}).encode(), "messages:"),
        (json.dumps({**HELLO, "messages": [{"role": "robot", "content": "hi"}]}).encode(), "messages.0.role"),
        (json.dumps({**HELLO, "tools": [{"description": "x"}]}).encode(), "tools.0.name"),
    ],
)
def test_a_malformed_body_is_a_400_naming_the_field_and_never_reaches_the_upstream(
    gateway, ledger, upstream, body, field
):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    status, said = post(gateway.url + "/v1/messages", body, token)
    assert (
        status == 400
        and said["error"]["type"] == "invalid_request_error"
        and field in said["error"]["message"]
    )
    assert upstream.counts["requests"] == 0


# --- faults upstream: 502, nothing charged -------------------------------------------------------


def test_an_upstream_that_is_down_or_answers_garbage_is_a_502_and_costs_nothing(ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    with start_server() as gone:
        closed = gone.url  # a port nobody listens on any more
    with GatewayServer(ledger, Upstream(closed, KEY, timeout=5)) as down:
        with pytest.raises(
            anthropic.APIStatusError, match="cannot reach the upstream.*nothing was charged"
        ) as e:
            learner(down, token).messages.create(**HELLO)
        assert e.value.status_code == 502
    with GatewayServer(ledger, Upstream(upstream.url, KEY, timeout=5)) as gateway:
        for fault in ("broken", "shape"):
            with pytest.raises(anthropic.APIStatusError, match="not a Messages API reply|not JSON") as e:
                learner(gateway, token).messages.create(**HELLO, extra_headers={"x-agentlab-fault": fault})
            assert e.value.status_code == 502
    row = rows(ledger)["ada"]
    assert (row["calls"], row["dollars"], row["upstream_failures"]) == (0, 0, 3)


def test_an_upstream_refusing_the_instructors_key_is_the_instructors_502_not_the_learners_401(
    ledger, upstream
):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    with GatewayServer(ledger, Upstream(upstream.url, "sk-ant-wrong", timeout=5)) as gateway:
        with pytest.raises(
            anthropic.APIStatusError, match="refused the gateway's own key.*tell your instructor"
        ) as e:
            learner(gateway, token).messages.create(**HELLO)
    assert e.value.status_code == 502 and rows(ledger)["ada"]["dollars"] == 0


def test_the_instructors_key_is_never_in_a_reply_a_log_line_or_the_ledger_and_tokens_only_hashed(
    gateway, ledger, upstream, lines, tmp_path
):
    token = ledger.add_learner("ada", dollars_per_day=0.00003, max_tokens=300)  # two calls cross it
    client, seen = learner(gateway, token), []
    with client.messages.stream(**HELLO) as stream:  # within the budget: not cut
        seen += [event.model_dump_json() for event in stream]
    seen.append(client.messages.create(**HELLO).model_dump_json())  # the call that crosses it
    for bad in (
        lambda: client.messages.create(**HELLO),  # over budget
        lambda: client.messages.create(**{**HELLO, "max_tokens": 999}),
        lambda: learner(gateway, "agl-x").messages.create(**HELLO),
        lambda: client.messages.create(**HELLO, extra_headers={"x-agentlab-fault": "500"}),
    ):
        with pytest.raises(anthropic.APIStatusError) as e:
            bad()
        seen.append(e.value.response.text + str(dict(e.value.response.headers)))
    assert main(["gateway", "recordings", "export", "ada", str(tmp_path / "rec"), "--db", ledger.path]) == 0
    ledger.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]  # the ledger (its WAL too) and the recording
    written = b"".join(p.read_bytes() for p in files)
    assert len(written) > 0 and len(lines) >= 6 and (tmp_path / "rec" / "ada.jsonl").stat().st_size > 0
    for text in (*seen, *lines, written.decode("latin-1")):
        assert KEY not in text and token not in text


# --- a crash, and two learners at once -----------------------------------------------------------


def read_until(process: subprocess.Popen, marker: str, seconds: float = 30) -> str:
    return console.read_until(process, marker, seconds, "the gateway")


def start_gateway(db, upstream_url: str) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "agentlab.course.cli", "gateway", "serve", "--db", str(db)]
    command += ["--upstream", upstream_url, "--port", "0"]
    environment = {**os.environ, "ANTHROPIC_API_KEY": KEY}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment)
    shown = read_until(process, "Ctrl-C")
    assert KEY not in shown
    return process, shown.split("agentlab gateway at ")[1].split(",")[0]


def test_a_gateway_killed_mid_request_has_counted_each_completed_call_once(tmp_path, upstream):
    db = tmp_path / "class.db"
    book = Ledger(db)
    token = book.add_learner("ada", dollars_per_day=2.0)
    book.close()
    process, url = start_gateway(db, upstream.url)
    try:
        client = anthropic.Anthropic(base_url=url, api_key=token, max_retries=0, timeout=10)
        for _ in range(3):
            client.messages.create(**HELLO)
        cut_off = []

        def fourth_call() -> None:  # still waiting on the upstream when the kill comes
            with pytest.raises(anthropic.APIConnectionError):
                client.messages.create(**HELLO, extra_headers={"x-agentlab-fault": "slow:5"})
            cut_off.append(True)

        hanging = threading.Thread(target=fourth_call, daemon=True)
        hanging.start()
        deadline = time.monotonic() + 10
        while upstream.counts["requests"] < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        hanging.join(timeout=10)
        assert cut_off == [True]  # the learner saw the connection drop
        process, url = start_gateway(db, upstream.url)  # the same file, after the crash
        anthropic.Anthropic(base_url=url, api_key=token, max_retries=0).messages.create(**HELLO)
    finally:
        process.kill()
        process.wait(timeout=10)
    book = Ledger(db)
    assert rows(book)["ada"]["calls"] == 4  # three before the kill, one after; the one cut off: none
    book.close()


def test_two_learners_at_once_each_get_their_own_answers_and_their_own_bill(gateway, ledger, upstream):
    tokens = {name: ledger.add_learner(name, dollars_per_day=2.0) for name in ("ada", "bo")}
    direct = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0)

    def ask(name: str, i: int) -> bool:
        body = {**HELLO, "messages": [{"role": "user", "content": f"{name} asks question {i}"}]}
        got = learner(gateway, tokens[name]).messages.create(**body)
        return got.id == direct.messages.create(**body).id  # the answer to this learner's own question

    work = [("ada", i) for i in range(6)] + [("bo", i) for i in range(4)]
    with futures.ThreadPoolExecutor(8) as pool:
        assert all(pool.map(lambda job: ask(*job), work))
    report = rows(ledger)
    assert (report["ada"]["calls"], report["bo"]["calls"]) == (6, 4)


# --- the commands ---------------------------------------------------------------------------------


def test_the_commands_add_list_revoke_rotate_and_report(tmp_path, capsys, gateway, ledger):
    db = str(tmp_path / "cli.db")
    assert (
        main(
            [
                "gateway",
                "learner",
                "add",
                "learner-01",
                "--dollars",
                "2/day",
                "--db",
                db,
                "--url",
                "http://h:1",
            ]
        )
        == 0
    )
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == "export ANTHROPIC_BASE_URL=http://h:1" and shown[1].startswith(
        "export ANTHROPIC_API_KEY=agl-"
    )
    assert main(["gateway", "learner", "add", "learner-01", "--dollars", "2/day", "--db", db]) == 2
    assert "exists already" in capsys.readouterr().err
    assert main(["gateway", "learner", "add", "x", "--dollars", "lots", "--db", db]) == 2
    assert "like 2/day" in capsys.readouterr().err
    assert main(["gateway", "learner", "revoke", "learner-01", "--db", db]) == 0
    assert main(["gateway", "learner", "list", "--db", db]) == 0
    assert "learner-01" in (shown := capsys.readouterr().out.splitlines()[-2]) and "revoked" in shown
    assert main(["gateway", "learner", "rotate", "nobody", "--db", db]) == 2
    assert (
        main(["gateway", "learner", "add", "bo", "--dollars", "1/day", "--per-minute", "0", "--db", db]) == 2
    )
    assert "--per-minute must be a whole number >= 1, got 0" in capsys.readouterr().err
    limits = [
        "--max-tokens",
        "500",
        "--per-minute",
        "30",
        "--concurrent",
        "2",
        "--total",
        "20",
        "--models",
        "a,b",
    ]
    assert main(["gateway", "learner", "add", "bo", "--dollars", "1/day", *limits, "--db", db]) == 0
    assert capsys.readouterr().out.count("export ") == 2
    book = Ledger(db)
    bo = [one for one in book.learners() if one.name == "bo"][0]
    book.close()
    assert (bo.dollars_per_day, bo.max_tokens, bo.per_minute, bo.concurrent, bo.dollars_total) == (
        1,
        500,
        30,
        2,
        20,
    )
    assert bo.models == ("a", "b")
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    learner(gateway, token).messages.create(**HELLO)
    assert main(["gateway", "report", "--db", ledger.path]) == 0
    row, whole = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert row["learner"] == "ada" and row["calls"] == "1" and float(row["dollars"]) > 0
    assert row["dollars_today"] == row["dollars"] and row["budget_per_day"] == "2.0"
    assert (whole["learner"], whole["model"], whole["budget_per_day"]) == ("(class)", "(all)", "none")
    assert whole["dollars"] == row["dollars"] and whole["calls"] == "1"


def test_serve_without_a_key_for_anthropics_api_says_what_to_set(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["gateway", "serve", "--db", str(tmp_path / "c.db")]) == 2
    assert "set ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_requests_per_minute_and_at_once_are_limited_and_a_slot_frees_when_its_call_ends(gateway, ledger):
    token = ledger.add_learner("ada", 2.0, per_minute=3, concurrent=1)
    client = learner(gateway, token)
    slow = threading.Thread(
        target=lambda: client.messages.create(**HELLO, extra_headers={"x-agentlab-fault": "slow:0.5"})
    )
    slow.start()
    deadline = time.monotonic() + 5
    while gateway.gate.running(ledger.find(token)) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(anthropic.RateLimitError, match="too many requests at once: 1 request"):
        client.messages.create(**HELLO)
    slow.join(timeout=5)
    with client.messages.stream(**HELLO) as stream:  # a stream holds its slot until it ends
        stream.get_final_message()
    client.messages.create(**HELLO)  # the third this minute
    with pytest.raises(anthropic.RateLimitError, match="3 requests per minute, 0 left; the next in") as e:
        client.messages.create(**HELLO)
    assert 0 < int(e.value.response.headers["retry-after"]) <= 60
    assert "x-should-retry" not in e.value.response.headers  # the SDK may wait and retry this one
    assert gateway.gate.running(ledger.find(token)) == 0 and rows(ledger)["ada"]["refusals"] == 2


def test_an_upstream_429_passes_through_a_slow_one_is_a_504_and_neither_is_charged(ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    with GatewayServer(ledger, Upstream(upstream.url, KEY, timeout=0.3)) as gateway:
        with pytest.raises(anthropic.RateLimitError, match="a fault injected by agentlab serve"):
            learner(gateway, token).messages.create(**HELLO, extra_headers={"x-agentlab-fault": "429:0"})
        with pytest.raises(anthropic.APIStatusError, match="did not answer within 0.3 s") as e:
            learner(gateway, token).messages.create(**HELLO, extra_headers={"x-agentlab-fault": "slow:1"})
        assert e.value.status_code == 504
        assert learner(gateway, token).messages.create(**HELLO).content  # and the next call goes through
    row = rows(ledger)["ada"]
    assert (row["calls"], row["upstream_failures"]) == (1, 2)


def test_count_tokens_is_passed_through_free_and_an_unknown_endpoint_is_a_404(gateway, ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    body = json.dumps({"model": "claude-haiku-5-5", "messages": HELLO["messages"]}).encode()
    status, said = post(gateway.url + "/v1/messages/count_tokens", body, token)
    assert status == 404 and "agentlab serve" in said["error"]["message"]  # the upstream's own answer
    assert upstream.counts["requests"] == 1 and [r["learner"] for r in ledger.report()] == ["(class)"]
    status, said = post(gateway.url + "/v1/complete", body, token)
    assert status == 404 and "POST /v1/messages" in said["error"]["message"]


def test_a_ledger_that_cannot_be_written_is_a_500_in_one_line_and_the_gateway_keeps_serving(
    gateway, ledger, lines, monkeypatch
):
    token = ledger.add_learner("ada", dollars_per_day=2.0)

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(ledger, "spent", locked)
        with pytest.raises(anthropic.InternalServerError, match=r"the gateway failed \(OperationalError\)"):
            learner(gateway, token).messages.create(**HELLO)
    assert "database is locked" in lines[-1]  # the detail is the instructor's, in the log
    assert learner(gateway, token).messages.create(**HELLO).content


def test_check_models_names_each_retired_id_the_class_uses_with_the_nearest_listed_one(
    tmp_path, capsys, monkeypatch, upstream
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # the upstream lists its models for the key only
    for name in ("AGENTLAB_PLANNER_MODEL", "AGENTLAB_EXECUTOR_MODEL"):
        monkeypatch.delenv(name, raising=False)
    db = str(tmp_path / "class.db")
    book = Ledger(db)
    book.add_learner("ada", 2.0, models=("claude-haiku-5-5", "sim-small"))
    assert main(["gateway", "check-models", "--db", db, "--upstream", upstream.url]) == 0
    assert "3 of 3 model(s) the class uses are listed" in capsys.readouterr().out  # opus, haiku, and ada's
    book.add_learner("bo", 2.0, models=("claude-haiku-4-1",))
    book.close()
    assert main(["gateway", "check-models", "--db", db, "--upstream", upstream.url]) == 1
    said = capsys.readouterr().out
    assert (
        "gone: claude-haiku-4-1 is not in the upstream's model list; the nearest listed is claude-haiku-5-5"
        in said
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    assert main(["gateway", "check-models", "--db", db, "--upstream", upstream.url]) == 2
    assert "model list was not one (status 401)" in capsys.readouterr().err


def test_the_kits_own_run_goes_through_the_gateway_and_the_bill_is_the_runs_own_usage_report(gateway, ledger):
    """A learner's notebook runs unchanged: the kit's Claude backend pointed at the gateway plans
    and solves a task, and what the ledger charged is what the run's own usage report says it cost."""
    token = ledger.add_learner("ada", dollars_per_day=2.0)
    llm = AnthropicLLM(base_url=gateway.url, api_key=token, max_retries=0)
    team = world_team(llm)
    run = orchestrate(world.sample_tasks()[1].question, LLMPlanner(llm, team), team)
    assert run.status == "done", run.reason
    spent = usage_report(run).total
    row = rows(ledger)["ada"]
    assert row["calls"] == spent.calls >= 2 and row["dollars"] == pytest.approx(spent.cost)


def test_the_dashboard_shows_todays_spend_against_the_budgets_for_the_instructors_token_only(
    ledger, upstream
):
    tokens = [ledger.add_learner("ada", dollars_per_day=2.0, models=("claude-haiku-5-5",))]
    lines: list[str] = []
    with GatewayServer(
        ledger, Upstream(upstream.url, KEY), log=lines.append, dashboard_token="board-secret"
    ) as gateway:
        learner(gateway, tokens[0]).messages.create(**HELLO)
        with pytest.raises(anthropic.PermissionDeniedError):  # recorded as refused, under the model asked for
            learner(gateway, tokens[0]).messages.create(**{**HELLO, "model": "<img src=x onerror=alert(1)>"})
        spent = rows(ledger)["ada"]["dollars"]
        with LOCAL.open(f"{gateway.url}/dashboard?token=board-secret", timeout=10) as response:
            shown = response.read().decode()
        assert f"the class spent <b>${spent:.4f}</b> of $2.00 in daily budgets (1 learner(s))" in shown
        assert "<td>ada</td>" in shown and KEY not in shown and tokens[0] not in shown
        assert "<img" not in shown and "&lt;img src=x" in shown  # what learners send is escaped
        with pytest.raises(anthropic.PermissionDeniedError):
            learner(gateway, tokens[0]).messages.create(**{**HELLO, "model": "x\n#99 POST forged -> 200"})
        for wrong in ("?token=guess", "", f"?token={tokens[0]}"):  # a learner's token is not the instructor's
            with pytest.raises(urllib.error.HTTPError) as e:
                LOCAL.open(f"{gateway.url}/dashboard{wrong}", timeout=10)
            assert e.value.code == 401
    assert all("\n" not in line for line in lines)  # a model name with a newline cannot forge a log line


def test_a_spent_course_budget_is_refused_for_good_naming_what_was_spent(gateway, ledger, upstream):
    token = ledger.add_learner("ada", dollars_per_day=2.0, dollars_total=0.00001)
    client = learner(gateway, token)
    client.messages.create(**HELLO)
    with pytest.raises(
        anthropic.PermissionDeniedError, match=r"course budget reached: ada has spent \$0.0000 of"
    ):
        client.messages.create(**HELLO)
    assert upstream.counts["requests"] == 1


def test_a_learner_hanging_up_mid_stream_is_billed_once_for_what_was_sent_and_frees_the_slot(ledger):
    token = ledger.add_learner("ada", dollars_per_day=2.0, concurrent=1)
    with (
        start_server(api_key=KEY, pace=0.2) as slow,
        GatewayServer(ledger, Upstream(slow.url, KEY)) as gateway,
    ):
        client = learner(gateway, token)
        with client.messages.stream(**HELLO) as stream:
            next(iter(stream))  # message_start, then the learner leaves
        deadline = time.monotonic() + 10
        while gateway.gate.running(ledger.find(token)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert gateway.gate.running(ledger.find(token)) == 0
        client.messages.create(**HELLO)  # the slot is free again
        whole = client.messages.create(**HELLO)
    row = rows(ledger)["ada"]  # the cut stream: its input, and none of the output it never sent on
    assert (row["calls"], row["input_tokens"]) == (3, 3 * whole.usage.input_tokens)
    assert row["output_tokens"] == 2 * whole.usage.output_tokens


def test_a_mapped_model_id_is_sent_as_its_replacement_and_limited_as_the_model_used(ledger, upstream, capsys):
    token = ledger.add_learner("ada", dollars_per_day=2.0, models=("claude-haiku-5-5",))
    retired = {"claude-haiku-4-1": "claude-haiku-5-5"}
    with GatewayServer(ledger, Upstream(upstream.url, KEY), model_map=retired) as gateway:
        reply = learner(gateway, token).messages.create(**{**HELLO, "model": "claude-haiku-4-1"})
    assert reply.model == "sim-small"  # the simulator answered the haiku it was sent
    assert rows(ledger)["ada"]["refusals"] == 0  # allowed: the model used is one ada may use
    (kept,) = ledger.exchanges("ada")  # recorded as ada's notebook asked: its replay asks the same
    assert json.loads(kept.request)["model"] == "claude-haiku-4-1"
    assert main(["gateway", "serve", "--upstream", upstream.url, "--map", "claude-haiku-4-1"]) == 2
    assert "write OLD=NEW" in capsys.readouterr().err
