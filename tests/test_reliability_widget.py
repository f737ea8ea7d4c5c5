"""The reliability explorer, driven without a kernel: move its sliders, read what it shows."""

import html
import math
import re

import matplotlib.pyplot as plt
import pytest

from agentlab.widgets import ReliabilityExplorer

PNG = b"\x89PNG"


def text(widget) -> str:
    """What an HTML widget shows, as plain text."""
    return html.unescape(re.sub(r"<[^>]+>", "", widget.value))


def test_it_opens_on_the_course_texts_example():
    explorer = ReliabilityExplorer()
    assert (explorer.p.value, explorer.n.value, explorer.q.value, explorer.retries.value) == (0.9, 5, 0.6, 0)
    assert explorer.chain == pytest.approx(0.59049)
    assert explorer.crossover == 4
    shown = text(explorer.summary)
    assert "chain of 5 59.0%" in shown
    assert "one agent 60.0%" in shown
    assert "at n = 5 one agent wins" in shown
    assert "the chain wins up to n = 4 steps" in shown
    assert bytes(explorer.plot.value).startswith(PNG)


def test_moving_p_moves_the_crossover_and_redraws():
    explorer = ReliabilityExplorer()
    before = explorer.plot.value
    explorer.p.value = 0.97
    assert explorer.crossover == 16
    assert "the chain wins up to n = 16 steps" in text(explorer.summary)
    assert "at n = 5 the chain wins" in text(explorer.summary)
    assert explorer.plot.value != before


def test_moving_n_and_q_changes_the_verdict():
    explorer = ReliabilityExplorer()
    explorer.n.value = 3
    assert explorer.chain == pytest.approx(0.729)
    assert "at n = 3 the chain wins" in text(explorer.summary)
    explorer.q.value = 0.95
    assert explorer.crossover == 0
    assert "one agent wins at every length" in text(explorer.summary)


def test_a_retry_per_step_lifts_every_step_and_the_crossover():
    explorer = ReliabilityExplorer()
    explorer.retries.value = 1
    assert explorer.step_success == pytest.approx(0.99)
    assert explorer.chain == pytest.approx(0.99**5)
    assert explorer.crossover == 50  # 0.99^50 = 0.605 > 0.6 > 0.99^51
    assert "step 99.0% with 1 retry" in text(explorer.summary)


@pytest.mark.parametrize(
    "p, n, q, verdict",
    [
        (0.5, 2, 0.25, "the chain wins up to n = 1 steps"),  # 0.5 ** 2 == 0.25 exactly
        (0.6, 1, 0.6, "the chain never wins (a tie at n = 1)"),
        (1.0, 3, 1.0, "a tie at every length"),
    ],
)
def test_a_tie_is_called_a_tie_not_a_win(p, n, q, verdict):
    explorer = ReliabilityExplorer(p=p, n=n, q=q)
    shown = text(explorer.summary)
    assert f"at n = {n} it is a tie" in shown
    assert "one agent wins" not in shown and verdict in shown


def test_a_perfect_step_never_loses():
    explorer = ReliabilityExplorer(p=1.0)
    assert explorer.crossover == math.inf
    assert "the chain never falls below one agent" in text(explorer.summary)


def test_the_plot_shows_the_curve_the_single_agent_line_and_the_crossover():
    explorer = ReliabilityExplorer(max_n=20)
    fig, ax = plt.subplots()
    explorer.draw(ax)
    curve = ax.lines[0]
    assert list(curve.get_xdata()) == list(range(1, 21))
    assert curve.get_ydata()[4] == pytest.approx(0.59049)
    labels = [line.get_label() for line in ax.lines]
    assert "one agent, q = 0.60" in labels
    assert "chain wins up to n = 4" in labels
    crossover = ax.lines[labels.index("chain wins up to n = 4")]
    assert list(crossover.get_xdata()) == [4, 4]
    plt.close(fig)


def test_retries_also_draw_the_curve_without_them():
    explorer = ReliabilityExplorer(retries=2)
    fig, ax = plt.subplots()
    explorer.draw(ax)
    assert "chain, no retries" in [line.get_label() for line in ax.lines]
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 1.5}, r"p must be a probability in \[0, 1\], got 1.5"),
        ({"q": -0.2}, r"q must be a probability in \[0, 1\], got -0.2"),
        ({"n": 0}, "n must be a whole number >= 1, got 0"),
        ({"retries": -1}, "retries must be a whole number >= 0, got -1"),
        ({"n": 40, "max_n": 30}, r"n must be at most max_n \(30\), got 40"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReliabilityExplorer(**kwargs)
