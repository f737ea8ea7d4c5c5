"""The runs and tables behind notebook 08's hidden cases for routing by size (`08.threshold`) and for
auditing a handoff log (`08.handoff-audit`): notebook 08's own batches and runs (its four-hop chain is
notebook 07's), on the simulated LLM, and small hand-made ones that each tell one wrong rule from the
right one."""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator
from typing import Any

from agentlab import world
from agentlab.compare import Comparison, Outcome, Setup, compare
from agentlab.handoffs import HandoffRun, Transfer, handoff
from agentlab.llm import SimulatedLLM
from agentlab.llm.base import Completion, Usage
from agentlab.prompts import handoff_request


def _migrations(count: int, seed: int) -> list[world.Task]:
    """Notebook 08's batch of section 1: six in eight small, one in four large."""
    rng = random.Random(seed)
    batch = []
    for i in range(count):
        kind, size = i % 8, rng.choice((5, 6, 7, 8))
        if kind < 3:
            batch.append(world.single_task(rng, f"m{i}"))
        elif kind < 6:
            batch.append(world.chain_task(rng, 2, f"m{i}"))
        elif kind == 6:
            batch.append(world.chain_task(rng, size, f"m{i}"))
        else:
            batch.append(world.fanout_task(rng, size, rng.choice(("total", "highest", "lowest")), f"m{i}"))
    return batch


def _staffed(model: str) -> Setup:
    sim = SimulatedLLM(seed=0, error_rate=0.1)
    return Setup(sim, agent_model=model, planner_model=model, executor_model=model, tool_steps=False)


_PAIR = ["react", "planner+workers"]


@functools.cache
def _batch(seed: int, model: str) -> Comparison:
    """One of notebook 08's batches, run by one agent and by the team: seconds, so made once."""
    return compare(_migrations(80, seed), _staffed(model), _PAIR)


def threshold_cases() -> Iterator[tuple[str, Comparison]]:
    """Notebook 08's batches, and small tables that each tell one wrong rule from the right one. A
    batch is run when its case comes, so a check of the untouched stub stops before the other two."""
    yield "notebook 08's tuning batch, the small model", _batch(1, "sim-small")
    yield "notebook 08's tuning batch, the large model", _batch(1, "sim-large")
    yield "notebook 08's held-out batch, the small model", _batch(2, "sim-small")
    yield from _tables()


@functools.cache
def _tables() -> tuple[tuple[str, Comparison], ...]:
    """The hand-made comparisons, each telling one wrong rule from the right one."""
    return (
        # (steps, one agent right, team right, one agent's tokens, the team's tokens) per task
        (
            "two thresholds equally accurate, one of them cheaper",
            _sized((1, 1, 1, 100, 900), (3, 1, 0, 100, 900), (3, 0, 1, 100, 900), (6, 0, 1, 100, 900)),
        ),
        (
            "the team wins only where the tasks are largest",
            _sized(
                (1, 1, 0, 100, 300),
                (2, 0, 1, 100, 300),
                (4, 1, 0, 100, 300),
                (5, 1, 0, 100, 300),
                (7, 0, 1, 100, 300),
            ),
        ),
        (
            "one agent better at every size",
            _sized((1, 1, 0, 100, 300), (2, 1, 1, 100, 300), (5, 1, 0, 100, 300)),
        ),
        (
            "the team better at every size",
            _sized((1, 0, 1, 100, 300), (2, 0, 1, 100, 300), (4, 1, 1, 100, 300)),
        ),
        (  # output is dearer than input: the fewer tokens are not the fewer dollars
            "equally accurate everywhere: the team reads fewer tokens, but writes more and costs more",
            _sized((1, 1, 1, 1000, (200, 300)), (5, 1, 1, 1000, (200, 300))),
        ),
        (
            "sizes with a gap between them",
            _sized((1, 1, 0, 100, 300), (2, 1, 1, 100, 300), (6, 0, 1, 100, 300)),
        ),
    )


def _sized(*tasks: tuple[int, int, int, Any, Any]) -> Comparison:
    """A comparison of one agent and the team given task by task: the steps the task needs, whether
    each got it right, and the input tokens each read (on the large model, so they have a price), or
    (input, output) tokens where the output is not the usual 10."""
    made, outcomes = [], {name: [] for name in _PAIR}
    for i, (steps, *rights, one_tokens, team_tokens) in enumerate(tasks):
        task = world.chain_task(random.Random(i), steps, f"t{i}")
        made.append(task)
        for name, right, tokens in zip(_PAIR, rights, (one_tokens, team_tokens), strict=True):
            read, written = tokens if isinstance(tokens, tuple) else (tokens, 10)
            call = Completion("", "sim-large", "simulated", Usage(read, written), 1.0)
            answer = task.answer if right else "no answer"
            outcomes[name].append(Outcome(task, answer, ((f"{name}1", "agent", call),), 1.0))
    return Comparison(made, outcomes)


def _log(task: str, *transfers: tuple[str, str, str, list]) -> HandoffRun:
    """A run given by its transfer log alone: (source, target, note, the messages sent) each."""
    log = [
        Transfer(i + 1, source, target, note, tuple(sent))
        for i, (source, target, note, sent) in enumerate(transfers)
    ]
    return HandoffRun(task, "intent", "an answer", "done", log[-1].target if log else "triage", log)


_REQUEST = "What is the total crew of Silver Heron and Moth Queen?"
_NOTE = "Start here: What is the crew of Silver Heron?"


@functools.cache
def audit_cases() -> tuple[tuple[str, HandoffRun], ...]:
    chain = world.chain_task(random.Random(7), 4).question
    llm = SimulatedLLM(seed=0)
    user = {"role": "user", "content": _REQUEST}
    blocks = {"role": "user", "content": [{"type": "text", "text": f"Request: {_REQUEST}"}]}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Transferred."}],
    }
    relayed = {"role": "user", "content": handoff_request(_NOTE, "researcher")}
    echo = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t2", "content": f"Logged: {_REQUEST}"}],
    }
    greeting = {"role": "user", "content": "Hello, records office."}
    return (
        ("notebook 07's four-hop chain, the request forwarded", handoff(chain, llm, carry="intent")),
        ("notebook 07's four-hop chain, the note alone", handoff(chain, llm, carry="note")),
        ("notebook 07's four-hop chain, the whole conversation", handoff(chain, llm, carry="history")),
        ("a single lookup, the note alone", handoff("What is the population of Varra?", llm, carry="note")),
        (
            "two transfers: the first forwards the request, the second only a note",
            _log(
                _REQUEST, ("triage", "researcher", _NOTE, [user]), ("researcher", "analyst", _NOTE, [relayed])
            ),
        ),
        ("the request in a text block", _log(_REQUEST, ("triage", "analyst", _NOTE, [blocks]))),
        (
            "the whole conversation, ending with a tool result",
            _log(
                _REQUEST, ("triage", "analyst", _NOTE, [user, {"role": "assistant", "content": "ok"}, result])
            ),
        ),
        (
            "a note that quotes the request, and messages that do not",
            _log(_REQUEST, ("triage", "analyst", f"The user asked: {_REQUEST}", [relayed])),
        ),
        ("no transfer at all", _log(_REQUEST)),
        (
            "a tool result that quotes the request, after a note: only text counts",
            _log(_REQUEST, ("triage", "analyst", _NOTE, [relayed, echo])),
        ),
        (
            "the request in the third message the receiver starts from",
            _log(
                _REQUEST,
                ("triage", "analyst", _NOTE, [greeting, {"role": "assistant", "content": "Yes?"}, user]),
            ),
        ),
    )
