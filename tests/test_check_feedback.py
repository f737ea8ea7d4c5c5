"""What a learner sees when a check fails or is not written yet: the verdict and the hint, then one
short error line, not the checker's traceback. IPython renders a cell's error from the exception's
`_render_traceback_`; an InteractiveShell runs the cell here as the Jupyter kernel would."""

import json

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agentlab.course.checks import LOG_VARIABLE, REGISTRY, STUB_MESSAGE, Case, attempt, exercise


class Shell(InteractiveShell):
    """IPython as the kernel runs it, keeping the traceback lines it would send to the browser."""

    def _showtraceback(self, etype, evalue, stb):
        self.shown = stb


@pytest.fixture
def shell():
    @exercise("99.double", "Double a number", hint="add the number to itself")
    def cases(double):
        for x in (2, 5):
            got, error = attempt(double, x)
            yield Case(f"double({x})", got == 2 * x, error or f"got {got!r}")

    sh = Shell()
    sh.run_cell("from agentlab.course.checks import check")
    yield sh
    Shell.clear_instance()
    del REGISTRY["99.double"]


def run(shell, code):
    shell.shown = None
    result = shell.run_cell(code)
    return result, shell.shown


def test_a_failing_check_shows_its_verdict_and_hint_then_one_line(shell, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(LOG_VARIABLE, str(tmp_path / "log"))
    result, shown = run(shell, "def double(x):\n    return x * x\ncheck('99.double', double)")
    out = capsys.readouterr().out
    assert "✓ double(2)" in out and "✗ double(5): got 25" in out
    assert not result.success  # the cell still fails: Run All goes on only past tagged cells
    assert len(shown) == 1 and "CheckFailed" in shown[0] and "Hint: add the number to itself" in shown[0]
    assert "checks/__init__.py" not in "".join(shown)
    records = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert records[-1]["status"] == "failed"  # the grader still records it


def test_an_unwritten_stub_says_so_then_one_line(shell, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(LOG_VARIABLE, str(tmp_path / "log"))
    code = (
        "def double(x):\n"
        "    raise NotImplementedError('Exercise: write this part, then run the cell again.')\n"
        "check('99.double', double)"
    )
    result, shown = run(shell, code)
    assert "not written yet" in capsys.readouterr().out
    assert isinstance(result.error_in_exec, NotImplementedError)
    assert len(shown) == 1
    assert shown[0].endswith("NotImplementedError\x1b[0m: " + STUB_MESSAGE)
    assert json.loads((tmp_path / "log").read_text().splitlines()[-1])["status"] == "not done"


def test_a_learners_own_bug_outside_the_check_keeps_its_traceback(shell, capsys):
    result, shown = run(shell, "def double(x):\n    return x / 0\ndouble(1)")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert len(shown) > 1  # where the learner's bug is matters; only the check's own error is shortened
