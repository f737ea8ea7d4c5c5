"""Exact reliability answers: chains, the crossover with one agent, retries, a checker, voting."""

import math

import pytest

from agentlab.experiments import (
    chain_success,
    correlated_chain_success,
    longest_winning_chain,
    majority_vote,
    with_checker,
    with_retries,
)


def test_the_course_texts_worked_numbers():
    assert chain_success(0.9, 5) == pytest.approx(0.59049)
    assert chain_success(0.95, 5) == pytest.approx(0.7737809375)
    assert chain_success(0.8, 1) == 0.8


def test_a_chain_at_ninety_percent_beats_a_sixty_percent_agent_up_to_four_steps():
    assert longest_winning_chain(0.9, 0.6) == 4  # 0.9^4 = 0.6561 > 0.6 > 0.59049 = 0.9^5


def test_more_reliable_steps_push_the_crossover_out_to_sixteen():
    assert longest_winning_chain(0.97, 0.6) == 16  # 0.97^16 = 0.6143 > 0.6 > 0.5958 = 0.97^17


def test_a_tie_with_the_single_agent_is_not_a_win():
    assert longest_winning_chain(0.5, 0.25) == 1  # 0.5^2 equals 0.25 exactly
    assert longest_winning_chain(0.9, 0.9**3) == 2


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
@pytest.mark.parametrize("q", [0.01, 0.3, 0.6, 0.75])
def test_the_crossover_is_the_last_length_that_still_wins(p, q):
    n = longest_winning_chain(p, q)
    assert n == 0 or p**n > q
    assert p ** (n + 1) <= q


def test_edge_cases_of_the_crossover():
    assert longest_winning_chain(0.6, 0.6) == 0  # one step is already no better
    assert longest_winning_chain(0.5, 0.7) == 0
    assert longest_winning_chain(1.0, 0.99) == math.inf  # a perfect step never loses
    assert longest_winning_chain(0.5, 0.0) == math.inf  # nothing to beat


def test_retries_give_each_step_more_tries():
    assert with_retries(0.9, 1) == pytest.approx(0.9)
    assert with_retries(0.9, 2) == pytest.approx(0.99)
    assert with_retries(0.5, 3) == pytest.approx(0.875)
    # two tries per step turn a 5-step chain at 0.9 from 59% into 95%
    assert chain_success(with_retries(0.9, 2), 5) == pytest.approx(0.99**5)


def test_a_perfect_checker_is_the_same_as_retrying_a_detected_failure():
    for p in (0.3, 0.9):
        for attempts in (1, 2, 5):
            assert with_checker(p, attempts, catch=1, false_alarm=0) == pytest.approx(
                with_retries(p, attempts)
            )


def test_an_imperfect_checker_by_hand():
    # accepts a right result with 0.8 * 0.9 = 0.72; rejects with 0.8 * 0.1 + 0.2 * 0.5 = 0.18
    assert with_checker(0.8, 1, catch=0.5, false_alarm=0.1) == pytest.approx(0.72)
    assert with_checker(0.8, 2, catch=0.5, false_alarm=0.1) == pytest.approx(0.72 * 1.18)


def test_a_checker_that_misses_errors_caps_the_step_however_many_tries():
    cap = 0.72 / (1 - 0.18)  # the share of accepted results that are right
    assert with_checker(0.8, 200, catch=0.5, false_alarm=0.1) == pytest.approx(cap)
    assert with_checker(0.8, 10, catch=0.5, false_alarm=0.1) < cap
    assert with_checker(0.8, 50, catch=0.0, false_alarm=0.0) == pytest.approx(0.8)  # it never rejects
    assert with_checker(0.8, 50, catch=1.0, false_alarm=1.0) == 0  # it rejects everything


def test_majority_vote_by_hand():
    assert majority_vote(0.7, 1) == pytest.approx(0.7)
    assert majority_vote(0.7, 3) == pytest.approx(0.7**3 + 3 * 0.7**2 * 0.3)
    assert majority_vote(0.7, 2) == pytest.approx(0.7)  # the tie-breaking coin adds nothing


def test_voting_helps_above_one_half_and_hurts_below():
    assert majority_vote(0.7, 3) < majority_vote(0.7, 5) < majority_vote(0.7, 7)
    assert majority_vote(0.4, 3) == pytest.approx(0.4**3 + 3 * 0.4**2 * 0.6)
    assert majority_vote(0.4, 3) < 0.4
    assert majority_vote(0.5, 9) == pytest.approx(0.5)


def test_correlated_chain_by_hand():
    # correlation 1/3 at p = 0.5 makes each task's rate uniform on [0, 1]; the mean of u^n is 1/(n+1)
    assert correlated_chain_success(0.5, 3, 1 / 3) == pytest.approx(0.25)
    assert correlated_chain_success(0.9, 5, 0.0) == pytest.approx(0.9**5)
    assert correlated_chain_success(0.9, 20, 1.0) == pytest.approx(0.9)  # all or nothing


def test_correlated_failures_leave_long_chains_more_likely_to_succeed():
    for n in (2, 5, 10, 30):
        assert correlated_chain_success(0.9, n, 0.1) > 0.9**n
    assert correlated_chain_success(0.9, 1, 0.5) == pytest.approx(0.9)  # one step: no difference


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: chain_success(1.2, 3), r"p must be a probability in \[0, 1\], got 1.2"),
        (lambda: chain_success(0.9, 0), r"n must be a whole number >= 1, got 0"),
        (lambda: chain_success(0.9, 2.5), r"n must be a whole number >= 1, got 2.5"),
        (lambda: chain_success(True, 3), r"p must be a probability in \[0, 1\], got True"),
        (lambda: chain_success(float("nan"), 3), r"p must be a probability in \[0, 1\], got nan"),
        (lambda: longest_winning_chain(0.9, -0.1), r"q must be a probability"),
        (lambda: longest_winning_chain("0.9", 0.6), r"p must be a probability"),
        (lambda: with_retries(0.9, 0), r"attempts must be a whole number >= 1, got 0"),
        (lambda: with_checker(0.9, 2, catch=1.5, false_alarm=0), r"catch must be a probability"),
        (lambda: with_checker(0.9, 2, catch=0.5, false_alarm=-1), r"false_alarm must be a probability"),
        (lambda: majority_vote(0.9, 0), r"voters must be a whole number >= 1, got 0"),
        (lambda: correlated_chain_success(0.9, 3, 2), r"correlation must be a probability"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
