"""Runs in a real tracing UI: Arize Phoenix, started here on 127.0.0.1, receives a run over
OTLP/HTTP; its REST API gives the spans back and the tree is checked; Chromium shows the trace.

Phoenix lives in a venv of its own (`make test-phoenix` builds it and runs these tests): it
needs anthropic<2 and the kit anthropic>=2. Without it these tests are skipped, unless
AGENTLAB_REQUIRE_PHOENIX=1 (as in CI), where a missing Phoenix is a failure. AGENTLAB_PHOENIX_URL
points the tests at a Phoenix already running instead."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_browser import CHROMIUM, CHROMIUM_ARGS, free_port, require_chromium

from agentlab.agents import WORLD_ROLES, ToolFunction
from agentlab.faults import Fault
from agentlab.guardrails import Guard, Policy, guarded_team
from agentlab.interop.otel import export_runs
from agentlab.llm.simulated import SimulatedLLM
from agentlab.planners import LLMPlanner
from agentlab.recovery import Retry
from agentlab.run import orchestrate
from agentlab.world import FUNCTIONS, TOOLS
from agentlab.world.tasks import make_tasks

KIT = Path(__file__).resolve().parents[1]
PHOENIX = Path(os.environ.get("AGENTLAB_PHOENIX", KIT / ".venv-phoenix" / "bin" / "phoenix"))
START_S = 300  # Phoenix migrates its database and builds its app on start: a minute on a busy machine
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str):
    with LOCAL.open(url, timeout=10) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if os.environ.get("AGENTLAB_PHOENIX_URL"):  # a Phoenix already running (while developing)
        yield os.environ["AGENTLAB_PHOENIX_URL"]
        return
    if not PHOENIX.exists():
        reason = f"{PHOENIX} is missing (make setup-phoenix)"
        if os.environ.get("AGENTLAB_REQUIRE_PHOENIX") == "1":
            pytest.fail(f"{reason}, and AGENTLAB_REQUIRE_PHOENIX=1 says the Phoenix tests must run")
        pytest.skip(reason)
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(tmp_path_factory.mktemp("phoenix")),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(tmp_path_factory.mktemp("phoenix-log") / "phoenix.log", "w")  # noqa: SIM115
    server = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            try:
                LOCAL.open(f"{base}/healthz", timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"Phoenix did not start within {START_S} s (exit code {server.poll()})")
                time.sleep(1)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()


def a_guarded_run_with_a_retry():
    llm = SimulatedLLM(seed=0)
    guard = Guard(Policy())
    tools = {name: ToolFunction(TOOLS[name], FUNCTIONS[name]) for name in TOOLS}
    team = guarded_team(llm, guard, WORLD_ROLES, tools)
    task = make_tasks(3, seed=1)[2]
    run = orchestrate(task.question, LLMPlanner(llm, team), team, recovery=[Retry(2)],
                      faults=[Fault(step="s1", times=1)])
    return run, guard.log


def spans_of_trace(base: str, project: str, trace_id: str, expected: int) -> list[dict]:
    """The trace's spans as Phoenix's REST API lists them (it ingests asynchronously: poll a while)."""
    deadline = time.monotonic() + 30
    while True:
        spans, cursor = [], ""
        while True:
            try:
                page = get(f"{base}/v1/projects/{project}/spans?limit=1000{cursor}")
            except urllib.error.HTTPError as error:  # 404: the project appears with its first span
                if error.code != 404:
                    raise
                page = {"data": []}
            spans += [s for s in page["data"] if s["context"]["trace_id"] == trace_id]
            if not page.get("next_cursor"):
                break
            cursor = f"&cursor={page['next_cursor']}"
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def test_a_run_sent_to_phoenix_comes_back_as_the_same_tree(phoenix):
    run, log = a_guarded_run_with_a_retry()
    [trace_id] = export_runs([run], f"{phoenix}/v1/traces", audits=[log], project="agentlab-test")
    expected = 2 + len(run.slots) + len(run.calls)
    spans = spans_of_trace(phoenix, "agentlab-test", trace_id, expected)
    assert len(spans) == expected
    by_id = {s["context"]["span_id"]: s for s in spans}
    [root] = [s for s in spans if not s["parent_id"]]
    assert root["name"] == "invoke_workflow planner-executor"
    assert all(s["parent_id"] in by_id for s in spans if s is not root)
    under_root = [s for s in spans if s["parent_id"] == root["context"]["span_id"]]
    kids = sorted(under_root, key=lambda s: s["start_time"])
    assert kids[0]["attributes"]["gen_ai.operation.name"] == "plan"
    steps = [(s["attributes"]["agentlab.step.id"], s["status_code"]) for s in kids[1:]]
    assert steps[:2] == [("s1", "ERROR"), ("s1", "UNSET")]  # the failed attempt, then the retry
    assert [e["name"] for e in root["events"]] == ["agentlab.retried"]
    decisions = [e for s in spans for e in s["events"] if e["name"] == "agentlab.guard.decision"]
    assert len(decisions) == len(log)
    chats = [s for s in spans if s["attributes"]["gen_ai.operation.name"] == "chat"]
    assert sum(s["attributes"]["gen_ai.usage.input_tokens"] for s in chats) == sum(
        c.usage.input_tokens for _, _, c in run.calls
    )


def test_the_trace_shows_in_phoenix_in_a_real_browser(phoenix, tmp_path):
    require_chromium()
    from playwright.sync_api import sync_playwright

    run, log = a_guarded_run_with_a_retry()
    [trace_id] = export_runs([run], f"{phoenix}/v1/traces", audits=[log], project="agentlab-ui")
    spans_of_trace(phoenix, "agentlab-ui", trace_id, 2 + len(run.slots) + len(run.calls))
    project = next(p["id"] for p in get(f"{phoenix}/v1/projects")["data"] if p["name"] == "agentlab-ui")
    shot = tmp_path / "phoenix-trace.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{phoenix}/projects/{project}/traces/{trace_id}", timeout=60_000)
            page.get_by_text("invoke_workflow planner-executor").first.wait_for(timeout=60_000)
            page.get_by_text("execute_tool lookup").first.wait_for(timeout=30_000)
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 20_000
