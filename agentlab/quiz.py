"""A learner's turn inside a lesson: a multiple-choice question that checks itself.

    quiz("What does a step wait for?", {"a": "its inputs", "b": "the clock"}, correct="a",
         why="a step starts as soon as the steps it depends on have finished.")

prints the question and the choices; the learner puts a letter in `answer=` and runs the cell
again to see whether it was right, and why. Plain text, no widget and no randomness, so it works
offline, in a terminal, and under nbval with the same output every time. Ungraded: the course's
graded work is in `exercises/`.
"""

from __future__ import annotations

from collections.abc import Mapping


def quiz(
    question: str, choices: Mapping[str, str], correct: str, why: str, answer: str | None = None
) -> None:
    """Print a question and its choices, then the verdict on `answer` (None: not answered yet).
    Prints only, returns nothing: a notebook cell shows no stray `True` under the verdict."""
    if correct not in choices:
        raise ValueError(f"correct must be one of the choices {', '.join(choices)}, got {correct!r}")
    print(question)
    for letter, text in choices.items():
        print(f"  ({letter}) {text}")
    if answer is None:
        print("Your turn: put your letter in answer=... and run this cell again.")
        return
    answer = str(answer).strip().lower().strip("()")
    if answer not in choices:
        print(f"{answer!r} is not one of the choices: {', '.join(choices)}.")
        return
    if answer == correct:
        print(f"✓ ({answer}) is right: {why}")
        return
    print(f"✗ not ({answer}). Think again, then try another letter.")
