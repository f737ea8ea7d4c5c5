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


def test_grade_takes_its_options_before_the_notebooks(tmp_path, capsys, monkeypatch):
    """`agentlab course grade --fresh --csv grades.csv FILES...`: options first, as usual."""
    monkeypatch.chdir(tmp_path)
    argv = ["course", "grade", "--fresh", "--results", "-", "--csv", "grades.csv",
            "nobody/06_error_propagation.ipynb", "else/06_error_propagation.ipynb"]
    assert main(argv) == 1
    rows = (tmp_path / "grades.csv").read_text().splitlines()
    assert sum("nobody" in row for row in rows) == 3 and sum("else" in row for row in rows) == 3
    assert "unrecognized" not in capsys.readouterr().err


def test_options_mixed_with_notebooks_and_an_unknown_option_is_still_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["course", "grade", "a/06_error_propagation.ipynb", "--json", "-", "b/06_error_propagation.ipynb",
            "--results", "-"]
    assert main(argv) == 1
    assert len(json.loads(capsys.readouterr().out)["notebooks"]) == 2
    with pytest.raises(SystemExit) as exit:
        main(["course", "grade", "--fly", "a/06_error_propagation.ipynb"])
    assert exit.value.code == 2 and "unrecognized arguments: --fly" in capsys.readouterr().err


def test_export_outside_the_kit_says_where_it_looked_and_how_to_point_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["course", "export", "nbgrader", "course"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(tmp_path / "solutions") in err and "--root" in err
    assert not (tmp_path / "course").exists()
