"""`agentlab serve` over real HTTP on 127.0.0.1, driven by the real `anthropic` SDK: it answers
what the simulator answers, in the Messages API's shapes; it sends each fault on demand; a run
through it ends as the README says for each fault; and the command starts, logs and stops."""

from __future__ import annotations

import json
import re
import signal
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
from agentlab.agents import WORLD_ROLES, world_team
from agentlab.course.cli import main
from agentlab.llm import ModelError, SimulatedLLM
from agentlab.llm.anthropic import AnthropicLLM, api_schema
from agentlab.llm.serve import FAULT_HEADER, SimServer, parse_fault, simulator_profile, start_server
from agentlab.plan import Plan
from agentlab.planners import LLMPlanner, plan_schema, planner_prompt
from agentlab.recovery import Retry
from agentlab.run import orchestrate
from agentlab.world.mistakes import ERROR_KINDS
from agentlab.world.tools import FUNCTIONS, TOOLS

TASK = world.sample_tasks()[1]  # three hops and a report: a plan, then a turn or more per step
RESEARCHER = WORLD_ROLES["researcher"][2]
TOOL_SPECS = [
    {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
    for t in (TOOLS["lookup"], TOOLS["search"])
]
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy


pytestmark = pytest.mark.usefixtures("local_without_proxy")  # conftest.py: 127.0.0.1 past any proxy


@pytest.fixture
def server():
    with start_server() as running:
        yield running


def sdk(url: str, **options) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=options.pop("api_key", "test-key"), **options)


def post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """One raw POST: (status, headers, body), an error status included."""
    request = urllib.request.Request(url, body, {"content-type": "application/json", **(headers or {})})
    try:
        with LOCAL.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


# --- what it answers -----------------------------------------------------------------------------


def test_the_sdk_gets_the_simulators_tool_calls_text_and_usage_as_messages(server):
    """A researcher's turn as the kit's executor sends it: the reply holds the very tool calls the
    simulator makes (as `tool_use` blocks), its usage and stop reason; the tool results go back
    and the answer comes as text. The model is the simulator profile that answered."""
    system, tools, specs = RESEARCHER, [TOOLS["lookup"], TOOLS["search"]], TOOL_SPECS
    messages = [{"role": "user", "content": "What is the capital of Kelloway?"}]
    simulator = SimulatedLLM(seed=0)
    client = sdk(server.url, max_retries=0)

    for turn in range(2):
        reply = client.messages.create(
            model="claude-haiku-5-5", max_tokens=500, system=system, tools=specs, messages=messages
        )
        expected = simulator.complete(
            system=system, messages=messages, tools=tools, model="sim-small", max_tokens=500
        )
        assert reply.model == "sim-small" and reply.id.startswith("msg_sim_") and reply.role == "assistant"
        assert reply.stop_reason == expected.stop_reason
        assert (reply.usage.input_tokens, reply.usage.output_tokens) == (
            expected.usage.input_tokens,
            expected.usage.output_tokens,
        )
        calls = [(b.id, b.name, b.input) for b in reply.content if b.type == "tool_use"]
        assert calls == [(c.id, c.name, dict(c.args)) for c in expected.tool_calls]
        assert "".join(b.text for b in reply.content if b.type == "text") == expected.text
        if turn == 0:
            assert reply.stop_reason == "tool_use" and calls, "the first turn looks the capital up"
            results = [FUNCTIONS[name](**args) for _, name, args in calls]
            messages = messages + [
                {"role": "assistant", "content": [b.to_dict() for b in reply.content]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": r}
                        for (i, _, _), r in zip(calls, results, strict=True)
                    ],
                },
            ]
    assert reply.stop_reason == "end_turn" and world.check_answer(reply.content[0].text, "Westwick")
    assert server.counts["answered"] == 2


