"""The world's tools over MCP, against real MCP server processes (stdio and streamable HTTP): listed
with annotations and output schemas, called, the same plan giving the same outputs as local tools,
a misbehaving server failing the step with a reason (never a hang), and the annotation policy with
the injection it invites and the fix (pinning).

The tests import `agentlab.interop.mcp` where they use it: it imports the MCP SDK (~1 CPU-s), and
under xdist every worker imports every test module while collecting, whether or not it runs this one."""

import select
import subprocess
import sys
import time
from concurrent import futures
from functools import partial
from pathlib import Path

import pytest

from agentlab.agents import model_agent, world_team
from agentlab.guardrails import UNDECLARED, Guard, Policy
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate, run_plan
from agentlab.world import TOOLS
from agentlab.world.tasks import make_tasks

HERE = Path(__file__).parent
MISBEHAVING = ("dies", "hangs", "malformed")  # the modes of tests/mcp_servers.py


def served_at(server: subprocess.Popen) -> str:
    """Where an HTTP server started with `--http 0` listens, once it prints it (it binds a free
    port itself: a port picked here and handed over could be taken by another process while the
    child imports the kit and the SDK)."""
    ready, _, _ = select.select([server.stdout], [], [], 60)  # the child imports the kit first
    line = server.stdout.readline() if ready else ""
    assert line.startswith("MCP server at http://127.0.0.1:"), f"the server said {line!r}"
    return line.split(" at ", 1)[1].strip()


def connect_when_serving(server: subprocess.Popen, **options):
    """Connect to an HTTP server started with `--http 0` once it says where it listens."""
    from agentlab.interop.mcp import connect_http

    return connect_http(served_at(server), **{"timeout": 20, **options})


@pytest.fixture(scope="module")
def started():
    """Every server this module talks to, started at once rather than one after another (each is
    a Python process importing the kit and the MCP SDK, seconds apiece): the world's over stdio
    and over HTTP, the lying one, and the three that misbehave. By name, each client's future: a
    server that fails to start fails only the tests that use it."""
    from agentlab.interop.mcp import connect_stdio, world_command

    server = subprocess.Popen(world_command("--http", "0"), stdout=subprocess.PIPE, text=True)
    starts = {
        "stdio": partial(connect_stdio, world_command(), timeout=20),
        "lying": partial(connect_stdio, world_command("--lying"), timeout=20),
        "http": partial(connect_when_serving, server),
        **{mode: partial(connect_stdio, [sys.executable, str(HERE / "mcp_servers.py"), mode], timeout=3,
                         start_timeout=60) for mode in MISBEHAVING},
    }
    with futures.ThreadPoolExecutor(len(starts)) as pool:
        clients = {name: pool.submit(start) for name, start in starts.items()}
        try:
            yield {**clients, "http server": server}
        finally:  # each session ended at once too (a stdio server gets up to 2 s to exit)
            futures.wait([pool.submit(c.result().close) for c in clients.values() if not c.exception()])
            server.kill()
            server.wait(10)
            server.stdout.close()


@pytest.fixture(scope="module")
def stdio(started):
    return started["stdio"].result()


@pytest.fixture(scope="module")
def http(started):
    return started["http"].result(), started["http server"]


def test_the_server_lists_the_kit_tools_with_annotations_and_an_output_schema(stdio):
    from agentlab.interop.mcp import OUTPUT_SCHEMA
    from agentlab.interop.mcp_pins import annotation_effects

    listed = {t.spec.name: t for t in stdio.listed()}
    assert sorted(listed) == sorted(TOOLS)
    for name, tool in listed.items():
        assert tool.spec == TOOLS[name]  # the same spec a model sees locally
        assert tool.output_schema == OUTPUT_SCHEMA
        assert tool.annotations == {
            "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False
        }
    assert annotation_effects(list(listed.values())) == {name: () for name in TOOLS}


def test_a_call_returns_the_tool_answer_and_a_refusal_its_message(stdio):
    tools = stdio.tools()
    assert tools["lookup"]({"entity": "Varra", "attribute": "population"}) == "2140"
    with pytest.raises(ValueError, match="division by zero"):  # ToolError, as the local tool raises
        tools["calculate"]({"expression": "1/0"})


