"""The kit's failures named in MAST, the taxonomy of why multi-agent LLM systems fail.

MAST (Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", NeurIPS 2025 Datasets and Benchmarks
track, arXiv:2503.13657v3) sorts the failures annotated in traces of seven multi-agent frameworks
into 14 modes in three categories: **system design and specification** (44.2% of the failures),
**inter-agent misalignment** (32.3%) and **task verification** (23.5%). Earlier versions of the
paper give 41.77 / 36.94 / 21.30%; `PAPER` holds the NeurIPS figures.

A kit run shows its failures in three places, and `classify` reads all three:

- the simulator's record of its mistakes (`SimulatedLLM.injected`, one per call that erred on
  purpose), each by its kind and where it was made:

  | mistake                          | MAST mode                              | category      |
  |----------------------------------|----------------------------------------|---------------|
  | malformed_json (plan)            | FM-1.1 disobey task specification      | specification |
  | wrong_tool_argument (plan)       | FM-1.1 disobey task specification      | specification |
  | wrong_tool_argument (agent turn) | FM-2.6 reasoning-action mismatch       | misalignment  |
  | dropped_dependency (plan)        | FM-2.4 information withholding         | misalignment  |
  | hallucinated_answer (agent turn) | FM-2.5 ignored other agent's input     | misalignment  |
  | followed_injection               | FM-2.3 task derailment                 | misalignment  |
  | finished_too_early               | FM-3.1 premature termination           | verification  |

- the trace: the same failure twice in one run (a retry, or a replan, that repeats a call that
  cannot work) is FM-1.3 step repetition, MAST's most frequent single mode;
- the result: a wrong deliverable handed over as "done" got past every check, FM-3.2 no or
  incomplete verification.

A `Fault` is the world failing (a tool down, a slow source), not an agent: it is never among the
simulator's mistakes, and each attempt it breaks is named with its number, so it never counts as a
repetition either. (A step that times out on every attempt does fail the same way twice: to the run,
that is step repetition, whatever the cause.) The mapping is the kit's own reading of the paper's
definitions, one mode per kind of failure; MAST's annotators read whole conversations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from agentlab.llm.simulated import InjectedError, SimulatedLLM
from agentlab.trace import Run
from agentlab.world import Task

CATEGORIES = {
    "specification": "system design and specification",
    "misalignment": "inter-agent misalignment",
    "verification": "task verification",
}
PAPER = {"specification": 0.442, "misalignment": 0.323, "verification": 0.235}  # NeurIPS version
FIXES = {
    "specification": "Specify the work so that it cannot be misread: plans held to their schema and "
    "checked before they run, and a bound that stops a step failing the same way twice.",
    "misalignment": "Make every handoff explicit: a step is handed exactly the inputs it needs, and an "
    "agent's answer is checked against what it was handed.",
    "verification": "Check each result with a tool before anything builds on it (the recompute critic, "
    "tests that run the code), so that a wrong answer fails loudly instead of being delivered.",
}

MODES = {  # (kind of mistake, "plan" or "turn") -> (category, MAST mode)
    ("malformed_json", "plan"): ("specification", "FM-1.1 disobey task specification"),
    ("wrong_tool_argument", "plan"): ("specification", "FM-1.1 disobey task specification"),
    ("wrong_tool_argument", "turn"): ("misalignment", "FM-2.6 reasoning-action mismatch"),
    ("dropped_dependency", "plan"): ("misalignment", "FM-2.4 information withholding"),
    ("hallucinated_answer", "turn"): ("misalignment", "FM-2.5 ignored other agent's input"),
    ("followed_injection", "plan"): ("misalignment", "FM-2.3 task derailment"),
    ("followed_injection", "turn"): ("misalignment", "FM-2.3 task derailment"),
    ("finished_too_early", "plan"): ("verification", "FM-3.1 premature termination"),
    ("finished_too_early", "turn"): ("verification", "FM-3.1 premature termination"),
}
REPEATED = ("specification", "FM-1.3 step repetition")
UNCHECKED = ("verification", "FM-3.2 no or incomplete verification")


@dataclass(frozen=True)
class Finding:
    """One failure met in a run: its MAST category and mode, and what happened."""

    category: str
    mode: str
    evidence: str


def classify(run: Run, task: Task | None = None, mistakes: Iterable[InjectedError] = ()) -> list[Finding]:
    """The failures `run` met, in MAST's terms: one finding per mistake the simulator recorded
    for it (`mistakes`, its `InjectedError`s), one per failure repeated within the run, and one
    if it handed over a wrong answer for `task` as done."""
    findings = [Finding(*_mode(m), f"{m.request}: {m.detail}") for m in mistakes]
    seen = Counter(f.message for _, _, f in run.failures)
    findings += [Finding(*REPEATED, f"{n} times: {message}") for message, n in seen.items() if n > 1]
    if task is not None and run.status == "done" and not task.check(run.deliverable):
        findings.append(Finding(*UNCHECKED, f"answered {run.deliverable!r}; the answer is {task.answer!r}"))
    return findings


def _mode(mistake: InjectedError) -> tuple[str, str]:
    where = "turn" if mistake.request == "turn" else "plan"  # a replan is a plan
    if (mistake.kind, where) not in MODES:
        raise ValueError(f"no MAST mode for a {mistake.kind!r} mistake in a {where}; add one to mast.MODES")
    return MODES[(mistake.kind, where)]


@dataclass(frozen=True)
class Tally:
    """A batch's failures, classified: the findings, and how many of its tasks ended wrong."""

    findings: list[Finding]
    tasks: int
    wrong: int  # tasks that failed, stopped, or were answered wrong

    def counts(self) -> dict[str, int]:
        counts = Counter(f.category for f in self.findings)
        return {c: counts[c] for c in CATEGORIES}

    def shares(self) -> dict[str, float]:
        """Each category's share of the findings (all 0 when there are none)."""
        total = len(self.findings)
        return {c: n / total if total else 0.0 for c, n in self.counts().items()}

    def modes(self) -> Counter:
        return Counter(f.mode for f in self.findings)


def tally(tasks: Sequence[Task], solve: Callable[[Task], Run], llm: SimulatedLLM) -> Tally:
    """Run `solve(task)` (which returns a Run) on each task in turn, and classify each run with
    the mistakes `llm` (a SimulatedLLM) recorded while it ran."""
    findings, wrong = [], 0
    for task in tasks:
        before = len(llm.injected)
        run = solve(task)
        findings += classify(run, task, llm.injected[before:])
        wrong += run.status != "done" or not task.check(run.deliverable)
    return Tally(findings, len(tasks), wrong)


def table(tallies: dict[str, Tally]) -> str:
    """Each category's share in MAST (NeurIPS version) and in each tally, as text."""

    def line(label: str, cells: Iterable[str]) -> str:
        return f"{label:<34}" + "".join(f"{cell:>16}" for cell in cells)

    lines = [line("", ["MAST", *tallies])]
    for c, title in CATEGORIES.items():
        lines.append(line(title, [f"{PAPER[c]:.1%}"] + [f"{t.shares()[c]:.1%}" for t in tallies.values()]))
    lines.append(line("failures classified", ["-"] + [str(len(t.findings)) for t in tallies.values()]))
    wrong = [f"{t.wrong / t.tasks:.0%}" if t.tasks else "-" for t in tallies.values()]
    lines.append(line("tasks that ended wrong", ["41-86.7%", *wrong]))
    return "\n".join(lines)
