"""What a Dask cluster costs and buys, on the wall clock (issue 16; a script, not a test). Not
named distributed.py: run as a script, that name would hide the `distributed` package.

    .venv/bin/python benchmarks/cluster_overhead.py [tasks]     # default 1,000 world tasks

1. Per-step overhead: a plan of independent steps on threads and on a 2-worker LocalCluster,
   for no-op steps and for steps that wait 100 ms (real clock), as seconds per step and ratios.
2. Tasks per second: a batch of world tasks (each a whole `orchestrate` on the simulator) in
   one process, one by one, and on a 2-worker cluster with `run_tasks`.
"""

from __future__ import annotations

import sys
import time

from agentlab.agents import Agent, world_team
from agentlab.cluster import local_cluster, run_tasks
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
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


def solve(task):
    llm = SimulatedLLM(seed=7, error_rate=0.1)
    team = world_team(llm)
    return orchestrate(task.question, LLMPlanner(llm, team), team, workers=2)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
