"""A learner's turn inside a lesson: a multiple-choice question that checks itself.

    quiz("02.makespan-floor")        # shows the question and its choices
    quiz("02.makespan-floor", "b")   # ... and the verdict on b: right (and why), or try again

The questions live in the kit's bank (`agentlab.quiz_bank`), not in the lesson, and the bank keeps
each answer as a salted hash and each explanation encoded: the lesson's cell and its stored output
hold only the question, and reading the bank does not give the answer away either. This is
self-study, not an exam: the encoding spares a learner from reading the answer before thinking.

In JupyterLab the quiz is a small widget (click a choice, then Check; the verdict and the why after
a right answer, "try again" after a wrong one). Anywhere else, in a terminal and under nbval, it is
the same content as text, the same every time. A letter is understood in any case, with or without
its quotes: in IPython, `quiz("02.makespan-floor", b)` is read as `quiz("02.makespan-floor", "b")`
(an input transformer this module installs when imported), not a NameError. A Check in the widget
also updates the cell's stored text to the verdict, so the saved notebook shows what was answered
(`agentlab progress` reads it). Ungraded: the course's graded work is in `exercises/`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import zlib
from dataclasses import dataclass
from typing import Any


def quiz(quiz_id: str, answer: str | None = None) -> None:
    """Show the bank's question `quiz_id` and, given a letter, the verdict on it.
    Shows only, returns nothing: a notebook cell shows no stray value under the verdict."""
    card = QuizCard(question(quiz_id), answer)
    shell = _shell()
    if shell is not None and getattr(shell, "kernel", None) is not None:  # a Jupyter kernel: the widget
        from IPython.display import display

        card.handle = display(card, display_id=True)
    else:
        print(card.text())


@dataclass(frozen=True)
class Question:
    """One question of the bank: what it asks, its choices by letter, and its answer kept out of sight:
    `key` is the hash of the right letter salted with the id, `why` the explanation, encoded."""

    id: str
    ask: str
    choices: dict[str, str]
    key: str
    why: str

    def is_right(self, letter: str) -> bool:
        """Whether `letter` ("b", "B", "(b)") is the right choice: its salted hash is the key."""
        return _digest(self.id, letter) == self.key

    def explanation(self) -> str:
        """The why, decoded: shown only after a right answer."""
        return zlib.decompress(base64.b64decode(self.why)).decode("utf-8")


class QuizError(LookupError):
    """A quiz id the bank does not have. In Jupyter it shows as its one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


def question(quiz_id: str) -> Question:
    """The bank's question `quiz_id` ("02.makespan-floor"); a QuizError naming the lesson's quizzes if
    there is none."""
    from agentlab.quiz_bank import BANK  # here, not at the top: the bank imports Question from this module

    found = next((q for q in BANK if q.id == quiz_id), None)
    if found is None:
        lesson = str(quiz_id).split(".", 1)[0]
        known = [q.id for q in BANK if q.id.startswith(f"{lesson}.")] or [q.id for q in BANK]
        raise QuizError(f"no quiz {quiz_id!r}; the bank has {', '.join(known)}")
    return found


def encode(quiz_id: str, ask: str, choices: dict[str, str], correct: str, why: str) -> Question:
    """A bank entry from its plain content: how a new question is added (print the result's fields
    into `quiz_bank.py`). The plain answer and explanation go nowhere else."""
    if correct not in choices:
        raise ValueError(f"correct must be one of the choices {', '.join(choices)}, got {correct!r}")
    hidden = base64.b64encode(zlib.compress(why.encode("utf-8"), 9)).decode("ascii")
    return Question(quiz_id, ask, dict(choices), _digest(quiz_id, correct), hidden)


def letter_of(answer: object) -> str:
    """A learner's answer as a bare lower-case letter: "B", " b ", "(b)" and "'b'" all give "b"."""
    return str(answer).strip().strip("'\"").strip().strip("()").strip().lower()


