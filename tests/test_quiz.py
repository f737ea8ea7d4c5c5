"""The lessons' self-checking multiple choice: the question, then a verdict on the learner's letter."""

import pytest

from agentlab.quiz import quiz

ASK = dict(
    question="What does a step wait for?",
    choices={"a": "its inputs", "b": "the clock"},
    correct="a",
    why="a step starts once the steps it depends on have finished.",
)


def test_unanswered_it_shows_the_question_and_asks_for_a_letter(capsys):
    assert quiz(**ASK) is None
    assert capsys.readouterr().out.splitlines() == [
        "What does a step wait for?",
        "  (a) its inputs",
        "  (b) the clock",
        "Your turn: put your letter in answer=... and run this cell again.",
    ]


def test_a_right_answer_says_why_and_a_wrong_one_does_not_give_it_away(capsys):
    quiz(**ASK, answer="(A)")
    assert capsys.readouterr().out.endswith(
        "✓ (a) is right: a step starts once the steps it depends on have finished.\n"
    )
    quiz(**ASK, answer="b")
    out = capsys.readouterr().out
    assert "✗ not (b)" in out and "depends on" not in out


def test_a_letter_that_is_no_choice_and_a_bad_question_are_told_plainly(capsys):
    quiz(**ASK, answer="c")
    assert "'c' is not one of the choices: a, b." in capsys.readouterr().out
    with pytest.raises(ValueError, match="correct must be one of the choices a, b, got 'z'"):
        quiz(**{**ASK, "correct": "z"})