def test_structured_output_as_sdk_2_sends_it_gets_a_plan_that_fits(server):
    """`output_config={"format": {"type": "json_schema", ...}}`: the planner's request, with the
    schema as the API wants it, is answered with a plan in JSON, the simulator's own."""
    team = world_team(SimulatedLLM())
    schema = api_schema(plan_schema(team))
    reply = sdk(server.url, max_retries=0).messages.create(
        model="claude-opus-5-5",
        max_tokens=2000,
        system=planner_prompt(team),
        messages=[{"role": "user", "content": TASK.question}],
        output_config={"format": {"type": "json_schema", "schema": schema}},
    )
    assert reply.model == "sim-large" and reply.stop_reason == "end_turn"
    plan = Plan.from_json(reply.content[0].text)
    assert len(plan) >= 3
    expected = SimulatedLLM(seed=0).complete(
        system=planner_prompt(team),
        messages=[{"role": "user", "content": TASK.question}],
        schema=schema,
        max_tokens=2000,
    )
    assert reply.content[0].text == expected.text


def test_a_system_prompt_sent_as_text_blocks_is_read_as_the_same_text(server):
    client, ask = sdk(server.url), {"model": "claude-haiku-5-5", "max_tokens": 300, "tools": TOOL_SPECS}
    ask["messages"] = [{"role": "user", "content": "What is the capital of Kelloway?"}]
    as_text = client.messages.create(system=RESEARCHER, **ask)
    as_blocks = client.messages.create(system=[{"type": "text", "text": RESEARCHER}], **ask)
    assert as_blocks.content == as_text.content and as_text.stop_reason == "tool_use"


def test_a_mistake_the_simulator_makes_on_purpose_is_named_in_a_header_and_in_the_log():
    lines: list[str] = []
    with start_server(error_rate=1.0, log=lines.append) as server:
        raw = sdk(server.url).messages.with_raw_response.create(
            model="claude-haiku-5-5",
            max_tokens=300,
            system=RESEARCHER,
            tools=TOOL_SPECS,
            messages=[{"role": "user", "content": "What is the capital of Kelloway?"}],
        )
    kind = raw.headers["x-agentlab-mistake"]
    assert kind in ERROR_KINDS and raw.parse().content and f"[simulator mistake: {kind}]" in lines[0]


@pytest.mark.parametrize(
    ("model", "profile"),
    [
        ("claude-haiku-5-5", "sim-small"),
        ("my-SMALL-model", "sim-small"),
        ("claude-opus-5-5", "sim-large"),
        ("qwen3:8b", "sim-large"),
        ("sim-small", "sim-small"),
        ("sim-planner", "sim-planner"),
    ],
)
def test_model_names_map_to_simulator_profiles_as_documented(model, profile):
    assert simulator_profile(model) == profile


def test_a_key_is_taken_from_x_api_key_or_bearer_and_a_wrong_one_gets_a_401():
    body = json.dumps({"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]})
    with start_server(api_key="class-key-1234") as server:
        url = server.url + "/v1/messages"
        assert post(url, body.encode(), {"x-api-key": "class-key-1234"})[0] == 200
        assert post(url, body.encode(), {"authorization": "Bearer class-key-1234"})[0] == 200
        assert sdk(server.url, api_key="class-key-1234").messages.create(**json.loads(body)).content
        with pytest.raises(anthropic.AuthenticationError) as refused:
            sdk(server.url, api_key="not-the-key-5678").messages.create(**json.loads(body))
        assert refused.value.status_code == 401 and "not-the-key" not in str(refused.value)
        assert post(url, body.encode())[0] == 401


@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b"<html>", {}, 400, "the body is not JSON"),
        (b"[1, 2]", {}, 400, "must be a JSON object"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}', {}, 400, "max_tokens"),
        (b'{"model": "m", "max_tokens": 5, "messages": []}', {}, 400, "messages"),
        (b'{"model": "m", "max_tokens": 5, "messages": [{"role": "bot", "content": "x"}]}', {}, 400, "role"),
        (
            b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [1]}]}',
            {},
            400,
            "content",
        ),
        (b'{"model": "m", "max_tokens": 5, "stream": true, "messages": []}', {}, 400, "messages"),
        (b'{"model": "m", "max_tokens": 5, "tools": [{}], "messages": []}', {}, 400, "tools"),
        (b"{}", {FAULT_HEADER: "teapot"}, 400, "unknown fault 'teapot'"),
        (b"{}", {FAULT_HEADER: "slow:nan"}, 400, "seconds must be"),
    ],
)
def test_a_bad_request_gets_a_400_that_says_what_is_wrong(server, body, headers, status, words):
    code, _, reply = post(server.url + "/v1/messages", body, headers)
    error = json.loads(reply)["error"]
    assert code == status and error["type"] == "invalid_request_error" and words in error["message"]


