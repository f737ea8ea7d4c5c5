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

Measured on a shared two-core machine (load about 2), back to back, min / median / max of 5, 100
steps of 200 KB: no checkpoint; one before this change (a regex over the whole record once it says
"key" or "token" anywhere); one now (`redact` tries its regex only next to such a word, and only
where the word is followed by `:` or `=`).

| 100 x 200 KB      | lines: wall s      | CPU s              | prose: wall s      | CPU s              |
|-------------------|--------------------|--------------------|--------------------|--------------------|
| no checkpoint     | 0.01 / 0.01 / 0.03 | 0.01 / 0.01 / 0.03 | 0.01 / 0.01 / 0.02 | 0.01 / 0.01 / 0.02 |
| checkpoint before | 0.20 / 0.20 / 0.26 | 0.16 / 0.16 / 0.22 | 1.42 / 1.59 / 2.14 | 1.39 / 1.45 / 1.62 |
| checkpoint now    | 0.19 / 0.25 / 0.32 | 0.16 / 0.17 / 0.21 | 0.47 / 0.48 / 0.50 | 0.43 / 0.45 / 0.46 |

(Before the journal, every save rewrote the whole file: 263 s for 100 steps; before the quick
escaper and fsync policy, 2.5 s wall.) The ratio of the medians is still far from 2x: 15 to 20x
for lines, 50x for prose, because the run without one costs almost nothing (0.1 ms of CPU a step:
the text is made by repeating a line). What a save of 20 MB (100 x 200 KB) costs here, stage by
stage, in CPU ms: encoding it to UTF-8 (one copy) 2; escaping it for JSON (34 byte searches, one
replace) 27; decoding it for `redact` 3; `redact` 92 for lines (a lower-case copy and five word
searches: bearer, key, token, password, secret) and 340 for prose (the same, and the regex tried
at each of some 2,500 words a record); sha256 for the seal 14; os.write 10; and the fsync at the
end 3, which takes 38 ms of wall time. The floor, a copy, the hash, the write and the end fsync
(29 ms of CPU and 38 of waiting), is already 3x the CPU and 5x the wall time of the run without a
checkpoint, so 2x is out of reach on this disk without saving fewer bytes; what a save adds above
the floor is mostly `redact` (half of it), then the escaping. As whole processes (interpreter and
imports included), 100 steps of lines took 0.41 to 0.43 s against 0.18 s wall (2.3x) and 0.35 to
0.37 against 0.17 to 0.18 CPU seconds (2.0x).
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
