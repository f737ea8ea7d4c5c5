"""Streaming the plan against waiting for it: time to the first step's start and total latency.

Run it with `.venv/bin/python benchmarks/streaming_latency.py [pace]` (about three minutes at
the default pace 0.5). It is a script, not a test: wall-clock times depend on the machine.

Plans of 4 to 16 steps (fan-outs of 2 to 8 lookups, chains of 3 to 15 hops), written by the
simulator's large model (sim-large: 1.2 s before the first token, then 40 tokens a second),
each run twice: `orchestrate` with an `LLMPlanner` (the whole plan, then the steps) and
`streaming.orchestrate_streaming` with a `StreamingPlanner` (each step as soon as it is
written). Once on the virtual clock (tools 1 s each), once on the real clock against
`agentlab serve` paced at `pace` real seconds per modelled second (the plan streams over
HTTP through the SDK's `messages.stream`; the tools are instant dictionary lookups there, so
a step's time is its model calls'). Both report min / median / max of the ratios.
"""

from __future__ import annotations

import random
import statistics
import sys

from agentlab import world
from agentlab.agents import world_team
from agentlab.llm import SimulatedLLM
from agentlab.llm.anthropic import AnthropicLLM
from agentlab.llm.serve import start_server
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate
from agentlab.streaming import StreamingPlanner, orchestrate_streaming, text_stream


def tasks() -> list[world.Task]:
    wide = [world.fanout_task(random.Random(w), w, "total", f"w{w}") for w in (2, 4, 6, 8)]
    return wide + [world.chain_task(random.Random(h), h, f"c{h}") for h in (3, 6, 9, 12, 15)]


def first_start(run) -> float:
    """From the task to the first step's start: planning first, unless it was streamed."""
    planning = 0.0 if run.writing else run.latency - run.elapsed
    return planning + min(slot.start for slot in run.slots)


def measure(llm, clock: str, tool_seconds: float, scale: float = 1.0) -> list[tuple]:
    team = world_team(llm, tool_seconds=tool_seconds)
    rows = []
    for task in tasks():
        whole = orchestrate(task.question, LLMPlanner(llm, team), team, workers=16, clock=clock)
        streamed = orchestrate_streaming(task.question, StreamingPlanner(llm, team), team, clock=clock)
        assert whole.status == streamed.status == "done", (whole.reason, streamed.reason)
        assert whole.outputs == streamed.outputs, (task.id, whole.outputs, streamed.outputs)
        rows.append((task.id, len(whole.plan), first_start(whole) / scale, first_start(streamed) / scale,
                     whole.latency / scale, streamed.latency / scale))
    return rows


def report(title: str, rows: list[tuple]) -> None:
    print(title)
    print(f"{'task':<5}{'steps':>6}{'first, whole':>14}{'first, streamed':>17}{'total, whole':>14}"
          f"{'total, streamed':>17}{'speed-up':>10}")
    for task, steps, fw, fs, tw, ts in rows:
        print(f"{task:<5}{steps:>6}{fw:>13.2f}s{fs:>16.2f}s{tw:>13.2f}s{ts:>16.2f}s{tw / ts:>9.2f}x")
    ups = [tw / ts for *_, tw, ts in rows]
    firsts = [fw / fs for _, _, fw, fs, _, _ in rows]
    print(f"total speed-up min {min(ups):.2f}x, median {statistics.median(ups):.2f}x, max {max(ups):.2f}x; "
          f"first step sooner by min {min(firsts):.1f}x, median {statistics.median(firsts):.1f}x, "
          f"max {max(firsts):.1f}x\n")


if __name__ == "__main__":
    pace = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    report("virtual clock, tools 1 s", measure(SimulatedLLM(seed=0), "virtual", 1.0))
    report("virtual clock, tools 0.1 s", measure(SimulatedLLM(seed=0), "virtual", 0.1))
    with start_server(pace=pace) as server:
        claude_path = AnthropicLLM(base_url=server.url, api_key="any", max_retries=0)  # opus, haiku
        claude_path.complete(system="", messages=[{"role": "user", "content": "hi"}])  # the SDK's setup
        list(text_stream(claude_path, system="", messages=[{"role": "user", "content": "hi"}], max_tokens=50))
        report(f"real clock against agentlab serve at pace {pace:g} (in modelled seconds: wall / pace)",
               measure(claude_path, "real", 0.1, scale=pace))
