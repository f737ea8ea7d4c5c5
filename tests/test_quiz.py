"""The lessons' quizzes: a bank whose answers are right and out of sight, a text view that is the same
every time, a widget that works with clicks, and a letter understood however the learner types it."""

import json
import re
import sys
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agentlab.experiments import longest_winning_chain
from agentlab.plan import Plan, Step
from agentlab.quiz import QuizCard, QuizError, encode, question, quiz, verdict
from agentlab.quiz_bank import BANK
from agentlab.schedule import makespan, virtual_schedule

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("[01][0-9]_*.ipynb"))
CROSSOVER = question("06.crossover")


def right_letter(q):
    return next(letter for letter in q.choices if q.is_right(letter))


def right_choice(q):
    return q.choices[right_letter(q)]


@pytest.mark.parametrize("q", BANK, ids=lambda q: q.id)
def test_each_answer_is_exactly_one_of_its_choices_and_its_explanation_decodes(q):
    assert re.fullmatch(r"\d\d\.[a-z-]+", q.id)
    assert sum(q.is_right(letter) for letter in q.choices) == 1
    why = q.explanation()
    assert len(why) > 30 and why.endswith(".") and why not in q.ask
    assert encode(q.id, q.ask, q.choices, right_letter(q), why) == q  # the entry is what encode makes


def test_the_bank_has_one_quiz_per_lesson_with_unique_ids():
    assert [q.id[:2] for q in BANK] == [f"{n:02d}" for n in range(1, 13)]
    assert len({q.id for q in BANK}) == len(BANK)


def test_the_answers_the_kit_can_compute_agree_with_the_bank():
    assert right_choice(question("01.chain-of-four")) == f"{0.9**4:.0%}"
    plan = Plan(
        [
            Step("s1", "researcher", "a", duration=3),
            Step("s2", "researcher", "b", duration=2),
            Step("s3", "critic", "c", ("s1",), duration=1),
            Step("s4", "writer", "d", ("s1", "s2", "s3"), duration=2),
        ]
    )
    slots = virtual_schedule(plan, {s.id: s.duration for s in plan}, workers=None)
    assert right_choice(question("02.makespan-floor")) == f"{makespan(slots):.0f} s"
    assert right_choice(CROSSOVER) == f"{longest_winning_chain(0.9, 0.5)} steps"


def test_unanswered_the_text_shows_the_question_and_asks_for_a_letter_the_same_every_time(capsys):
    quiz("06.crossover")
    first = capsys.readouterr().out
    quiz("06.crossover")
    assert capsys.readouterr().out == first == QuizCard(CROSSOVER).text() + "\n"
    assert first.splitlines() == [
        CROSSOVER.ask,
        *(f"  ({k}) {v}" for k, v in CROSSOVER.choices.items()),
        'Your turn: put your letter in quiz("06.crossover", "?") and run this cell again '
        "(in JupyterLab: click a choice, then Check).",
    ]


@pytest.mark.parametrize("spelling", ["{}", "{U}", " {} ", "({U})", "'{}'", '"{U}"'])
def test_a_right_letter_in_any_spelling_says_why(spelling, capsys):
    letter = right_letter(CROSSOVER)
    quiz("06.crossover", spelling.format(letter, U=letter.upper()))
    assert capsys.readouterr().out.splitlines()[-1] == f"✓ ({letter}) is right: {CROSSOVER.explanation()}"


def test_a_wrong_letter_invites_another_try_and_gives_nothing_away():
    wrong = next(letter for letter in CROSSOVER.choices if not CROSSOVER.is_right(letter))
    line = verdict(CROSSOVER, wrong.upper())
    assert line == f"✗ not ({wrong}): think again, then try another choice."
    assert verdict(CROSSOVER, "d") == "'d' is not one of the choices: a, b, c."


def test_an_unknown_quiz_is_one_line_naming_the_lessons_quizzes():
    with pytest.raises(QuizError) as caught:
        quiz("06.crossovr")
    assert str(caught.value) == "no quiz '06.crossovr'; the bank has 06.crossover"
    assert len(caught.value._render_traceback_()) == 1


