"""What a checkpoint costs a long run (issue 22; a script, not a test).

    .venv/bin/python benchmarks/checkpoint_cost.py [steps] [kilobytes] [repeats] [with|without|both]
                                                   [lines|prose]

A chain of `steps` steps (default 100), each writing an output of `kilobytes` KB (default 200;
distinct text, so nothing is shared between steps: one line over and over, or with `prose` a
paragraph that says "key", "token", a hyphenated word, a URL and an e-mail address, as a model's
answer might, each of which makes `redact` look closer), run on the virtual clock without a
checkpoint and with one (saved after every step, as `run_plan(checkpoint=...)` does), in turn.
Printed: the wall and the CPU seconds of each (min / median / max of `repeats` runs, default 3)
and the ratios of the medians. With `with` or `without` only that one is run, so that a whole
process can be timed from outside, e.g. with `/usr/bin/time -v` or a pair of `hyperfine` commands.

Measured on a shared two-core machine (load 6 to 9), back to back, min / median / max of 5: no
checkpoint; one as before (an fsync every save, json.dumps, each redact word searched whatever
the text); one as now (fsync at most once a second, long text escaped at memory speed, redact
skipping what a character search rules out).

| 200 KB outputs      | 100 steps: wall s  | CPU s              | 40 steps: wall s   | CPU s              |
|---------------------|--------------------|--------------------|--------------------|--------------------|
| no checkpoint       | 0.04 / 0.06 / 0.16 | 0.02 / 0.02 / 0.04 | 0.01 / 0.01 / 0.06 | 0.01 / 0.01 / 0.03 |
| checkpoint, before  | 2.23 / 2.48 / 2.57 | 0.46 / 0.48 / 0.52 | 0.85 / 0.93 / 1.19 | 0.21 / 0.22 / 0.22 |
| checkpoint, now     | 0.79 / 0.81 / 0.94 | 0.24 / 0.25 / 0.29 | 0.22 / 0.25 / 0.31 | 0.08 / 0.09 / 0.11 |

(Before the journal, every save rewrote the whole file: 263 s for 100 steps.) Now the ratio of
the medians, with against without, is 14x wall and 15x CPU at 100 steps (24x and 15x at 40): the
run without one spends about 0.2 ms of CPU a step, less than it takes to look at each byte of a
200 KB output for a credential (a lower-case copy and five word searches, half of a save's cost),
escape it, hash it for the seal and write it; and the two fsyncs a run keeps (its first save,
its end) take ~30 ms each on this disk. As whole processes (interpreter and imports included),
100 steps took 2.82 s against 1.98 s wall (1.56x) and 0.80 against 0.64 CPU seconds (1.46x).
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
    each = [Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, steps + 1)]
    return Plan(each)


LINE = "{}: a line of findings, numbered so that no two steps write the same text.\n"
PROSE = ("{}: the planner split the task into steps, and each executor answered one. The key finding "
         "is that the second route costs less per token than the first; the step-by-step table is at "
         "https://example.org/report, and questions go to ops@example.org.\n")


def team(kilobytes: int, text: str = LINE) -> dict[str, Agent]:
    def act(step, context):
        line = text.format(step.id)
        return Work((line * (kilobytes * 1024 // len(line) + 1))[: kilobytes * 1024])

    return {"a": Agent("a", act)}


def timed(steps: int, kilobytes: int, checkpoint: Path | None, text: str = LINE) -> tuple[float, float]:
    """The run's wall seconds, and the CPU seconds this process spent on it (on a shared machine
    the wall clock also counts the waits for a core and for the disk)."""
    wall, cpu = time.perf_counter(), time.process_time()
    run = run_plan(chain(steps), team(kilobytes, text), "a long run", checkpoint=checkpoint)
    assert run.status == "done", run.reason
    return time.perf_counter() - wall, time.process_time() - cpu


def spread(seconds: list[float]) -> str:
    return f"{min(seconds):.3f} / {statistics.median(seconds):.3f} / {max(seconds):.3f} s"


def main(steps: int = 100, kilobytes: int = 200, repeats: int = 3, only: str = "both",
         text: str = "lines") -> None:
    figures: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    for _ in range(repeats):  # the two in turn, so that both see the same machine
        for label in figures if only == "both" else [only]:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "run.json" if label == "with" else None
                figures[label].append(timed(steps, kilobytes, path, PROSE if text == "prose" else LINE))
    print(f"{steps} steps x {kilobytes} KB of {text}, min / median / max of {repeats}:")
    for label, runs in figures.items():
        if runs:
            print(f"  {label + ' a checkpoint':<21} wall {spread([w for w, _ in runs])}, "
                  f"CPU {spread([c for _, c in runs])}")
    if only == "both":
        ratios = [statistics.median([run[i] for run in figures["with"]]) /
                  statistics.median([run[i] for run in figures["without"]]) for i in (0, 1)]
        print(f"  ratio of the medians: wall {ratios[0]:.1f}x, CPU {ratios[1]:.1f}x")


if __name__ == "__main__":
    if sys.argv[4:] and sys.argv[4] not in ("with", "without", "both"):
        sys.exit(f"the fourth argument is 'with', 'without' or 'both', not {sys.argv[4]!r}")
    if sys.argv[5:] and sys.argv[5] not in ("lines", "prose"):
        sys.exit(f"the fifth argument is 'lines' or 'prose', not {sys.argv[5]!r}")
    main(*(int(a) for a in sys.argv[1:4]), *sys.argv[4:6])