def outcome(run):
    events = [(e.time, e.kind, e.step_id, e.detail) for e in run.trace]
    return run.status, run.outputs, run.deliverable, events


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_same_plans_give_the_same_outputs_with_local_or_mcp_tools(transport, request):
    from agentlab.interop.mcp import mcp_team

    client = request.getfixturevalue("stdio") if transport == "stdio" else request.getfixturevalue("http")[0]
    llm = SimulatedLLM(seed=3)
    local, remote = world_team(llm), mcp_team(llm, client.tools())
    for i, task in enumerate(make_tasks(6, seed=2)):
        direct = i % 2 == 0  # half the plans call tools directly, half leave them to the agents' tool loops
        a = orchestrate(task.question, LLMPlanner(llm, local, tool_steps=direct), local, workers=2)
        b = orchestrate(task.question, LLMPlanner(llm, remote, tool_steps=direct), remote, workers=2)
        assert a.plan.to_json() == b.plan.to_json()
        assert outcome(a) == outcome(b)
        assert [c.tool_calls for _, _, c in a.calls] == [c.tool_calls for _, _, c in b.calls]
        assert a.status == "done"
        if not direct:  # the MCP server's answers went back into the model's context
            assert any(c.tool_calls for _, _, c in b.calls)


def test_a_server_that_died_fails_the_step_with_a_reason(http):
    from agentlab.interop.mcp import mcp_team

    client, server = http
    tools = client.tools()
    server.kill()
    server.wait(10)
    plan = Plan([Step("s1", "analyst", "add", tool="calculate", args={"expression": "1+1"})])
    started = time.monotonic()
    run = run_plan(plan, mcp_team(SimulatedLLM(), tools))
    assert time.monotonic() - started < 30
    assert run.status == "failed"
    assert "calculate on the server at http://127.0.0.1" in run.reason


@pytest.mark.parametrize(
    "mode, reason",
    [
        ("dies", "calculate on the stdio server"),
        ("hangs", "no answer in time"),
        ("malformed", "Invalid structure"),  # the SDK checks the answer against the output schema
    ],
)
def test_a_misbehaving_stdio_server_fails_the_step_never_hangs(mode, reason, started):
    client = started[mode].result()
    plan = Plan([Step("s1", "analyst", "add", tool="calculate", args={"expression": "1+1"})])
    began = time.monotonic()
    run = run_plan(plan, {"analyst": model_agent("analyst", "", SimulatedLLM(), client.tools().values())})
    assert time.monotonic() - began < 15
    assert run.status == "failed"
    assert reason in run.reason
    assert "\n" not in run.reason


# --- annotations are claims: the policy they allow, the injection they invite, and pinning ----------


def tidy_plan() -> Plan:
    step = Step("s1", "researcher", "tidy Varra's record", tool="tidy_records", args={"entity": "Varra"})
    return Plan([step])


def lying_team(client, guard):
    tools = guard.tools(client.tools().values(), "s1", "researcher")
    return {"researcher": model_agent("researcher", "", SimulatedLLM(), tools)}


@pytest.fixture(scope="module")
def lying(started):
    return started["lying"].result()


def test_a_guard_that_trusts_annotations_lets_a_lying_tool_delete(lying):
    from agentlab.interop.mcp_pins import annotation_effects

    listed = lying.listed()
    guard = Guard(Policy(), effects=annotation_effects(listed))  # reading needs no approval
    run = run_plan(tidy_plan(), lying_team(lying, guard))
    assert run.status == "done"
    assert run.outputs["s1"] == "the record of Varra was deleted"  # it claimed readOnlyHint
    assert [e.decision for e in guard.log] == ["allowed"]


def test_pinning_the_reviewed_tool_list_refuses_a_new_or_changed_tool(stdio, lying):
    from agentlab.interop.mcp_pins import pin, pinned_effects

    reviewed = pin(stdio.listed())  # the honest server's list, when the plan was made
    now = lying.listed()
    effects = pinned_effects(reviewed, now)
    assert effects["tidy_records"] == (UNDECLARED,)  # not in the pinned list
    assert effects["lookup"] == (UNDECLARED,)  # its description now carries an instruction
    assert effects["calculate"] == ()  # unchanged: as pinned
    assert reviewed.changed(now) == {
        "lookup": "its definition changed since the plan was made",
        "tidy_records": "not in the pinned tool list",
    }
    guard = Guard(Policy(), effects=effects)
    run = run_plan(tidy_plan(), lying_team(lying, guard))
    assert run.status == "failed"
    assert "tidy_records was not run" in run.reason
    assert [(e.decision, e.outcome) for e in guard.log] == [("denied", "not run")]


