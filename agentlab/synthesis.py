"""Synthesis: one answer from workers who disagree, with every figure traced to a step (notebook 01).

The stub writer concatenates: when two workers disagree, both figures land side by side in
the report and the reader has to spot the contradiction. A synthesizer reconciles. For each
claim it keeps one value and says why, or says the question is open, and it cites the steps
whose outputs it used ("[s1]"), so every line of the deliverable can be checked against the
worker that supplied it.

Workers pass findings as text, one per line, in a form both sides know:

    population of Varra = 2140 (source: census, as of 1841)

`newest_wins` is the rule the lesson uses: all sources agree, or the most recent one wins, and
two different values of the same date stay open. The synthesizer takes any such rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from agentlab.agents import Agent, stub_writer
from agentlab.plan import Context, Plan, Step


@dataclass(frozen=True)
class Finding:
    """One claim as one worker found it: the value, where it comes from and how recent it is."""

    claim: str  # "population of Varra"
    value: str
    source: str
    as_of: int  # the year the source describes

    def __str__(self) -> str:
        return f"{self.claim} = {self.value} (source: {self.source}, as of {self.as_of})"


MAX_LINE = 2_000  # characters: a longer line is not a finding (nobody writes one; a runaway might)


def parse(text: str) -> list[Finding]:
    """The findings in a worker's output, one per line of the form above; other lines are ignored.
    Each line is read by a few scans from its ends (no regular expression to backtrack), so a long
    line that nearly matches costs no more than a short one."""
    found = [_finding(line.strip()) for line in text.splitlines()]
    return [f for f in found if f is not None]


def _finding(line: str) -> Finding | None:
    """`claim = value (source: source, as of year)`, split where the pattern
    `(.+?) = (.+) \\(source: (.+), as of (\\d+)\\)` would: the claim ends at the first " = ", the value
    at the last " (source: " that leaves a source, the source at the last ", as of "."""
    if len(line) > MAX_LINE or not line.endswith(")"):
        return None
    head, said, year = line[:-1].rpartition(", as of ")
    at = head.rfind(" (source: ", 0, len(head) - 1)  # the source is not empty
    equals = head.find(" = ", 1, at)  # the claim is not empty
    if not said or not year.isdecimal() or at < 0 or equals < 0 or equals + 3 >= at:
        return None
    return Finding(head[:equals], head[equals + 3 : at], head[at + 10 :], int(year))


# Records that do not agree. The census (the world's own figures) is the newest; the harbour
# register is older and counts Brindle's seasonal crews too; the governor's letters, of the
# census's year, name another capital for Varra. No source is simply right: a rule decides.
SOURCES: dict[str, tuple[int, dict[str, str]]] = {
    "census": (
        1841,
        {"population of Varra": "2140", "population of Brindle": "5020", "capital of Varra": "Port Ashby"},
    ),
    "harbour register": (
        1836,
        {"population of Varra": "2140", "population of Brindle": "5460", "capital of Varra": "Port Ashby"},
    ),
    "governor's letters": (1841, {"capital of Varra": "Greyhaven"}),
}


def source_worker(source: str) -> Agent:
    """A stub worker that reads one source and reports what it says, one finding per line."""
    as_of, claims = SOURCES[source]

    def read(step: Step, context: Context) -> str:
        return "\n".join(str(Finding(claim, value, source, as_of)) for claim, value in claims.items())

    return Agent(
        source.replace(" ", "-").replace("'", ""), read, seconds=2.0, description=f"reads the {source}"
    )


@dataclass(frozen=True)
class Resolved:
    """What the synthesizer keeps for one claim: a value (None: left open), the steps it cites, why."""

    claim: str
    value: str | None
    cited: tuple[str, ...]
    why: str


Rule = Callable[[Mapping[str, Sequence[Finding]]], list[Resolved]]


def newest_wins(findings: Mapping[str, Sequence[Finding]]) -> list[Resolved]:
    """For each claim (in the order first seen): one value if every step agrees; else the value
    of the most recent source, citing the steps that gave it; two values of the same latest date
    stay open, citing every step that spoke to the claim."""
    claims: dict[str, list[tuple[str, Finding]]] = {}
    for step_id, found in findings.items():
        for f in found:
            claims.setdefault(f.claim, []).append((step_id, f))
    resolved = []
    for claim, said in claims.items():
        values = {f.value for _, f in said}
        if len(values) == 1:
            resolved.append(Resolved(claim, said[0][1].value, tuple(s for s, _ in said), "all sources agree"))
            continue
        latest = max(f.as_of for _, f in said)
        newest = {f.value for _, f in said if f.as_of == latest}
        if len(newest) > 1:
            why = f"sources of {latest} disagree: " + " vs ".join(sorted(newest))
            resolved.append(Resolved(claim, None, tuple(s for s, _ in said), why))
            continue
        value = newest.pop()
        older = ", ".join(sorted({f"{f.value} ({f.source}, {f.as_of})" for _, f in said if f.value != value}))
        why = f"the newest source ({latest}) wins over {older}"
        resolved.append(Resolved(claim, value, tuple(s for s, f in said if f.value == value), why))
    return resolved


def report(resolved: Sequence[Resolved]) -> str:
    """The deliverable: one line per claim, its value and its citations, and why."""
    lines = ["REPORT (reconciled)"]
    for r in resolved:
        cites = "".join(f"[{s}]" for s in r.cited)
        shown = r.value if r.value is not None else "OPEN QUESTION"
        lines.append(f"  {r.claim}: {shown} {cites}  ({r.why})")
    return "\n".join(lines)


def synthesizer(rule: Rule = newest_wins) -> Agent:
    """A writer that reconciles: it reads each input's findings, applies `rule`, writes `report`."""

    def write(step: Step, context: Context) -> str:
        return report(rule({step_id: parse(output) for step_id, output in context.items()}))

    return Agent("synthesizer", write, seconds=2.0, description="reconciles and cites")


def synthesis_team(sources: Sequence[str] = ("census", "harbour register"), rule: Rule = newest_wins):
    """A worker per source, the stub writer (it concatenates) and a synthesizer (it reconciles)."""
    team = {source_worker(s).role: source_worker(s) for s in sources}
    writer = Agent("writer", stub_writer, seconds=2.0, description="concatenates its inputs")
    return {**team, "writer": writer, "synthesizer": synthesizer(rule)}


def synthesis_plan(
    sources: Sequence[str] = ("census", "harbour register"), writer: str = "synthesizer"
) -> Plan:
    """One step per source, then `writer` ("writer" or "synthesizer") over all of them."""
    workers = [
        Step(f"s{i}", source_worker(s).role, f"Report what the {s} says.") for i, s in enumerate(sources, 1)
    ]
    final = Step(f"s{len(workers) + 1}", writer, "Write the report.", depends_on=tuple(w.id for w in workers))
    return Plan([*workers, final])
