"""The checks of notebook 06's exercises: each fails on the stub and on a plausible mistake, and passes
on the solution notebook's own code."""

import math
from pathlib import Path

import notebook_code
import numpy as np
import pytest

from agentlab.course.checks import CheckFailed, check, nb06
from agentlab.experiments import Estimate, correlated_chain_success, task_rates, with_retries

notebook_code.skip_without_solutions()
SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "06_error_propagation.ipynb"


def solution(*names):
    return notebook_code.define(SOLUTION, *names)


@pytest.mark.parametrize("exercise", ["06.crossover", "06.best-cut", "06.retries-correlated"])
def test_an_untouched_stub_stops_with_not_implemented_error(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check(exercise, notebook_code.stub)
    assert "not written yet" in capsys.readouterr().out


# --- 06.crossover -------------------------------------------------------------------------------


def test_crossover_passes_the_solution(capsys):
    check("06.crossover", solution("longest_winning_chain"))
    assert "All 10 checks passed." in capsys.readouterr().out


def test_crossover_fails_a_logarithm_that_counts_a_tie_as_a_win(capsys):
    def by_logs(p, q):
        if p <= q:
            return 0
        if p == 1 or q == 0:
            return math.inf
        return math.floor(math.log(q) / math.log(p))

    with pytest.raises(CheckFailed, match="1 of 10 checks failed. Hint: look at the edges .*a tie"):
        check("06.crossover", by_logs)
    assert "✗ a tie is not a win: p = 0.5 against q = 0.25 = 0.5²: got 2" in capsys.readouterr().out


def test_crossover_stops_a_loop_that_never_ends_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(nb06, "_TIME_LIMIT", 0.2)

    def unguarded(p, q):  # notebook 06's loop: right in the middle, endless at p = 1
        n = 0
        while p ** (n + 1) > q:
            n += 1
        return n

    with pytest.raises(CheckFailed):
        check("06.crossover", unguarded)
    out = capsys.readouterr().out
    assert "✓ (a) p = 0.9 against q = 0.6\n" in out  # the case, never its answer
    assert "✗ steps that never fail: p = 1 against q = 0.6: raised TimeoutError" in out
    assert "does a loop never end?" in out


def test_the_time_limit_leaves_a_quick_answer_alone_and_cancels_its_alarm():
    assert nb06._bounded(lambda p, q: 4, 0.9, 0.6) == (4, "")
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def crossover_with(tie_wins=False, first_loser=False, unguarded_logs=False):
    """longest_winning_chain with one mistake: a tie counted as a win, the first length that loses
    returned instead of the last that wins, or a logarithm with no guard for p = 1."""

    def longest(p, q):
        if q >= p:
            return 0
        if unguarded_logs:
            return math.floor(math.log(q) / math.log(p) - 1e-12)
        if p == 1 or q == 0:
            return math.inf
        n = 0
        while p ** (n + 1) >= q if tie_wins else p ** (n + 1) > q:
            n += 1
        return n + 1 if first_loser else n

    return longest


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"tie_wins": True}, "✗ a tie is not a win: p = 0.5 against q = 0.25 = 0.5²: got 2"),
        ({"first_loser": True}, "✗ (a) p = 0.9 against q = 0.6: got 5"),
        (
            {"unguarded_logs": True},
            "✗ steps that never fail: p = 1 against q = 0.6: raised ZeroDivisionError",
        ),
    ],
    ids=lambda x: next(iter(x)),
)
def test_crossover_catches_a_tie_as_a_win_the_first_loser_and_an_unguarded_logarithm(mistake, line, capsys):
    notebook_code.caught(capsys, "06.crossover", crossover_with(**mistake), line)


# --- 06.best-cut ----------------------------------------------------------------------------------


