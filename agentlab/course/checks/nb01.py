"""Checks for the exercises of notebook 01, a stub planner and its executors.

- `01.concerns`: the coordinator's three classical concerns, each matched to the symptom it
  shows in production, and what response-threshold swarms avoid and give up;
- `01.sentinel`: an orchestrator loop that notices an executor's FAILED answer and hands that
  step to a stand-in role;
- `01.hierarchy`: a manager, a sub-planner per chunk and a top synthesizer, with every
  LLM-equivalent call counted, for plan shapes the notebook never shows;
- `01.when-hierarchy`: which situations repay a hierarchy's extra coordination rounds;
- `01.reconcile`: a synthesizer that keeps the majority's value of each claim, and cites.

The executors, planners and synthesizers handed to the learner's code record every call (they are
in `_nb01_recorders.py`), so the cases judge what the code did, not what it printed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case, attempt, exercise
from agentlab.course.checks._nb01_recorders import Recorder, Runs, asked, quietly
from agentlab.plan import Plan, Step

# --- 01.concerns --------------------------------------------------------------------------------

_CONCERNS = ("bottleneck", "single point of failure", "decomposition cost")
_MARKED_BY_GRADER = "well formed: the choices themselves are marked by your instructor's grader"
# The keys of the multiple choices are not in the kit: a check that said how many are right (or which)
# would let trial and error walk to them. They are the grader's (agentlab/course/hidden/nb01.py).


def _as_set(value: Any) -> Any:
    return set(value) if isinstance(value, list | tuple | set | frozenset) else value


@exercise(
    "01.concerns",
    "The coordinator's three concerns, in production and in a swarm",
    hint="ask of each symptom: would it go away with a faster planner (throughput), with a second "
    "planner (availability), or only with fewer hand-offs (cost)? A swarm has no planner at all, but "
    "its agents still split and share the work, and specialise without anyone assigning roles",
)
def concerns(answer: Any) -> Iterator[Case]:
    if not isinstance(answer, Mapping):
        yield Case("the answer is a dict", False, f"got {type(answer).__name__}")
        return
    symptoms = [answer.get(concern) for concern in _CONCERNS]
    unknown = [s for s in symptoms if s not in ("a", "b", "c", "d", "e")]
    yield Case("each concern gets one of the five letters", not unknown, f"got {unknown}")
    avoided, given_up = _as_set(answer.get("swarms avoid")), answer.get("swarms give up")
    yield Case(
        "'swarms avoid' is a set of the three concerns' names, 'swarms give up' one of its three letters",
        isinstance(avoided, set) and avoided <= set(_CONCERNS) and given_up in ("x", "y", "z"),
        f"got {answer.get('swarms avoid')!r} and {given_up!r}",
    )
    yield Case(f"the answer is {_MARKED_BY_GRADER}", True)


# --- 01.sentinel --------------------------------------------------------------------------------


_REPORT = Plan(
    [
        Step("s1", "researcher", "Collect three facts."),
        Step("s2", "coder", "Sketch the core loop."),
        Step("s3", "critic", "Name the biggest risk.", depends_on=["s1"]),
        Step("s4", "writer", "Combine everything.", depends_on=["s1", "s2", "s3"]),
    ]
)
_TWO_LOOKUPS = Plan(
    [
        Step("a", "researcher", "Look up the first island."),
        Step("b", "researcher", "Look up the second island."),
        Step("c", "writer", "Compare them.", depends_on=["a", "b"]),
    ]
)
_THREE_SKETCHES = Plan(
    [
        Step("k1", "coder", "Sketch the loop."),
        Step("k2", "coder", "Sketch the tests.", depends_on=["k1"]),
        Step("k3", "coder", "Sketch the docs."),
        Step("w", "writer", "Put the sketches together.", depends_on=["k2", "k3"]),
    ]
)
_EVERYONE = {
    "coder": "generalist",
    "researcher": "generalist",
    "critic": "generalist",
    "writer": "generalist",
}


@exercise(
    "01.sentinel",
    "Notice a FAILED answer and reroute the step",
    hint="look at what you do with each answer before you store it (a sentinel may carry a reason), at "
    "who gets a failed step and whether that choice outlives the step (the team dict you are handed is "
    "not yours to change), at the inputs the stand-in sees, and at what a run does when nobody can stand "
    "in or the stand-in fails too",
)
def sentinel(run: Callable) -> Iterator[Case]:
    runs = Runs(run)
    fails = {"coder": {"Sketch the core loop.": "FAILED: the code sandbox is down"}}
    outputs, error, log = runs(_REPORT, {"coder": "generalist"}, **fails)
    ok = not error and isinstance(outputs, Mapping)
    yield Case(
        "a coder that answers 'FAILED: ...' is asked first, then its step goes to the stand-in",
        ok and asked(log, "s2") == ["coder", "generalist"] and outputs.get("s2") == "generalist(s2)",
        error or f"s2 was asked of {asked(log, 's2')} and stored as {_get(outputs, 's2')!r}",
    )
    complete = ok and set(outputs) == set(_REPORT.ids) and "generalist(s2)" in str(outputs.get("s4", ""))
    yield Case(
        "every step has an output, and the writer's report uses the stand-in's answer",
        complete and not any(str(v).startswith("FAILED") for v in outputs.values()),
        error or f"outputs: {outputs!r}",
    )

    fails = {"researcher": {"Look up the second island.": "FAILED"}}
    outputs, error, log = runs(_TWO_LOOKUPS, _EVERYONE, **fails)
    yield Case(
        "a bare 'FAILED' from the last step of its role: that step is rerouted",
        not error and asked(log, "a") == ["researcher"] and asked(log, "b") == ["researcher", "generalist"],
        error or f"step a was asked of {asked(log, 'a')}, step b of {asked(log, 'b')}",
    )
    fails = {"coder": {"Sketch the loop.": "FAILED: out of memory"}}
    outputs, error, log = runs(_THREE_SKETCHES, _EVERYONE, **fails)
    later = {sid: asked(log, sid) for sid in ("k2", "k3")}
    yield Case(
        "a role's first step fails: its later steps still go to that role, not to the stand-in",
        not error
        and asked(log, "k1") == ["coder", "generalist"]
        and later == {"k2": ["coder"], "k3": ["coder"]},
        error or f"k1 was asked of {asked(log, 'k1')}, the later coder steps of {later}",
    )

    fails = {"researcher": {"Look up the first island.": "FAILED: no such island"}}
    outputs, error, log = runs(_TWO_LOOKUPS, {"researcher": "critic", "writer": "generalist"}, **fails)
    yield Case(
        "a stand-in other than the generalist: the step goes to the role the map names",
        not error and asked(log, "a") == ["researcher", "critic"],
        error or f"step a was asked of {asked(log, 'a')}",
    )

    fails = {"critic": {"Name the biggest risk.": "FAILED: no opinion"}}
    outputs, error, log = runs(_REPORT, _EVERYONE, **fails)
    given = {role: context for role, sid, context in log if sid == "s3"}
    yield Case(
        "the stand-in gets the same inputs the failed step had",
        not error and given.get("generalist") == {"s1": "researcher(s1)"},
        error or f"the critic was given {given.get('critic')!r}, the stand-in {given.get('generalist')!r}",
    )

    fails = {"writer": {"Combine everything.": "FAILED: out of tokens"}}
    outputs, error, log = runs(_REPORT, _EVERYONE, **fails)
    yield Case(
        "the final step can fail too: the deliverable is then the stand-in's synthesis",
        not error and str(_get(outputs, "s4")).startswith("generalist(s4)"),
        error or f"the deliverable is {_get(outputs, 's4')!r}",
    )

    fails = {"researcher": {"Collect three facts.": "Last night 3 of 10 jobs FAILED; all are fixed now."}}
    outputs, error, log = runs(_REPORT, _EVERYONE, **fails)
    yield Case(
        "an answer that only mentions FAILED later on is not the sentinel",
        not error and "generalist" not in {role for role, _, _ in log},
        error or f"the stand-in was asked for {[sid for role, sid, _ in log if role == 'generalist']}",
    )

    fails = {"coder": {"Sketch the core loop.": "FAILED"}, "generalist": {"Sketch the core loop.": "FAILED"}}
    outputs, error, log = runs(_REPORT, {"coder": "generalist"}, **fails)
    yield Case(
        "a stand-in that fails too stops the run with an error naming the step",
        bool(error) and "s2" in error,
        error or f"no error; the outputs were {outputs!r}",
    )

    fails = {"coder": {"Sketch the core loop.": "FAILED: the code sandbox is down"}}
    outputs, error, log = runs(_REPORT, {"critic": "generalist"}, **fails)
    yield Case(
        "a failed step whose role has no stand-in stops the run with an error naming the step",
        bool(error) and "s2" in error,
        error or f"no error; the outputs were {outputs!r}",
    )
    yield Case(
        "the team and stand-in dicts you are handed are left as they were",
        not runs.changed,
        runs.changed[0] if runs.changed else "",
    )


def _get(outputs: Any, step_id: str) -> Any:
    return outputs.get(step_id) if isinstance(outputs, Mapping) else outputs


# --- 01.hierarchy -------------------------------------------------------------------------------


def _counts(calls: Any) -> dict[str, int] | None:
    if not isinstance(calls, Mapping):
        return None
    return {k: v for k, v in dict(calls).items() if v}


@exercise(
    "01.hierarchy",
    "A manager, sub-planners, and every call counted",
    hint="look at where each kind of call is counted (is every call that would be a model call counted "
    "once, where it is made?), at where a chunk's step outputs are kept while another chunk runs (every "
    "sub-plan numbers its steps from s1), at the order a chunk's steps run in and which one is its final "
    "step (a sub-plan is not always written in that order), and at what the synthesizer is handed, and "
    "in which order",
)
def hierarchy(run_hierarchy: Callable) -> Iterator[Case]:
    for sizes, summary_first in (([3, 2], False), ([1], False), ([4, 1, 3], False), ([2, 3], True)):
        r = Recorder(sizes, summary_first)
        result, error = quietly(
            run_hierarchy, "Write the report.", r.manager, r.sub_planner, r.team(), r.synthesize
        )
        shape = f"chunks of {'+'.join(map(str, sizes))} steps"
        shape += ", each summed up in a step written first" if summary_first else ""
        if error or not (isinstance(result, tuple) and len(result) == 2):
            yield Case(f"{shape}: returns (deliverable, calls)", False, error or f"got {result!r}")
            continue
        deliverable, calls = result
        reported, want = _counts(calls), r.expected()
        yield Case(
            f"{shape}: the calls are counted by kind",
            reported == want and dict(r.calls) == want,
            f"reported {reported}, made {dict(r.calls)}",
        )
        wrong = [
            (chunk, sid, context)
            for chunk, sid, context in r.given
            if any(value != f"{chunk}/{dep}" for dep, value in context.items())
        ]
        ran = Counter(chunk for chunk, _, _ in r.given)
        yield Case(
            f"{shape}: every step runs once, with its own chunk's inputs",
            not wrong and ran == Counter({f"chunk {i + 1}": n for i, n in enumerate(sizes)}),
            f"{wrong[0][0]} step {wrong[0][1]} was given {wrong[0][2]}"
            if wrong
            else f"steps run: {dict(ran)}",
        )
        finals = [f"chunk {i + 1}/s{n}" for i, n in enumerate(sizes)]
        yield Case(
            f"{shape}: the top synthesizer gets each chunk's final output, and its answer is the deliverable",
            r.synthesized == [finals] and deliverable == "TOP REPORT: " + " + ".join(finals),
            f"the synthesizer got {r.synthesized}, the deliverable is {deliverable!r}",
        )


# --- 01.when-hierarchy --------------------------------------------------------------------------

_SITUATIONS = ("p", "q", "r", "s")


@exercise(
    "01.when-hierarchy",
    "When a hierarchy pays for its extra rounds",
    hint="a hierarchy costs about two extra calls per chunk and one more round before any work starts; "
    "ask of each situation whether one planner could hold the whole plan, whether a part must be redone "
    "without disturbing the rest, and whether there is time for the extra rounds",
)
def when_hierarchy(answer: Any) -> Iterator[Case]:
    if not isinstance(answer, Mapping):
        yield Case("the answer is a dict", False, f"got {type(answer).__name__}")
        return
    odd = {k: answer.get(k) for k in _SITUATIONS if answer.get(k) not in ("flat", "hierarchy")}
    yield Case("every situation is answered with one of the exercise's two words", not odd, f"got {odd}")
    yield Case(f"the answer is {_MARKED_BY_GRADER}", True)

# --- 01.reconcile -------------------------------------------------------------------------------


def _majority(findings: Mapping[str, Any]) -> list[tuple[str, str | None, frozenset]]:
    """(claim, value or None, cited steps) per claim, in the order the claims first appear."""
    said: dict[str, list] = {}
    for step_id, found in findings.items():
        for f in found:
            said.setdefault(f.claim, []).append((step_id, f))
    out = []
    for claim, pairs in said.items():
        support = Counter(f.value for _, f in pairs)
        top = max(support.values())
        tied = {v for v, n in support.items() if n == top}
        newest = {v: max(f.as_of for _, f in pairs if f.value == v) for v in tied}
        latest = max(newest.values())
        kept = [v for v in tied if newest[v] == latest]
        value = kept[0] if len(kept) == 1 else None
        cited = frozenset(s for s, f in pairs if value is None or f.value == value)
        out.append((claim, value, cited))
    return out


def _findings_case(seed: int) -> dict[str, list]:
    """Three to five workers reporting on three claims, with repeats, gaps and ties of date."""
    import random

    from agentlab.synthesis import Finding

    rng = random.Random(seed)
    steps = [f"s{i}" for i in range(1, rng.randint(3, 5) + 1)]
    out: dict[str, list] = {s: [] for s in steps}
    for claim in ("population of Tamsk", "governor of Solace", "area of Quillon"):
        for s in steps:
            if rng.random() < 0.85:
                value = rng.choice(["410", "455", "Maren Holt", "Tobin Vale", "73"][: rng.randint(2, 3)])
                out[s].append(Finding(claim, value, f"source {s}", rng.choice([1836, 1839, 1841])))
    return out


def _reconcile_fixed() -> list[tuple[str, dict[str, list]]]:
    from agentlab.synthesis import Finding

    def f(claim, value, year):
        return Finding(claim, value, "a source", year)

    c = "population of Tamsk"
    return [
        ("every worker agrees", {"s1": [f(c, "410", 1836)], "s2": [f(c, "410", 1841)]}),
        (
            "two older sources outvote one newer",
            {"s1": [f(c, "410", 1836)], "s2": [f(c, "410", 1836)], "s3": [f(c, "455", 1841)]},
        ),
        (
            "a tie in votes goes to the newer value",
            {"s1": [f(c, "410", 1836)], "s2": [f(c, "455", 1841)]},
        ),
        (
            "a tie in votes and in date stays open",
            {"s1": [f(c, "410", 1841)], "s2": [f(c, "455", 1841)], "s3": []},
        ),
        (
            "a tie in votes, one value also said earlier: the newest wins",
            {
                "s1": [f(c, "410", 1836)],
                "s2": [f(c, "410", 1841)],
                "s3": [f(c, "455", 1839)],
                "s4": [f(c, "455", 1839)],
            },
        ),
        (
            "a tie that stays open cites every step that spoke, the outvoted ones too",
            {"s1": [f(c, "410", 1841)], "s2": [f(c, "455", 1841)], "s3": [f(c, "73", 1836)]},
        ),
        (
            "the first worker is outvoted",
            {"s1": [f(c, "455", 1841)], "s2": [f(c, "410", 1839)], "s3": [f(c, "410", 1836)]},
        ),
    ]


def _shape(result: Any) -> list[tuple[str, Any, frozenset]] | str:
    """The learner's list of Resolved as (claim, value, cited steps); a message if it is not one."""
    if not isinstance(result, list):
        return f"returned {type(result).__name__}, not a list"
    rows = []
    for r in result:
        if not all(hasattr(r, a) for a in ("claim", "value", "cited")):
            return f"an item is a {type(r).__name__}, not a Resolved"
        rows.append((r.claim, r.value, frozenset(r.cited)))
    return rows


@exercise(
    "01.reconcile",
    "A synthesizer that goes with the majority, and cites",
    hint="count, for each claim, how many steps gave each value; only among the values with the most "
    "votes does the date decide (the newest as_of of each value); a tie that the date cannot break "
    "stays open (value None) and cites every step that spoke to the claim; a kept value cites exactly "
    "the steps that gave it",
)
def reconcile(majority: Callable) -> Iterator[Case]:
    cases = _reconcile_fixed() + [(f"hidden case {seed}", _findings_case(seed)) for seed in range(40)]
    wrong = []
    for what, findings in cases:
        result, error = attempt(majority, findings)
        got = error or _shape(result)
        want = _majority(findings)
        if what.startswith("hidden"):
            if got != want:
                wrong.append(what if isinstance(got, list) else f"{what}: {got}")
            continue
        yield Case(what, got == want, got if isinstance(got, str) else f"got {got}")
    yield Case("40 generated cases (3-5 workers, 3 claims)", not wrong, f"{len(wrong)} wrong: {wrong[:3]}")
