"""Prompt caching: the cache model on hand-made prompts, the simulator and `agentlab serve`
reporting reads and writes as the API does, and the Claude path's breakpoints over real HTTP."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anthropic
import pytest

from agentlab import world
from agentlab.agents import WORLD_ROLES, model_agent
from agentlab.llm import SimulatedLLM, Usage
from agentlab.llm.anthropic import AnthropicLLM
from agentlab.llm.cache import Piece, cache_usage, min_cacheable
from agentlab.llm.serve import start_server
from agentlab.llm.simulated import count_tokens
from agentlab.planners import LLMPlanner
from agentlab.react import react, world_tools
from agentlab.run import orchestrate

TOOLS, SYSTEM, FIRST = Piece(300), Piece(900, "5m"), Piece(200, "5m")


pytestmark = pytest.mark.usefixtures("local_without_proxy")  # conftest.py: 127.0.0.1 past any proxy


def test_a_first_call_reads_the_warm_stable_prefix_writes_the_rest_and_pays_what_follows_as_input():
    # tools 300 + system 900 = 1,200 at the system breakpoint, warm: read; + 200 at the message
    # written; 50 more tokens after the last breakpoint stay input
    assert cache_usage([TOOLS, SYSTEM, FIRST], 1450, 1024) == (50, 1200, 200, 0)
    # with one breakpoint only, on the system prompt, nothing is known to be cached before
    assert cache_usage([TOOLS, SYSTEM, Piece(200)], 1400, 1024) == (200, 0, 1200, 0)


def test_the_next_turn_reads_what_the_last_one_wrote_and_writes_only_the_new_part():
    second = [TOOLS, SYSTEM, Piece(200), Piece(100, assistant=True, seconds=2.0), Piece(300, "5m")]
    # it reads 300 + 900 + 200 = 1,400 (the first call's prefix), writes 100 + 300
    assert cache_usage(second, 1800, 1024) == (0, 1400, 400, 0)


def test_a_prefix_under_the_models_minimum_is_not_cached_at_all():
    assert cache_usage([TOOLS, SYSTEM, FIRST], 1400, 4096) == (1400, 0, 0, 0)
    assert min_cacheable("claude-opus-5-5") == 512 and min_cacheable("claude-haiku-5-5") == 4096
    assert min_cacheable("sim-large") == 512 and min_cacheable("sim-small") == 4096


def test_an_entry_older_than_its_lifetime_is_gone_and_one_hour_entries_outlive_it():
    slow = [TOOLS, SYSTEM, Piece(200), Piece(100, assistant=True, seconds=400.0), Piece(300, "5m")]
    assert cache_usage(slow, 1800, 1024) == (0, 1200, 600, 0)  # 400 s > 5 minutes: gone, but the warm prefix
    hour = [TOOLS, Piece(900, "1h"), Piece(200), Piece(100, assistant=True, seconds=400.0), Piece(300, "1h")]
    assert cache_usage(hour, 1800, 1024) == (0, 1400, 0, 400)


def test_one_breakpoint_at_the_end_writes_it_all_and_no_breakpoint_caches_nothing():
    assert cache_usage([TOOLS, Piece(900), FIRST], 1400, 1024) == (0, 0, 1400, 0)  # one breakpoint: the end
    assert cache_usage([TOOLS, Piece(900), Piece(200)], 1400, 1024) == (1400, 0, 0, 0)


LONG_SYSTEM = "You answer questions about the archipelago. " * 60  # 2,700 characters: 675 tokens


def test_the_simulator_reports_writes_then_reads_and_says_the_same_as_without_caching():
    plain, cached = SimulatedLLM(seed=0), SimulatedLLM(seed=0, cache="5m")
    turn = [{"role": "user", "content": "What is the capital of Veldra?"}]
    first, first_cached = (llm.complete(system=LONG_SYSTEM, messages=turn) for llm in (plain, cached))
    assert first_cached.text == first.text and first_cached.latency == first.latency
    system, question = count_tokens(LONG_SYSTEM), count_tokens(turn[0]["content"])
    # the system prompt is the stable prefix, warm: read; the question written
    assert first_cached.usage == Usage(0, first.usage.output_tokens, system, question)
    more = [*turn, {"role": "assistant", "content": first.text}, {"role": "user", "content": "And its size?"}]
    second = cached.complete(system=LONG_SYSTEM, messages=more)
    written = count_tokens(first.text) + count_tokens("And its size?")
    assert second.usage == Usage(0, second.usage.output_tokens, system + question, written)
    assert second.usage.prompt_tokens == plain.complete(system=LONG_SYSTEM, messages=more).usage.input_tokens
    with pytest.raises(ValueError, match="cache lifetime must be one of"):
        SimulatedLLM(cache="forever")


def test_a_react_run_and_a_plan_then_execute_run_on_the_simulator_read_and_write_the_cache():
    llm = SimulatedLLM(seed=0, cache="5m")
    task = world.sample_tasks()[1]
    paged = world_tools(0.1, page_tokens=600)  # long tool results, so the history passes 512 tokens
    alone = react(task.question, llm, tools=paged)
    by_name = {t.name: t for t in paged}
    team = {
        role: model_agent(role, system, llm, [by_name[name] for name in tools], description=what)
        for role, (what, tools, system) in WORLD_ROLES.items()
    }
    team = orchestrate(task.question, LLMPlanner(llm, team), team)
    for run in (alone, team):
        total = sum((c.usage for _, _, c in run.calls), Usage())
        assert total.cache_read_tokens > 0 and total.cache_write_tokens > 0
    plain = SimulatedLLM(seed=0)
    again = react(task.question, plain, tools=paged)
    assert again.answer == alone.answer  # caching changes the bill, never what is said
    assert sum(c.usage.input_tokens for _, _, c in again.calls) == sum(
        c.usage.prompt_tokens for _, _, c in alone.calls
    )


def test_agentlab_serve_honours_the_breakpoints_the_claude_path_sends_and_reports_the_cache_usage():
    with start_server() as server:
        llm = AnthropicLLM("claude-opus-5-5", "claude-opus-5-5", base_url=server.url, api_key="test")
        turn = [{"role": "user", "content": "What is the capital of Veldra?"}]
        first = llm.complete(system=LONG_SYSTEM, messages=turn)
        more = [*turn, {"role": "assistant", "content": first.text}, {"role": "user", "content": "Its size?"}]
        second = llm.complete(system=LONG_SYSTEM, messages=more)
        direct = SimulatedLLM(seed=0, cache="5m").complete(system=LONG_SYSTEM, messages=more)
        assert second.usage == direct.usage and second.usage.cache_read_tokens > 0
        off = AnthropicLLM("claude-opus-5-5", base_url=server.url, api_key="test", cache=None)
        assert off.complete(system=LONG_SYSTEM, messages=more).usage.cache_read_tokens == 0


def test_the_claude_path_sends_its_breakpoints_over_real_http_and_reads_the_cache_usage_back():
    bodies = []

    class API(BaseHTTPRequestHandler):
        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            usage = {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 700,
                     "cache_creation_input_tokens": 40}
            reply = json.dumps({"id": "m", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
                                "content": [{"type": "text", "text": "Orsk."}], "stop_reason": "end_turn",
                                "usage": usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), API)
    threading.Thread(target=http.serve_forever, args=(0.05,), daemon=True).start()
    try:
        llm = AnthropicLLM(base_url=f"http://127.0.0.1:{http.server_port}", api_key="test", max_retries=0)
        completion = llm.complete(system="You plan.", messages=[{"role": "user", "content": "Go."}])
    finally:
        http.shutdown()
        http.server_close()
    marker = {"type": "ephemeral"}
    assert bodies[0]["system"] == [{"type": "text", "text": "You plan.", "cache_control": marker}]
    assert bodies[0]["cache_control"] == marker  # automatic caching: the conversation so far
    assert completion.usage == Usage(3, 2, 700, 40)


def test_the_sdk_reads_the_cache_fields_serve_reports():
    with start_server() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test")
        block = {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        message = client.messages.create(model="claude-opus-5-5", max_tokens=200, system=[block],
                                         messages=[{"role": "user", "content": "Hello"}])
        assert message.usage.cache_creation_input_tokens == count_tokens(LONG_SYSTEM)
        assert message.usage.cache_creation.ephemeral_1h_input_tokens == count_tokens(LONG_SYSTEM)
        assert message.usage.cache_read_input_tokens == 0


def test_cache_multipliers_come_from_the_price_table():
    # a read is not one figure: 0.1x on some models, 0.05x and less on others; every legend and
    # prose figure is computed from the table (issue 35)
    from agentlab import diagrams
    from agentlab.llm.usage import PRICES, cache_multipliers

    opus = cache_multipliers("claude-opus-5-5")
    assert opus == pytest.approx({"read": 0.05, "write": 1.25, "write_1h": 2.0})
    assert cache_multipliers("sim-large")["read"] == pytest.approx(0.1)
    assert cache_multipliers("claude-haiku-5-5")["write_1h"] == pytest.approx(2.0)  # its own 1-hour rate
    reads = [cache_multipliers(m)["read"] for m in PRICES]
    assert f"{min(reads):g}x to {max(reads):g}x" in diagrams.LEGEND["cache_read"]


def test_agentlab_serve_remembers_what_it_cached_on_its_own_clock_write_read_expire():
    """The server's cache model read only the request: the same request twice wrote the system
    prompt both times and never read it. Claude writes, then reads within the lifetime, then forgets."""
    now = [1000.0]
    written = count_tokens(LONG_SYSTEM)

    def ask(client, ttl="5m"):
        block = {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral", "ttl": ttl}}
        usage = client.messages.create(model="claude-opus-5-5", max_tokens=200, system=[block],
                                       messages=[{"role": "user", "content": "Hello"}]).usage
        return usage.cache_creation_input_tokens, usage.cache_read_input_tokens

    with start_server(clock=lambda: now[0]) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        assert ask(client) == (written, 0)  # the first: a write
        now[0] += 299
        assert ask(client) == (0, written)  # within 5 minutes: a read, which keeps it alive
        now[0] += 299
        assert ask(client) == (0, written)
        now[0] += 301
        assert ask(client) == (written, 0)  # 5 minutes after its last use: gone, written again
        now[0] += 301
        assert ask(client, "1h") == (written, 0)
        now[0] += 3000
        assert ask(client, "1h") == (0, written)
        now[0] += 3601
        assert ask(client, "1h") == (written, 0)
    direct = SimulatedLLM(seed=0, cache="5m")  # in process: deterministic, whatever the clock
    assert len({direct.complete(system=LONG_SYSTEM, messages=[{"role": "user", "content": "Hello"}]).usage
                for _ in range(2)}) == 1