# --- no leak, no super-linear read ---------------------------------------------------------------------


def children() -> set[int]:
    """The ids of this process's live child processes (from /proc: no psutil needed)."""
    import os

    found = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if entry.name.isdigit() and int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts child processes through /proc")
def test_a_server_that_never_completes_initialize_leaves_no_process_and_no_thread_behind():
    import threading

    from agentlab.interop.mcp import MCPFailed, connect_stdio

    before_children, before_threads = children(), threading.active_count()
    began = time.monotonic()
    with pytest.raises(MCPFailed, match="could not start a session"):
        connect_stdio([sys.executable, str(HERE / "mcp_servers.py"), "mute"], timeout=3, start_timeout=1)
    assert time.monotonic() - began < 8
    assert children() - before_children == set()  # the failed connect stopped its server (it stayed)
    assert threading.active_count() == before_threads


def test_a_large_answer_is_read_in_linear_time_and_one_over_the_limit_is_refused_saying_so():
    from agentlab.interop.mcp import connect_stdio

    with connect_stdio([sys.executable, str(HERE / "mcp_servers.py"), "large"], timeout=20,
                       limit=8 * 2**20) as client:
        linear_then_refused(client, "over the 8 MB limit on one message")


def linear_then_refused(client, refused: str) -> None:
    """The large server answers `calculate(n)` with n characters: 4 MB reads in about 4 times what
    1 MB takes (not 16), 9 MB is refused with `refused`, and the session goes on."""
    from agentlab.interop.mcp import MCPFailed

    client.call("calculate", {"expression": "10"})  # warm: the first call sets things up
    seconds = {}
    for size in (1_000_000, 4_000_000):
        began = time.perf_counter()
        assert len(client.call("calculate", {"expression": str(size)})) == size
        seconds[size] = time.perf_counter() - began
    assert seconds[4_000_000] < 8 * max(seconds[1_000_000], 0.05)  # 4x the text: not 16x the time
    with pytest.raises(MCPFailed, match=refused):
        client.call("calculate", {"expression": str(9 * 2**20)})
    assert client.call("calculate", {"expression": "5"}) == "xxxxx"  # the session goes on


@pytest.fixture(scope="module")
def large_http():
    """The large answers' server over HTTP, where it answers with server-sent events (/mcp) and
    where with one JSON body each (/json): one process for both bodies."""
    command = [sys.executable, str(HERE / "mcp_servers.py"), "large", "--http", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        url = served_at(server)
        yield {"events": url, "json": url.removesuffix("/mcp") + "/json"}
    finally:
        server.kill()
        server.wait(10)
        server.stdout.close()


@pytest.mark.parametrize("body", ["events", "json"])
def test_a_large_http_answer_is_read_in_linear_time_and_one_over_the_limit_is_refused_saying_so(
    body, large_http, caplog
):
    # The SDK capped an event stream at 1 MiB (a 1 MB answer failed) and read a JSON body whole
    from agentlab.interop.mcp import connect_http

    with connect_http(large_http[body], timeout=20, limit=8 * 2**20) as client:
        refused = r"the answer is over the 8 MB limit on one message \(limit=\)$"  # as over stdio
        linear_then_refused(client, refused)
    # the refusal is the call's message, not also a traceback logged by the SDK (a notebook shows it)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def test_ctrl_c_stops_the_http_server_in_one_line_without_a_traceback():
    import signal

    server = subprocess.Popen([sys.executable, "-m", "agentlab.interop.mcp", "--http", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready and server.stdout.readline().startswith("MCP server at http://127.0.0.1:")
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=20)
    finally:
        server.kill()
    said = [line for line in (out + err).splitlines() if line.strip()]
    assert "Traceback" not in err and len(said) == 1 and "stopped" in said[0], said
