"""How close does the parallel orchestrator come to the ideal schedule, and what does scheduling cost?

Run it with `.venv/bin/python benchmarks/scheduling.py` (a few seconds). It is a
script, not a test: timings depend on the machine, so it reports and checks
figures rather than running in the suite.

1. Real threads: a 100-step DAG, 8 steps wide, whose steps each sleep 20 ms, on
   8 workers with the wall clock. Since the plan is no wider than the pool, the
   ideal schedule is its critical path; the run must finish within 1.10x of it.
2. Overhead: no-op steps, so everything measured is the orchestrator's own
   bookkeeping (scheduling, futures, the trace). Reported in microseconds per
   step for 1,000 and 10,000 steps; per-step cost must stay flat as the plan
   grows tenfold (a ratio near 1; a scheduler that re-scanned the plan for
   every step would show about 10).
3. The loop alone: a chain of 1,000 no-op steps on the wall clock, one at a time,
   so each step pays the whole hand-off to a worker thread and back. Target:
   at most 30 us per step.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from agentlab.agents import Agent
from agentlab.plan import Plan, Step
from agentlab.run import run_plan
from agentlab.schedule import virtual_schedule

WIDTH = 8
SLEEP = 0.020


def lattice(n: int, width: int = WIDTH, duration: float | None = None) -> Plan:
    """n steps in rows of `width`; each step needs two steps of the row before (its column and the next)."""
    steps = []
    for i in range(n):
        row, col = divmod(i, width)
        deps = (
            () if row == 0 else tuple(sorted({f"s{i - width}", f"s{(row - 1) * width + (col + 1) % width}"}))
        )
        steps.append(Step(f"s{i}", "worker", f"step {i}", depends_on=deps, duration=duration))
    return Plan(steps)


def sleeper(step, context):
    time.sleep(SLEEP)
    return "ok"


def no_op(step, context):
    return "ok"


def real_threads(repeats: int = 5) -> bool:
    plan = lattice(100)
    ideal = plan.critical_path({s.id: SLEEP for s in plan})[1]
    team = {"worker": Agent("worker", sleeper)}
    ratios = []
    for _ in range(repeats):
        run = run_plan(plan, team, workers=8, clock="real")
        assert run.status == "done"
        ratios.append(run.elapsed / ideal)
    worst = max(ratios)
    print(f"1. real threads: 100 steps, width {WIDTH}, {SLEEP * 1000:.0f} ms each, 8 workers")
    print(f"   ideal (critical path) {ideal * 1000:.0f} ms; measured/ideal over {repeats} runs:")
    print(f"   median {statistics.median(ratios):.3f}, worst {worst:.3f}  (target <= 1.10)")
    return worst <= 1.10


def per_step_us(plan: Plan, what: str) -> float:
    """Best of 5, in microseconds per step."""
    team = {"worker": Agent("worker", no_op, seconds=1.0)}
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        if what == "schedule":
            virtual_schedule(plan, {s.id: 1.0 for s in plan}, WIDTH)
        elif what == "validate":
            Plan(plan.steps, roles=team)
        else:
            run_plan(plan, team, workers=WIDTH, clock=what)
        best = min(best, time.perf_counter() - began)
    return best / len(plan) * 1e6


def overhead() -> bool:
    print(f"2. scheduling overhead, no-op steps, lattice {WIDTH} wide, {WIDTH} workers (best of 5)")
    print(f"   {'':<32}{'1,000 steps':>14}{'10,000 steps':>14}{'ratio':>8}")
    ok = True
    for what, label in (
        ("schedule", "virtual_schedule (policy only)"),
        ("validate", "Plan validation (once, at build)"),
        ("virtual", "run_plan, virtual clock"),
        ("real", "run_plan, wall clock"),
    ):
        small, large = per_step_us(lattice(1_000), what), per_step_us(lattice(10_000), what)
        print(f"   {label:<32}{small:>11.1f} us{large:>11.1f} us{large / small:>8.2f}")
        ok &= large / small < 2.0  # linear total time keeps this near 1; quadratic would make it 10
    return ok


def chain_overhead() -> bool:
    plan = Plan([Step(f"s{i}", "worker", f"step {i}", (f"s{i - 1}",) if i else ()) for i in range(1_000)])
    team = {"worker": Agent("worker", no_op)}
    best = float("inf")
    for _ in range(7):
        began = time.perf_counter()
        run_plan(plan, team, clock="real")
        best = min(best, time.perf_counter() - began)
    us = best / len(plan) * 1e6
    print(f"3. a 1,000-step chain of no-op steps, wall clock, 1 worker (best of 7): {us:.1f} us per step")
    print("   (target <= 30 us)")
    return us <= 30


if __name__ == "__main__":
    print(f"machine: {os.cpu_count()} cores (nproc), Python {sys.version.split()[0]}")
    passed = real_threads()
    passed &= overhead()
    passed &= chain_overhead()
    print("PASS" if passed else "FAIL")
    sys.exit(0 if passed else 1)