def test_the_widget_checks_a_click_says_try_again_and_shows_why_only_when_right():
    card = QuizCard(CROSSOVER)
    assert card.widget is not None  # built as Jupyter would display it
    card.check.click()
    assert card.result.value == "Pick a choice first."
    wrong = next(letter for letter in CROSSOVER.choices if not CROSSOVER.is_right(letter))
    card.choices.value = wrong
    card.check.click()
    assert card.result.value.startswith(f"✗ not ({wrong})") and "try another" in card.result.value
    card.choices.value = right_letter(CROSSOVER)
    assert card.result.value == ""  # a new choice clears the old verdict
    card.check.click()
    assert card.result.value.startswith("✓") and "crossover is 6" in card.result.value
    bundle = card._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and bundle["text/plain"] == card.text()


def test_a_widget_given_an_answer_shows_it_picked_and_judged():
    card = QuizCard(CROSSOVER, right_letter(CROSSOVER).upper())
    assert card.widget is not None and card.choices.value == right_letter(CROSSOVER)
    assert card.result.value.startswith("✓")


class Shell(InteractiveShell):
    """IPython as the kernel runs it, keeping the traceback lines it would send to the browser."""

    def _showtraceback(self, etype, evalue, stb):
        self.shown = stb


@pytest.mark.parametrize("typed", ["{}", "{U}", "answer={U}", "answer = {}"])
def test_in_ipython_a_bare_letter_answers_the_quiz_instead_of_a_name_error(typed, capsys, monkeypatch):
    for name in ("agentlab.quiz", "agentlab.quiz_bank"):  # a fresh kernel: the import installs the reader
        monkeypatch.delitem(sys.modules, name)
    shell = Shell.instance()
    shell.shown = None
    try:
        shell.run_cell("from agentlab.quiz import quiz")
        letter = right_letter(CROSSOVER)
        result = shell.run_cell(f'quiz("06.crossover", {typed.format(letter, U=letter.upper())})')
        assert result.success and shell.shown is None
        assert capsys.readouterr().out.splitlines()[-1].startswith(f"✓ ({letter}) is right")
        assert shell.run_cell("b = 2\nb * 3").result == 6  # other code keeps its names
    finally:
        Shell.clear_instance()


def notebook_text(path):
    """A notebook's sources and stored outputs (and its widget state), its escapes decoded."""
    return json.dumps(json.loads(path.read_text(encoding="utf-8")), ensure_ascii=False)


SHIPPED = [
    *(ROOT / d / p.name for d in ("notebooks", "exercises", "solutions") for p in (ROOT / d).glob("*.ipynb")),
]


def test_no_notebook_and_no_kit_source_holds_a_quiz_answer_in_plain_text():
    texts = {p.relative_to(ROOT): notebook_text(p) for p in SHIPPED}
    texts |= {p.relative_to(ROOT): p.read_text(encoding="utf-8") for p in (ROOT / "agentlab").rglob("*.py")}
    texts |= {p.relative_to(ROOT): p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md")}
    for q in BANK:
        why = q.explanation()
        for path, text in texts.items():
            assert why[:40] not in text, f"{path} gives away the why of {q.id}"
    for path, text in texts.items():
        assert not re.search(r"\bquiz\([^)]*correct\s*=", text, re.S), f"{path} has a quiz with correct="


@pytest.mark.parametrize("lesson", LESSONS[1:], ids=lambda p: p.stem)
def test_each_lesson_asks_its_bank_quiz_unanswered_and_stores_the_question(lesson):
    cells = json.loads(lesson.read_text(encoding="utf-8"))["cells"]
    asked = [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith("quiz(")]
    assert len(asked) == 1
    quiz_id = f"{lesson.name[:2]}.{question_ids()[lesson.name[:2]]}"
    assert "".join(asked[0]["source"]) == f'quiz("{quiz_id}")'
    shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in asked[0]["outputs"])
    assert shown == QuizCard(question(quiz_id)).text()


def question_ids():
    return {q.id[:2]: q.id[3:] for q in BANK}


def test_a_check_in_jupyter_updates_the_cells_text_so_the_saved_notebook_shows_the_verdict():
    class Handle:  # what IPython's display(..., display_id=True) returns
        def update(self, card):
            self.shown = card._repr_mimebundle_()["text/plain"]

    card = QuizCard(CROSSOVER)
    card.handle = Handle()
    card.widget.children  # noqa: B018 (built as Jupyter would display it)
    card.choices.value = right_letter(CROSSOVER)
    card.check.click()
    assert card.handle.shown.splitlines()[-1].startswith(f"✓ ({right_letter(CROSSOVER)}) is right")
