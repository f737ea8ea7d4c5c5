"""What a checkpoint costs a long run (issue 22; a script, not a test).

    .venv/bin/python benchmarks/checkpoint_cost.py [steps] [kilobytes] [repeats]   # default 100 200 3

A chain of `steps` steps, each writing an output of `kilobytes` KB (distinct text, so nothing
is shared between steps), run on the virtual clock without a checkpoint and with one (saved
after every step, as `run_plan(checkpoint=...)` does). Printed: the wall seconds of each
(min / median / max of `repeats` runs) and the ratio of the medians.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from agentlab.agents import Agent, Work
from agentlab.plan import Plan, Step
from agentlab.run import run_plan


def chain(steps: int) -> Plan:
    return Plan([Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, steps + 1)])


def team(kilobytes: int) -> dict[str, Agent]:
    def act(step, context):
        line = f"{step.id}: a line of findings, numbered so that no two steps write the same text.\n"
        return Work((line * (kilobytes * 1024 // len(line) + 1))[: kilobytes * 1024])

    return {"a": Agent("a", act)}


def timed(steps: int, kilobytes: int, checkpoint: Path | None) -> float:
    started = time.perf_counter()
    run = run_plan(chain(steps), team(kilobytes), "a long run", checkpoint=checkpoint)
    assert run.status == "done", run.reason
    return time.perf_counter() - started


def main(steps: int = 100, kilobytes: int = 200, repeats: int = 3) -> None:
    figures = {}
    for label in ("without a checkpoint", "with a checkpoint"):
        seconds = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "run.json" if label == "with a checkpoint" else None
                seconds.append(timed(steps, kilobytes, path))
        figures[label] = seconds
        print(f"{label:<22} {steps} steps x {kilobytes} KB: min {min(seconds):.2f} s, "
              f"median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s")
    ratio = statistics.median(figures["with a checkpoint"]) / statistics.median(figures["without a checkpoint"])
    print(f"ratio of the medians: {ratio:.1f}x")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
