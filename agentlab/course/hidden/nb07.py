"""Notebook 07's key: which topology fits each task (marked as a whole, never "k of n")."""

from collections.abc import Iterator, Mapping
from typing import Any

from agentlab.course.checks import Case
from agentlab.course.hidden import grading

# C, a long chain known in advance, is planned once: plan-execute, or a planner with workers, which
# runs the same plan one step at a time (the exercise's text says either is right).
SHAPES = {"A": {"react"}, "B": {"planner+workers"}, "C": {"plan-execute", "planner+workers"}, "D": {"react"}}


@grading("07.shapes")
def shapes(choice: Any) -> Iterator[Case]:
    choice = choice if isinstance(choice, Mapping) else {}
    yield Case("the four tasks", all(choice.get(k) in fits for k, fits in SHAPES.items()), "not all right")


# --- 07.react-tokens: growth that is not a whole number of tokens ---------------------------------


def _run(*inputs: int):
    from agentlab.llm.base import Completion, Usage
    from agentlab.react import ReactRun, Turn

    usage = (Usage(input_tokens=n, output_tokens=20) for n in inputs)
    turns = [
        Turn(i + 1, "", (), Completion("", "sim-large", "simulated", u), 1.0) for i, u in enumerate(usage)
    ]
    return ReactRun("a question", "an answer", "done", turns)


@grading("07.react-tokens")
def half_a_token(predict: Any) -> Iterator[Case]:
    from agentlab.course.checks import attempt

    # B = 100, g = (101 - 100) / 2 = 0.5: 100 calls read 100 x 100 + 0.5 x 100 x 99 / 2 = 12,475 tokens
    got, error = attempt(predict, _run(100, 100, 101), 100)
    right = not error and isinstance(got, int | float) and abs(got - 12_475) <= 0.5
    yield Case("a run that grew half a token a call, predicting 100 calls", right, error or f"got {got!r}")