def verdict(q: Question, answer: object) -> str:
    """One line on `answer`: not a choice, right with the why, or wrong with an invitation to try again.
    A wrong answer says nothing about which one is right."""
    letter = letter_of(answer)
    if letter not in q.choices:
        return f"{letter!r} is not one of the choices: {', '.join(q.choices)}."
    if q.is_right(letter):
        return f"✓ ({letter}) is right: {q.explanation()}"
    return f"✗ not ({letter}): think again, then try another choice."


class QuizCard:
    """A question as it is shown: text anywhere, and in Jupyter a widget with the same content.

    The widget is plain ipywidgets, so a test drives it without a browser: set `choices.value` to a
    letter and call `check.click()`, then read `result.value`."""

    def __init__(self, q: Question, answer: str | None = None):
        self.question = q
        self.answer = answer
        self.handle: Any = None  # where Jupyter shows the card: a Check updates its stored text there too
        self._widget: Any = None

    def text(self) -> str:
        """The question, its choices, then the verdict or an invitation to answer."""
        lines = [self.question.ask, *(f"  ({k}) {v}" for k, v in self.question.choices.items())]
        if self.answer is None:
            lines.append(
                f'Your turn: put your letter in quiz("{self.question.id}", "?") and run this cell again '
                "(in JupyterLab: click a choice, then Check)."
            )
        else:
            lines.append(verdict(self.question, self.answer))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    @property
    def widget(self) -> Any:
        """The widget, built on first use: a question, its choices, a Check button and the verdict."""
        if self._widget is None:
            self._build()
        return self._widget

    def _build(self) -> None:
        import ipywidgets as widgets

        q = self.question
        self.choices = widgets.RadioButtons(
            options=[(f"({k}) {v}", k) for k, v in q.choices.items()],
            value=None,
            layout=widgets.Layout(width="auto"),
        )
        self.check = widgets.Button(description="Check", button_style="primary")
        self.result = widgets.HTML()
        self.check.on_click(lambda _button: self._check())
        self.choices.observe(lambda _change: setattr(self.result, "value", ""), names="value")
        for part, name in ((self.choices, "choices"), (self.check, "check"), (self.result, "result")):
            part.add_class(f"agentlab-quiz-{name}")  # what a browser test finds them by
        ask = widgets.HTML(f"<b>Your turn.</b> {html.escape(q.ask)}")
        self._widget = widgets.VBox([ask, self.choices, widgets.HBox([self.check, self.result])])
        if self.answer is not None:
            letter = letter_of(self.answer)
            if letter in q.choices:
                self.choices.value = letter
            self._check(letter)

    def _check(self, letter: str | None = None) -> None:
        picked = letter if letter is not None else self.choices.value
        line = "Pick a choice first." if picked is None else verdict(self.question, picked)
        self.result.value = html.escape(line)
        if picked is not None and self.handle is not None:
            # the notebook keeps the verdict in the cell's text, as a typed answer would, for `progress`
            self.answer = picked
            self.handle.update(self)

    def _repr_mimebundle_(self, **kwargs) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text()
        return bundle


def _digest(quiz_id: str, letter: str) -> str:
    return hashlib.sha256(f"{quiz_id}:{letter_of(letter)}".encode()).hexdigest()[:16]


# --- a bare letter in a quiz cell ------------------------------------------------------------------

# quiz("02.x", b) or quiz("02.x", answer=B): a single bare letter as the answer, quoted before it runs.
_BARE_LETTER = re.compile(r"""(\bquiz\(\s*(['"])[\w.-]+\2\s*,\s*(?:answer\s*=\s*)?)([A-Za-z])(\s*\))""")


def quote_bare_letters(lines: list[str]) -> list[str]:
    """An IPython input transformer: a quiz call's bare letter becomes a string, so that typing b
    without quotes answers the quiz instead of raising NameError. Other code is left as it is."""
    source = "".join(lines)
    if "quiz(" not in source:
        return lines
    return _BARE_LETTER.sub(r'\1"\3"\4', source).splitlines(keepends=True)


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: no IPython installed
        return None
    return get_ipython()


def _install(shell: Any) -> None:
    """Register `quote_bare_letters` once in this IPython session."""
    if shell is not None and quote_bare_letters not in shell.input_transformers_post:
        shell.input_transformers_post.append(quote_bare_letters)


_install(_shell())
