"""The `agentlab` command in a terminal."""

import json

import pytest

from agentlab.course.cli import main


def test_demo_prints_the_decomposed_run_and_the_simple_run(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    decomposed, simple = out.split("=== a simple task (one agent is enough) ===")
    assert "Plan with 4 step(s):" in decomposed and "Deliverable: REPORT" in decomposed
    assert "Plan with 1 step(s):" in simple
    assert "done: 1/1 steps in 2.0 s (virtual)" in simple


def test_doctor_reports_versions_and_the_backend(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for name in ("jupyterlab", "ipywidgets", "anthropic", "networkx", "matplotlib", "jsonschema", "numpy"):
        assert f"  {name} " in out
    for name in ("dask", "distributed"):  # every dependency pyproject.toml declares, no fixed list
        assert f"  {name} " in out
    assert "pytest" not in out  # test tools are not the course's
    assert "Backend: simulated" in out and "Ready for the course." in out


def test_an_unknown_command_exits_with_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["fly"])
    assert exit.value.code == 2
    assert "invalid choice: 'fly'" in capsys.readouterr().err


def test_grade_needs_notebooks_and_a_positive_timeout(capsys):
    assert main(["course", "grade"]) == 2
    assert "name the learners' notebooks to grade" in capsys.readouterr().err
    assert main(["course", "grade", "alice/06_error_propagation.ipynb", "--timeout", "0"]) == 2
    assert "--timeout must be a positive number of seconds" in capsys.readouterr().err


def test_grade_writes_json_to_stdout_alone_when_asked(capsys):
    assert (
        main(["course", "grade", "nobody/06_error_propagation.ipynb", "--json", "-", "--results", "-"]) == 1
    )
    report = json.loads(capsys.readouterr().out)  # nothing but the JSON
    assert report["notebooks"][0]["broken"] == "no such file"
    assert report["learners"] == {"nobody": {"passed": 0, "exercises": 3}}