def test_other_paths_get_a_404_and_a_browser_gets_a_line_saying_what_this_is(server):
    code, _, reply = post(server.url + "/v1/complete", b"{}")
    assert code == 404 and "/v1/messages" in json.loads(reply)["error"]["message"]
    for path in ("/", "/v1/messages", "/v1/modelsx", "/v1/models/claude-nonesuch"):  # GET answered 200 text
        with pytest.raises(urllib.error.HTTPError) as page:
            LOCAL.open(server.url + path, timeout=10)
        said = json.loads(page.value.read())["error"]
        assert page.value.code == 404 and said["type"] == "not_found_error" and "simulator" in said["message"]


def test_the_sdk_lists_the_models_as_the_api_does(server):
    """`client.models.list()` broke on the plain-text page every GET used to get."""
    client = sdk(server.url)
    listed = [m.id for m in client.models.list()]
    assert {"sim-large", "sim-small", "claude-haiku-5-5", "claude-opus-5-5"} <= set(listed)
    assert "sim-small" in client.models.retrieve("claude-haiku-5-5").display_name


# --- faults, as the SDK sees them ------------------------------------------------------------------

HELLO = {"model": "claude-haiku-5-5", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}


@pytest.mark.parametrize(
    ("fault", "status", "kind"),
    [("429", 429, "rate_limit_error"), ("500", 500, "api_error"), ("529", 529, "overloaded_error")],
)
def test_an_error_fault_is_the_apis_error_with_retry_after_when_given(server, fault, status, kind):
    code, headers, reply = post(
        server.url + "/v1/messages", json.dumps(HELLO).encode(), {FAULT_HEADER: fault + ":0.25"}
    )
    assert code == status and json.loads(reply)["error"]["type"] == kind
    assert headers["retry-after"] == "0.25"
    code, headers, _ = post(server.url + "/v1/messages", json.dumps(HELLO).encode(), {FAULT_HEADER: fault})
    assert headers.get("retry-after") == ("1" if fault == "429" else None)  # 429: 1 s unless told


def test_the_sdk_retries_a_fault_on_one_request_in_two_and_the_log_shows_the_retry():
    lines: list[str] = []
    with start_server(fault="429:0.01", every=2, log=lines.append) as server:
        client = sdk(server.url, max_retries=1)
        for _ in range(2):
            assert client.messages.create(**HELLO).content
    assert (
        dict(server.counts).items() >= {"requests": 3, "answered": 2, "faults": 1, "429": 1, "200": 2}.items()
    )
    assert "fault 429, retry-after 0.01 s" in lines[1] and "retry 1" in lines[2] and "-> 200" in lines[2]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("429", anthropic.RateLimitError),
        ("500", anthropic.InternalServerError),
        ("529", anthropic.OverloadedError),
    ],
)
def test_a_fault_in_a_header_fails_every_try_so_the_sdk_gives_up(server, fault, error):
    with pytest.raises(error):
        sdk(server.url, max_retries=2).messages.create(**HELLO, extra_headers={FAULT_HEADER: f"{fault}:0.01"})
    assert server.counts["requests"] == 3 and server.counts["faults"] == 3  # a try and two retries


@pytest.mark.parametrize(("fault", "type_"), [("broken", "text/html"), ("shape", "application/json")])
def test_a_broken_200_is_a_200_that_is_not_a_message(server, fault, type_):
    code, headers, reply = post(
        server.url + "/v1/messages", json.dumps(HELLO).encode(), {FAULT_HEADER: fault}
    )
    assert code == 200 and headers["Content-Type"].startswith(type_) and b'"content": [' not in reply


