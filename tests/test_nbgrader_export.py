"""`agentlab course export nbgrader DIR`, used by real nbgrader: generate_assignment releases no
solutions and no hidden grading block, autograde gives an honest solved submission full marks and
takes exactly an exercise's points from a submission that gets it wrong, generate_feedback writes
the feedback. (nbgrader is the [nbgrader] extra; `make setup-test` installs it.)"""

import re
import warnings
from pathlib import Path

import nbformat
import pytest

from agentlab.course.checks import exercises_of
from agentlab.course.cli import main
from agentlab.course.nbgrader import BEGIN_HIDDEN, export, scores

KIT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "06_error_propagation"
WRONG = ("def longest_winning_chain", "def longest_winning_chain(p, q):\n    return 0\n")  # 06.crossover


def meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def test_every_notebook_exports_with_a_test_cell_and_points_per_exercise(tmp_path):
    written = export(KIT, tmp_path)
    assert (tmp_path / "nbgrader_config.py").exists()
    assert len(written) == len(list((KIT / "solutions").glob("[0-9][0-9]_*.ipynb")))
    for path in written:
        cells = nbformat.read(path, as_version=4).cells
        assert all(meta(c).get("schema_version") == 3 for c in cells)
        ids = [meta(c)["grade_id"] for c in cells]
        assert len(ids) == len(set(ids))
        tests = [c for c in cells if meta(c).get("grade")]
        assert all(meta(c)["locked"] and BEGIN_HIDDEN in c.source for c in tests)
        assert sum(meta(c)["points"] for c in tests) == len(exercises_of(path.stem[:2]))
        answers = [c for c in cells if meta(c).get("solution")]
        assert answers and all("BEGIN SOLUTION" in c.source and not meta(c)["locked"] for c in answers)
        others = [c for c in cells if c not in tests and c not in answers]
        assert all(meta(c)["locked"] for c in others)


def nbgrader(capfd, *args: str) -> None:
    """`nbgrader ARGS --force`, as the command runs it (its command line, then the nbgrader_config.py
    of the folder it runs in), in this process: nbgrader takes seconds to import, once here instead
    of once per step."""
    from jupyter_core.application import NoStart
    from nbgrader.apps.nbgraderapp import NbGraderApp
    from sqlalchemy.exc import SAWarning

    app = NbGraderApp.instance()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)  # nbgrader's own, about its gradebook's sessions
            app.initialize([*args, "--force"])
            app.start()
    except NoStart:  # how a command that is done says so (the nbgrader command ends there)
        pass
    except SystemExit as stop:  # how nbgrader's commands fail
        pytest.fail(f"nbgrader {args[0]} exited with {stop.code}:\n{capfd.readouterr().err[-3000:]}")
    finally:
        for each in (type(app.subapp or app), NbGraderApp):  # the next step is a new command
            each.clear_instance()
    err = capfd.readouterr().err
    assert not nbgraders_errors(err), err[-3000:]


def nbgraders_errors(err: str) -> list[str]:
    """The error lines nbgrader's own log wrote ("[AutogradeApp | ERROR] ..."). The kernels it starts
    write to the same stderr, and ipykernel sometimes logs a harmless ZMQ error as it shuts down
    ("ERROR:tornado.general:Uncaught exception in ZMQStream callback"): that is not nbgrader failing."""
    return re.findall(r"^\[\w+ \| (?:ERROR|CRITICAL)\].*$", err, re.M)


def test_only_nbgraders_own_error_lines_count_as_its_errors():
    kernel_noise = (
        "[IPKernelApp] WARNING | Kernel is running over TCP\n"
        "ERROR:tornado.general:Uncaught exception in ZMQStream callback\n"
    )
    assert nbgraders_errors("[AutogradeApp | INFO] Converting notebook x\n" + kernel_noise) == []
    failed = "[AutogradeApp | ERROR] There was an error processing assignment: x"
    assert nbgraders_errors(kernel_noise + failed + "\n") == [failed]


def submit(course: Path, student: str, wrong: tuple[str, str] | None = None) -> None:
    """The released notebook with the answer cells filled in: the solutions, one of them wrong if asked."""
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    answers = {meta(c)["grade_id"]: c.source for c in source.cells if meta(c).get("solution")}
    notebook = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in notebook.cells:
        if meta(cell).get("grade_id") in answers:
            cell.source = answers[meta(cell)["grade_id"]]
            if wrong and wrong[0] in cell.source:
                cell.source = wrong[1]
    path = course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(notebook, path)


# autograde's kernels on Unix sockets, as nbval's (kernel_sockets.py): no TCP port to lose as they start
ON_UNIX_SOCKETS = "--Execute.kernel_manager_class=kernel_sockets.AsyncUnixSocketKernelManager"


def alembic_head() -> str:
    """What nbgrader's gradebook asks `alembic heads` for as it creates its database (the
    newest revision of nbgrader's own migrations), read by alembic in this process: the command
    is a Python process of its own that imports SQLAlchemy and alembic, 2 CPU-s for one word."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def test_real_nbgrader_releases_autogrades_and_gives_feedback(tmp_path, monkeypatch, capfd):
    course = tmp_path / "course"
    assert main(["course", "export", "nbgrader", str(course), "06", "--root", str(KIT)]) == 0
    assert "06_error_propagation: 3 answer cells, 3 points" in capfd.readouterr().out
    monkeypatch.chdir(course)  # where nbgrader finds the course's nbgrader_config.py
    monkeypatch.setenv("AGENTLAB_BACKEND", "simulated")  # for the kernels autograde starts
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    monkeypatch.setattr("nbgrader.api.get_alembic_version", alembic_head)
    nbgrader(capfd, "generate_assignment", ASSIGNMENT)
    released = (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    solution = nbformat.read(KIT / "solutions" / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in solution.cells:  # no line of any solution region reaches the learner
        lines = cell.source.splitlines()
        if "# BEGIN SOLUTION" in lines:
            region = lines[lines.index("# BEGIN SOLUTION") + 1 : lines.index("# END SOLUTION")]
            assert not [line for line in region if line.strip() and line.strip() in released]
    assert "HIDDEN TESTS" not in released and "grade(" not in released and "BEGIN SOLUTION" not in released
    submit(course, "honest")
    submit(course, "wrong", WRONG)
    nbgrader(capfd, "autograde", ASSIGNMENT, ON_UNIX_SOCKETS)
    assert scores(course, ASSIGNMENT) == {"honest": (3.0, 3.0), "wrong": (2.0, 3.0)}
    nbgrader(capfd, "generate_feedback", ASSIGNMENT)
    for student in ("honest", "wrong"):
        assert (course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()


def test_the_hidden_block_runs_the_instructors_grading_cases_too():
    from agentlab.course.hidden.nb01 import WHEN
    from agentlab.course.nbgrader import GradingFailed, grade

    grade("01.when-hierarchy", dict(WHEN))  # the key: passes
    wrong = {**WHEN, "p": "hierarchy"}  # well-formed, so only the instructor's key can tell
    with pytest.raises(GradingFailed, match="01.when-hierarchy: 1 of .* grading cases failed"):
        grade("01.when-hierarchy", wrong)
