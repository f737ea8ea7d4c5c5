"""The learners' release (`agentlab course release DIR`) is a course of its own: its README says
what a learner does, and every target of its Makefile works there (the instructor's `make test`
needs tests/, which a release does not have)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_docs_commands import link_venv

from agentlab.course.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("class") / "agentlab-class"
    assert main(["course", "release", str(target), "--root", str(ROOT)]) == 0
    return target


def test_the_release_has_the_learners_readme_and_makefile_not_the_instructors(released):
    readme = (released / "README.md").read_text()
    for part in ("make lab", "make check", "exercises/", "Handing in", "not written yet"):
        assert part in readme, part
    links = re.findall(r"\]\(([^)#]+)\)", readme) + re.findall(r"`((?:docs|solutions|tests)/[^`]*)`", readme)
    assert not [link for link in links if not (released / link).exists()]  # no link to what is not there
    assert "solutions/" not in readme and "teaching.md" not in readme and "make test" not in readme
    targets = re.findall(r"^([a-z-]+):", (released / "Makefile").read_text(), re.MULTILINE)
    assert set(targets) == {"setup", "lab", "check", "clean"}
    assert not (released / "agentlab" / "course" / "learner").exists()  # shipped once, at the top


needs_make = pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / ".venv" / ".installed").exists(),
    reason="needs make and a set-up .venv",
)


def make_in(released: Path, *args: str, **run) -> subprocess.CompletedProcess:
    """`make ARGS` in the release, on this kit's set-up .venv (linked in: no install in the test)."""
    if not (released / ".venv").exists():
        link_venv(released)
    env = {**os.environ, "PYTHONPATH": str(released), "AGENTLAB_BACKEND": "simulated"}
    env["ANTHROPIC_API_KEY"] = ""
    return subprocess.run(["make", "-o", ".venv/.installed", *args], cwd=released, env=env,
                          capture_output=True, text=True, timeout=240, **run)


@needs_make
def test_every_makefile_target_works_in_the_release(released):
    for target in ("setup", "lab", "clean"):  # planned from scratch: the commands exist and make accepts them
        planned = subprocess.run(["make", "-n", "-B", target], cwd=released, capture_output=True, text=True)
        assert planned.returncode == 0, planned.stderr
    assert "jupyter lab" in subprocess.run(["make", "-n", "-B", "lab"], cwd=released, capture_output=True,
                                           text=True).stdout
    done = make_in(released, "check", "NB=exercises/02_plans_are_dags.ipynb")
    assert done.returncode == 0, done.stderr  # feedback: make reports no error for a check not yet passed
    assert done.stdout.count("not written yet") == 3, done.stdout
    assert "Checking 02.critical-path" in done.stdout and "Traceback" not in done.stdout + done.stderr
    assert "Some checks did not pass yet" in done.stdout
    wrong = make_in(released, "check", "NB=exercises/99_nothing.ipynb")
    assert wrong.returncode != 0 and "no exercise notebook at exercises/99_nothing.ipynb" in wrong.stderr


def test_a_release_inside_the_kit_is_refused_in_one_line(tmp_path, capsys):
    kit = tmp_path / "kit"
    shutil.copytree(ROOT / "exercises", kit / "exercises")
    (kit / "agentlab").mkdir()
    (kit / "notebooks").mkdir()
    assert main(["course", "release", str(kit / "notebooks" / "x"), "--root", str(kit)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "inside the kit" in err and str(kit) in err
    assert not (kit / "notebooks" / "x").exists()
