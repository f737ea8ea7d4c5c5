"""How fast is the vectorised Monte Carlo, and does the p^n law survive real runs?

Run it with `.venv/bin/python benchmarks/bench_montecarlo.py` (about ten seconds).
It is a script, not a test: timings depend on the machine, so it reports and
checks figures rather than running in the suite.

1. Speed: 10^6 chains of 50 steps at p = 0.9 with `experiments.simulate_chain`
   on one core (numpy's thread pools pinned to one thread before it is
   imported): one geometric draw per chain (the step it first fails at), next
   to numpy drawing every step (fifty draws a chain, as it did before) and a
   pure-Python loop over the same 10^6 trials, as ratios from one run. The
   geometric run must take under 0.05 s of CPU time.
2. Measured against predicted: notebook 06's measured chains (world chain
   tasks run by researcher agents on the simulated LLM at 0.1 errors per call,
   `experiments.measure_chains`), each length's success rate beside the Monte
   Carlo 95% band of p^n over 100 runs (`experiments.chain_band`), with p the
   per-step success measured on the same runs. The check is on the runs whose
   every step was right, the event p^n describes; the right-final-answer rate
   is shown too.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"  # one core: set before numpy starts its thread pools

import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from agentlab.experiments import BATCH, chain_band, draw_outcomes, measure_chains, pooled_step, simulate_chain  # noqa: E402,E501

P, N, TRIALS = 0.9, 50, 1_000_000


def pure_python(p: float, n: int, trials: int, seed: int = 0) -> int:
    """The same experiment as a plain loop: every step of every chain drawn one at a time."""
    rng = random.Random(seed)
    successes = 0
    for _ in range(trials):
        right = True
        for _ in range(n):
            right &= rng.random() < p  # no early exit: the same draws numpy makes
        successes += right
    return successes


def every_step(p: float, n: int, trials: int, seed: int = 0) -> int:
    """The same experiment with numpy drawing every step of every chain (the way before)."""
    rng, right = np.random.default_rng(seed), 0
    for start in range(0, trials, BATCH):
        right += int(draw_outcomes(p, min(BATCH, trials - start), n, 0.0, rng).all(axis=1).sum())
    return right


def timed(run):
    """Run `run()`; return its result, wall-clock seconds and CPU seconds of this process."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def speed() -> bool:
    simulate_chain(P, N, 10_000)  # warm up numpy
    estimate, wall, cpu = timed(lambda: simulate_chain(P, N, TRIALS, seed=0))
    drawn, grid_wall, grid_cpu = timed(lambda: every_step(P, N, TRIALS))
    looped, plain_wall, plain_cpu = timed(lambda: pure_python(P, N, TRIALS))
    print(f"{TRIALS:,} chains of {N} steps at p = {P} (exact {P**N:.5f})")
    print(f"  numpy, one core : {wall:6.3f} s wall, {cpu:6.3f} s CPU   estimate {estimate}")
    grid_line = f"{grid_wall:6.3f} s wall, {grid_cpu:6.3f} s CPU   estimate {drawn / TRIALS:.4f}"
    print(f"  numpy, every step: {grid_line}")
    python_line = f"{plain_wall:6.3f} s wall, {plain_cpu:6.3f} s CPU   estimate {looped / TRIALS:.4f}"
    print(f"  pure Python     : {python_line}")
    ratio = f"{plain_cpu / cpu:.0f}x faster in CPU time ({plain_wall / wall:.0f}x in wall-clock time)"
    print(f"  numpy is {ratio}, one run of each")
    print(f"  one draw a chain is {grid_cpu / cpu:.0f}x faster in CPU time than one a step")
    ok = cpu < 0.05  # CPU time: on a shared machine the wall clock also measures the others' load
    print(f"  under 0.05 s of CPU time: {'yes' if ok else 'NO'}")
    return ok


def measured() -> bool:
    """Notebook 06's measured chains (the same call, so the same runs) against p^n's band."""
    runs = measure_chains(lengths=(1, 2, 3, 4, 6, 8), runs=100, error_rate=0.1, seed=0)
    p = pooled_step(runs)
    print(f"\nnotebook 06's measured chains: per-step p = {p}")
    print(" n  p^n    95% band       every step right   right final answer")
    inside = []
    for m in runs:
        low, high = chain_band(p.value, m.n, m.flawless.trials, seed=m.n)
        flags = [low <= m.flawless.value <= high, low <= m.answered.value <= high]
        inside.append(flags[0])
        marks = ["inside" if flag else "OUTSIDE" for flag in flags]
        print(
            f"{m.n:>2}  {p.value**m.n:.3f}  {low:.2f} to {high:.2f}   "
            f"{m.flawless.value:.2f} {marks[0]:<9}       {m.answered.value:.2f} {marks[1]}"
        )
    print(f"  every-step-right rate inside the band at {sum(inside)} of {len(inside)} lengths")
    return all(inside)


if __name__ == "__main__":
    results = [speed(), measured()]
    sys.exit(0 if all(results) else 1)