def test_a_slow_reply_comes_late_and_a_timeout_gives_up_on_it(server):
    started = time.perf_counter()
    assert sdk(server.url).messages.create(**HELLO, extra_headers={FAULT_HEADER: "slow:0.3"}).content
    assert time.perf_counter() - started >= 0.3
    with pytest.raises(anthropic.APITimeoutError):
        sdk(server.url, max_retries=0, timeout=0.2).messages.create(
            **HELLO, extra_headers={FAULT_HEADER: "slow:5"}
        )


def test_it_starts_at_once_and_stop_cuts_a_slow_reply_short():
    started = time.perf_counter()
    server = start_server(fault="slow:60")
    assert time.perf_counter() - started < 0.5
    replies: list = []
    waiting = threading.Thread(
        target=lambda: replies.append(post(server.url + "/v1/messages", json.dumps(HELLO).encode()))
    )
    waiting.start()
    deadline = time.monotonic() + 5
    while not server.counts["requests"] and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.perf_counter()
    server.stop()
    waiting.join(timeout=5)
    assert time.perf_counter() - started < 1 and not waiting.is_alive()
    assert replies[0][0] == 503


def test_a_client_gone_mid_reply_is_counted_and_prints_no_traceback(server, capfd):
    """What a handler raises when its client went away (a broken pipe mid-stream) is tallied as a
    "handler error", not printed as a traceback on the console of `agentlab serve --log`."""
    try:
        raise BrokenPipeError("the client went away")
    except BrokenPipeError:
        server.handle_error(None, ("127.0.0.1", 1))
    assert server.counts["handler errors"] == 1 and "Traceback" not in capfd.readouterr().err


def test_a_model_sends_its_calls_down_one_connection_and_stop_ends_it():
    """HTTP/1.1 keep-alive, as the API: one connection per client, not one per call (each new one
    cost a connect and two server threads); a stopped server answers nothing more on it."""
    server = start_server()
    llm = AnthropicLLM(base_url=server.url, api_key="test-key", max_retries=0)
    for _ in range(3):
        assert llm.complete(system="", messages=[{"role": "user", "content": "Hi"}]).text
    assert server.counts["requests"] == 3 and server.counts["connections"] == 1
    server.stop()
    started = time.perf_counter()
    with pytest.raises(ModelError, match="could not connect to http://127.0.0.1"):
        llm.complete(system="", messages=[{"role": "user", "content": "Hi"}])
    assert time.perf_counter() - started < 5 and server.counts["requests"] == 3


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("teapot", "unknown fault 'teapot'"),
        ("slow:nan", "must be a number in [0, 600.0]"),
        ("slow:601", "must be a number in [0, 600.0]"),
        ("429:-1", "must be a number"),
        ("429:soon", "seconds must be a number, got 'soon'"),
        ("broken:2", "takes no seconds"),
    ],
)
def test_a_bad_fault_is_refused_by_name(text, words):
    with pytest.raises(ValueError, match="fault") as refused:
        parse_fault(text)
    assert words in str(refused.value)


def test_bad_server_settings_are_refused_before_a_port_is_taken():
    for bad in ({"every": 0}, {"every": 1.5}, {"error_rate": float("nan")}, {"port": 70000}):
        with pytest.raises(ValueError):
            SimServer(**bad)


# --- a run through the server, for each fault ----------------------------------------------------
#
# (fault, every, agents do every step, recovery, how the run ends, words its reason must hold).
# The README's table says the same in words.

RUNS = [
    (None, 1, False, (), "done", ""),
    ("429:0.01", 2, False, (), "done", ""),  # the SDK's retry gets through
    ("500:0.01", 2, False, (), "done", ""),
    ("529:0.01", 2, False, (), "done", ""),
    ("429:0.01", 3, True, (), "done", ""),  # executor turns too
    ("slow:0.05", 1, False, (), "done", ""),
    ("429:0.01", 1, False, (), "failed", "planning failed: .* answered 429 .*rate limited"),
    ("500:0.01", 1, False, (), "failed", "planning failed: .* answered 500"),
    ("529:0.01", 1, False, (), "failed", "planning failed: .* answered 529 .*overloaded"),
    ("429:3600", 1, False, (), "failed", "answered 429 .*asked to wait 3600 s"),  # the kit's ceiling
    ("broken", 1, False, (), "failed", "planning failed: .*127.0.0.1.* answered 200 but not with a message"),
    ("shape", 1, False, (), "failed", "planning failed: .*127.0.0.1.* answered 200 but not with a message"),
    ("broken", 3, True, (), "failed", "step 's1' .* answered 200 but not with a message"),  # a turn
    ("broken", 3, True, (Retry(1),), "done", ""),  # ... which the kit's Retry does again
    ("shape", 4, True, (Retry(1),), "done", ""),
    ("slow:5", 1, False, (), "failed", "planning failed: .*no answer .*within 0.3 s"),
]


