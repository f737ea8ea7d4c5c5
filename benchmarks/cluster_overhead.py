"""What a Dask cluster costs and buys, on the wall clock (issue 16; a script, not a test). Not
named distributed.py: run as a script, that name would hide the `distributed` package.

    .venv/bin/python benchmarks/cluster_overhead.py [tasks]     # default 1,000 world tasks

1. Per-step overhead: a plan of independent steps on threads and on a 2-worker LocalCluster,
   for no-op steps and for steps that wait 100 ms (real clock), as seconds per step and ratios.
2. Tasks per second: a batch of world tasks (each a whole `orchestrate` on the simulator) in
   one process, one by one, and on a 2-worker cluster with `run_tasks`.
3. A worker killed mid-run: its step fails, `Retry` redoes it on a worker; the steps redone,
   the outputs lost against a straight run (0), the calls counted, and the bytes the steps'
   contexts moved (`cluster.context_bytes`).
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from agentlab.agents import Agent, world_team
from agentlab.cluster import context_bytes, local_cluster, run_tasks
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.recovery import Retry
from agentlab.run import orchestrate, run_plan
from agentlab.world.tasks import make_tasks

STEPS = 40


def main(count: int = 1000) -> None:
    with local_cluster(workers=2) as client:
        pool = client.get_executor(pure=False)
        print(f"per-step overhead ({STEPS} independent steps, 2 at a time, real clock):")
        for name, wait in (("no-op", 0.0), ("100 ms", 0.1)):
            threads = per_step(wait, None)
            cluster = per_step(wait, pool)
            print(f"  {name:>6} steps: threads {threads * 1e3:7.2f} ms/step, cluster {cluster * 1e3:7.2f} "
                  f"ms/step, ratio {cluster / threads:5.2f}x")
        tasks = make_tasks(count, seed=0)
        start = time.perf_counter()
        one = run_tasks(tasks, solve, progress=False)
        alone = time.perf_counter() - start
        start = time.perf_counter()
        both = run_tasks(tasks, solve, client, progress=False)
        spread = time.perf_counter() - start
        same = all(a.outputs == b.outputs and a.calls == b.calls for a, b in zip(one, both, strict=True))
        print(f"{count} world tasks: 1 process {count / alone:7.1f} tasks/s, 2-worker cluster "
              f"{count / spread:7.1f} tasks/s ({alone / spread:.2f}x); identical results: {same}")
        killed(client)


def per_step(wait: float, pool) -> float:
    """Wall seconds per step for a plan of STEPS independent steps that each wait `wait` s."""
    def act(step, context):
        if wait:
            time.sleep(wait)
        return "ok"

    team = {"worker": Agent("worker", act)}
    plan = Plan([Step(f"s{i}", "worker", "wait") for i in range(STEPS)])
    start = time.perf_counter()
    run = run_plan(plan, team, workers=2, pool=pool, clock="real")
    assert run.status == "done", run.reason
    return (time.perf_counter() - start) / STEPS * 2  # 2 at a time: seconds one step holds a worker


def killed(client) -> None:
    """A world task whose writer's worker process is killed the first time: what it costs."""
    task = make_tasks(5, seed=2)[1]
    llm = SimulatedLLM(seed=7)
    straight = orchestrate(task.question, LLMPlanner(llm, world_team(llm)), world_team(llm))
    team, here = world_team(llm), os.getpid()
    writer = team["writer"]
    with tempfile.TemporaryDirectory() as folder:
        marker = Path(folder) / "killed"

        def write_or_die(step, context):  # on a worker, the first time: its process is killed
            if os.getpid() != here and not marker.exists():
                marker.touch()
                os.kill(os.getpid(), signal.SIGKILL)
            return writer(step, context)

        team["writer"] = Agent("writer", write_or_die, description=writer.description)
        pool = client.get_executor()
        run = orchestrate(task.question, LLMPlanner(llm, team), team, pool=pool, recovery=[Retry(1)])
    redone = sum(n - 1 for n in run.attempts.values())
    lost = sum(run.outputs.get(i) != out for i, out in straight.outputs.items())
    moved = context_bytes(run)
    print(f"worker killed mid-run ({len(run.plan)} steps, {run.status}): {redone} step(s) redone, "
          f"{lost} output(s) lost, {len(run.calls)} calls counted (straight run: {len(straight.calls)}; "
          f"the dead attempt's calls die with it), {sum(moved.values())} context bytes moved "
          f"(largest step {max(moved.values())} B); reason: {run.failures[0][2].message[:60]}...")


def solve(task):
    llm = SimulatedLLM(seed=7, error_rate=0.1)
    team = world_team(llm)
    return orchestrate(task.question, LLMPlanner(llm, team), team, workers=2)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
