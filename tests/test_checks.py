"""The check framework: pass, fail with a hint, and stop on a stub."""

import pytest

from agentlab.checks import REGISTRY, Case, CheckFailed, attempt, check, exercise


@pytest.fixture
def square_exercise():
    @exercise("99.square", "Square a number", hint="multiply the number by itself")
    def cases(square):
        for x, want in ((2, 4), (-3, 9), (0.5, 0.25)):
            got, error = attempt(square, x)
            yield Case(f"square({x}) == {want}", got == want, error or f"got {got!r}")

    yield
    del REGISTRY["99.square"]


def test_a_right_answer_passes_every_case(square_exercise, capsys):
    check("99.square", lambda x: x * x)
    out = capsys.readouterr().out
    assert out.count("✓") == 3 and "All 3 checks passed." in out


def test_a_wrong_answer_fails_with_the_hint_and_shows_which_cases(square_exercise, capsys):
    with pytest.raises(CheckFailed, match="2 of 3 checks failed. Hint: multiply the number by itself"):
        check("99.square", lambda x: x + x)  # right only for 2
    out = capsys.readouterr().out
    assert "✓ square(2) == 4" in out and "✗ square(-3) == 9: got -6" in out


def test_a_buggy_answer_is_a_failed_case_showing_its_error(square_exercise, capsys):
    with pytest.raises(CheckFailed):
        check("99.square", lambda x: x.bit_length())
    assert "raised AttributeError" in capsys.readouterr().out


def test_a_stub_stops_with_not_implemented_error(square_exercise, capsys):
    def stub(x):
        raise NotImplementedError("Exercise: write this part")

    with pytest.raises(NotImplementedError):
        check("99.square", stub)
    assert "not written yet" in capsys.readouterr().out


def test_an_unknown_exercise_names_the_known_ones(square_exercise):
    with pytest.raises(KeyError, match="no exercise '99.cube'; known: .*99.square"):
        check("99.cube", None)


def test_a_loop_that_never_ends_fails_its_case_instead_of_hanging(square_exercise, capsys):
    def forever(x):
        while True:
            pass

    got, error = attempt(forever, 2, limit=0.2)
    assert got is None and error == "raised TimeoutError: no answer after 0.2 s: does a loop never end?"
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left behind
    assert attempt(lambda x: x, 3) == (3, "")  # a quick answer is untouched by the default limit