@pytest.mark.parametrize(("fault", "every", "agents_only", "recovery", "status", "reason"), RUNS)
def test_a_run_through_a_faulty_server_ends_as_documented(
    fault, every, agents_only, recovery, status, reason
):
    """Planner and team on `AnthropicLLM` (real SDK, one retry) against the server: a fault the
    retries or `Retry` get past leaves the answer unchanged; one they cannot ends in a failed run
    whose reason says what happened, briefly; never an exception, and never a long wait. Every
    call the simulator answered is a call the run counts."""
    with start_server(fault=fault, every=every) as server:
        timeout = 0.3 if fault == "slow:5" else 10
        llm = AnthropicLLM(base_url=server.url, api_key="test-key", max_retries=1, timeout=timeout)
        team = world_team(llm)
        planner = LLMPlanner(llm, team, tool_steps=not agents_only)
        run = within(20, lambda: orchestrate(TASK.question, planner, team, recovery=list(recovery)))
    assert run.status == status, run.reason
    if status == "done":
        assert world.check_answer(run.deliverable, TASK.answer)
    else:
        assert re.search(reason, run.reason), run.reason
        assert len(run.reason) < 600 and "Traceback" not in run.reason
    if fault and every == 1 and not fault.startswith("slow"):
        assert run.plan is None and server.counts["faults"] >= 1
    assert len(run.calls) == server.counts["answered"], "a call paid for and not counted, or counted twice"


def within(seconds: float, work):
    """`work()`'s result (or its exception), or a failed test if it runs longer than `seconds`."""
    outcome: futures.Future = futures.Future()

    def run():
        try:
            outcome.set_result(work())
        except BaseException as error:  # noqa: BLE001 - raised again in the test's thread
            outcome.set_exception(error)

    threading.Thread(target=run, daemon=True).start()  # abandoned if it hangs
    try:
        return outcome.result(timeout=seconds)
    except futures.TimeoutError:
        raise AssertionError(f"still running after {seconds} s") from None


# --- the command ---------------------------------------------------------------------------------


def read_until(process: subprocess.Popen, marker: str, seconds: float = 30) -> str:
    return console.read_until(process, marker, seconds, "`agentlab serve`")


def test_agentlab_serve_says_where_it_listens_logs_each_request_and_stops_on_ctrl_c():
    command = [sys.executable, "-m", "agentlab.course.cli", "serve", "--port", "0", "--log", "--seed", "3"]
    # started as a shell starts a background job, with SIGINT ignored: Ctrl-C (kill -INT) still stops it
    ignore_interrupts = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ignore_interrupts
    )
    try:
        shown = read_until(process, "Ctrl-C")
        url = shown.split("export ANTHROPIC_BASE_URL=")[1].split()[0]
        assert "export ANTHROPIC_API_KEY=" in shown and "seed 3" in shown and "simulator" in shown
        assert sdk(url).messages.create(**HELLO).model == "sim-small"
        assert "#1 POST /v1/messages claude-haiku-5-5 as sim-small" in read_until(process, "-> 200")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 0 and "Stopped after 1 request(s)." in out.decode(), err.decode()


def test_agentlab_serve_refuses_a_bad_fault_and_a_port_in_use(capsys):
    assert main(["serve", "--port", "0", "--fault", "teapot"]) == 2
    assert "unknown fault 'teapot'" in capsys.readouterr().err
    with start_server() as taken:
        assert main(["serve", "--port", str(taken.server_port)]) == 2
    assert f"cannot listen on 127.0.0.1:{taken.server_port}" in capsys.readouterr().err