def test_best_cut_passes_the_solution(capsys):
    check("06.best-cut", solution("best_cut"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_best_cut_fails_a_handoff_after_the_last_piece(capsys):
    def one_handoff_too_many(fail, handoff, most):
        chances = {n: (1 - fail / n) ** n * (1 - handoff) ** n for n in range(1, most + 1)}
        best = max(chances.values())
        return min(n for n, c in chances.items() if c == best), best

    with pytest.raises(CheckFailed, match="how many handoffs lie between n pieces"):
        check("06.best-cut", one_handoff_too_many)
    out = capsys.readouterr().out
    assert "✓ an agent that never fails" in out  # no handoff loss, so nothing to get wrong
    assert "✗ handoffs lose 10%: got (1, 0.54" in out  # the right n, the wrong chance


def test_best_cut_fails_a_range_that_stops_one_short(capsys):
    def stops_short(fail, handoff, most):
        chances = {n: (1 - fail / n) ** n * (1 - handoff) ** (n - 1) for n in range(1, most)}
        best = max(chances.values())
        return min(n for n, c in chances.items() if c == best), best

    with pytest.raises(CheckFailed, match="2 of 6 checks failed"):
        check("06.best-cut", stops_short)
    out = capsys.readouterr().out
    assert "✗ free handoffs: got (14, " in out
    assert "✗ only one piece allowed: raised ValueError" in out


def most_pieces_on_a_tie(fail, handoff, most):
    """Keeps the last of the best cuts (>=), so a tie goes to more pieces."""
    best_n, best = 1, -1.0
    for n in range(1, most + 1):
        chance = (1 - fail / n) ** n * (1 - handoff) ** (n - 1)
        if chance >= best:
            best_n, best = n, chance
    return best_n, best


def pieces_as_hard_as_the_whole(fail, handoff, most):
    """Forgets that a smaller piece fails less: each piece fails with the whole task's `fail`."""
    chances = {n: (1 - fail) ** n * (1 - handoff) ** (n - 1) for n in range(1, most + 1)}
    best = max(chances.values())
    return min(n for n, c in chances.items() if c == best), best


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            most_pieces_on_a_tie,
            "✗ an agent that never fails, and free handoffs: every cut ties: got (8, 1.0)",
        ),
        (pieces_as_hard_as_the_whole, "✗ notebook 06's curve: handoffs lose 1%: got (1, 0.6)"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_best_cut_catches_ties_to_the_most_pieces_and_pieces_as_hard_as_the_whole(wrong, line, capsys):
    notebook_code.caught(capsys, "06.best-cut", wrong, line)


# --- 06.retries-correlated ------------------------------------------------------------------------


def test_the_exact_answer_agrees_with_the_kit_where_the_kit_has_one():
    from agentlab.course.hidden.keys_nb06 import retries_exact  # the instructor's: it never ships

    assert math.isclose(retries_exact(0.8, 5, 2, 0.0), with_retries(0.8, 2) ** 5)
    assert math.isclose(retries_exact(0.8, 5, 1, 0.3), correlated_chain_success(0.8, 5, 0.3))
    assert math.isclose(retries_exact(0.8, 5, 3, 1.0), 0.8)
    assert retries_exact(0.8, 5, 2, 0.3) < with_retries(0.8, 2) ** 5  # shared difficulty costs


def test_retries_passes_the_solution(capsys):
    check("06.retries-correlated", solution("simulate_retries"))
    assert "All 6 checks passed." in capsys.readouterr().out


def test_retries_fails_a_fresh_difficulty_for_every_try(capsys):
    def fresh_every_try(p, n, attempts, correlation, trials=100_000, seed=0):
        rng = np.random.default_rng(seed)
        rate = task_rates(p, correlation, trials * n * attempts, rng).reshape(trials, n, attempts)
        right = (rng.random((trials, n, attempts)) < rate).any(axis=2).all(axis=1)
        return Estimate(int(right.sum()), trials)

    with pytest.raises(CheckFailed, match="how many rates you draw"):
        check("06.retries-correlated", fresh_every_try)
    out = capsys.readouterr().out
    assert "✓ independent failures, 2 tries a step" in out
    assert "✗ correlated failures (0.3), 2 tries a step: simulated 0.81" in out and "too high" in out


def test_retries_fails_retrying_the_whole_chain(capsys):
    def whole_chain(p, n, attempts, correlation, trials=100_000, seed=0):
        rng = np.random.default_rng(seed)
        rate = task_rates(p, correlation, trials, rng)
        chains = (rng.random((trials, attempts, n)) < rate[:, None, None]).all(axis=2).any(axis=1)
        return Estimate(int(chains.sum()), trials)

    with pytest.raises(CheckFailed):
        check("06.retries-correlated", whole_chain)
    assert "✗ independent failures, 2 tries a step" in capsys.readouterr().out


def test_retries_fails_a_rate_instead_of_an_estimate(capsys):
    def just_a_rate(p, n, attempts, correlation, trials=100_000, seed=0):
        return with_retries(p, attempts) ** n

    with pytest.raises(CheckFailed):
        check("06.retries-correlated", just_a_rate)
    assert "expected an Estimate of 100,000 trials, got 0.81" in capsys.readouterr().out


def simulate_with(rate_per_step=False, every_try=False, unseeded=False):
    """simulate_retries with one mistake: a rate drawn per step instead of per task, a step that
    needs every try to succeed, or a generator that ignores the seed."""

    def simulate(p, n, attempts, correlation, trials=100_000, seed=0):
        rng = np.random.default_rng(None if unseeded else seed)
        if rate_per_step:
            rate = task_rates(p, correlation, trials * n, rng).reshape(trials, n)[:, :, None]
        else:
            rate = task_rates(p, correlation, trials, rng)[:, None, None]
        tries = rng.random((trials, n, attempts)) < rate
        steps = tries.all(axis=2) if every_try else tries.any(axis=2)
        return Estimate(int(steps.all(axis=1).sum()), trials)

    return simulate


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"rate_per_step": True}, "✗ correlated failures (0.3), 2 tries a step: simulated"),
        ({"every_try": True}, "✗ independent failures, 2 tries a step: simulated"),
        ({"unseeded": True}, "✗ the same seed gives the same count"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_retries_catches_a_rate_per_step_tries_that_all_must_succeed_and_no_seed(mistake, line, capsys):
    notebook_code.caught(capsys, "06.retries-correlated", simulate_with(**mistake), line)


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def longest_with(q_zero_unguarded=False, rounded_logs=False, none_when_no_chain=False):
    """longest_winning_chain with one mistake: only p = 1 guarded (a loop that runs until p**n
    underflows to 0 at q = 0), the logarithm rounded instead of floored, or None when no chain wins."""

    def longest(p, q):
        if p <= q:
            return None if none_when_no_chain else 0
        if p == 1 or (q == 0 and not q_zero_unguarded):
            return math.inf
        if rounded_logs:
            return round(math.log(q) / math.log(p))
        n = 0
        while p ** (n + 1) > q:
            n += 1
        return n

    return longest


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"q_zero_unguarded": True}, "✗ an agent that never succeeds: p = 0.5 against q = 0: got 1074"),
        ({"rounded_logs": True}, "✗ (a) p = 0.9 against q = 0.6: got 5"),
        ({"none_when_no_chain": True}, "✗ one agent as good as one step: p = q = 0.8: got None"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_crossover_catches_q_zero_unguarded_a_rounded_logarithm_and_none_for_no_chain(mistake, line, capsys):
    notebook_code.caught(capsys, "06.crossover", longest_with(**mistake), line)


def cut_with(swapped=False, rounded=False, handoffs_added=False):
    """best_cut with one mistake: (chance, pieces) instead of (pieces, chance), the chance rounded to
    three places as a table would print it, or the handoffs' losses added up instead of multiplied."""

    def cut(fail, handoff, most):
        def chance(n):
            handoffs = 1 - handoff * (n - 1) if handoffs_added else (1 - handoff) ** (n - 1)
            return (1 - fail / n) ** n * handoffs

        chances = {n: chance(n) for n in range(1, most + 1)}
        best = max(chances.values())
        pieces = min(n for n, c in chances.items() if c == best)
        best = round(best, 3) if rounded else best
        return (best, pieces) if swapped else (pieces, best)

    return cut


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"swapped": True}, "✗ notebook 06's curve: handoffs lose 1%: got (0."),
        ({"rounded": True}, "✗ notebook 06's curve: handoffs lose 1%: got ("),
        ({"handoffs_added": True}, "✗ notebook 06's curve: handoffs lose 1%: got (3, 0.63"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_best_cut_catches_the_pair_swapped_a_rounded_chance_and_losses_added(mistake, line, capsys):
    notebook_code.caught(capsys, "06.best-cut", cut_with(**mistake), line)


def retries_with(global_tries=False, one_draw_per_step=False, retries_as_attempts=False):
    """simulate_retries with one mistake: the tries drawn from numpy's global generator (only the rates
    from `rng`), one random draw per step reused by all its tries, or one try fewer than `attempts`."""

    def simulate(p, n, attempts, correlation, trials=100_000, seed=0):
        rng = np.random.default_rng(seed)
        rate = task_rates(p, correlation, trials, rng)[:, None, None]
        tries = attempts - 1 if retries_as_attempts else attempts
        if one_draw_per_step:
            draws = np.repeat(rng.random((trials, n, 1)), tries, axis=2)
        else:
            draws = (np.random.random if global_tries else rng.random)((trials, n, tries))
        chains = (draws < rate).any(axis=2).all(axis=1)
        return Estimate(int(chains.sum()), trials)

    return simulate


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"global_tries": True}, "✗ the same seed gives the same count"),
        ({"one_draw_per_step": True}, "✗ independent failures, 2 tries a step: simulated"),
        ({"retries_as_attempts": True}, "✗ independent failures, 2 tries a step: simulated"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_retries_catches_the_global_generator_one_draw_per_step_and_a_try_too_few(mistake, line, capsys):
    notebook_code.caught(capsys, "06.retries-correlated", retries_with(**mistake), line)
