"""`agentlab run "<task>"`: a world task planned and solved from the terminal."""

from agentlab import world
from agentlab.course.cli import main

TASK = "What is the age of the governor of the home island of Jory Pike?"


def test_run_prints_the_backend_plan_trace_usage_and_verdict(capsys):
    assert main(["run", TASK]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Backend: simulated")
    assert f"Task: {TASK}" in out and "Plan with 4 step(s):" in out
    assert "finished  s4    writer" in out and "done: 4/4 steps" in out
    assert "  planner " in out and "sim-large" in out and "total" in out
    assert f"Deliverable: {world.gold_answer(TASK)}" in out
    assert (
        f"Gold answer (from the records): {world.gold_answer(TASK)} -> the team's answer is correct." in out
    )


def test_agents_only_gives_every_step_to_a_model_and_workers_run_steps_at_once(capsys):
    task = "What is the total crew of Moth Queen, Tidewalker and Grey Gannet?"
    assert main(["run", task, "--agents-only", "--workers", "3"]) == 0
    out = capsys.readouterr().out
    assert "  researcher " in out and "  analyst " in out and "3 workers" in out
    assert "the team's answer is correct" in out


def test_samples_lists_tasks_of_every_shape(capsys):
    assert main(["run", "--samples"]) == 0
    out = capsys.readouterr().out
    for task in world.sample_tasks():
        assert task.question in out
    assert main(["run"]) == 2  # no task: the samples, and a usage hint
    assert 'agentlab run "<task>"' in capsys.readouterr().out


def test_errors_can_be_injected_and_a_planning_failure_exits_1_with_the_reason(capsys):
    assert main(["run", TASK, "--error-rate", "1", "--errors", "malformed_json"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("rejected plan: the plan is not valid JSON") == 3
    assert "Planning failed: no valid plan after 3 attempt(s)" in captured.err


def test_a_failing_step_exits_1_and_a_wrong_answer_is_called_wrong(capsys):
    codes = [main(["run", TASK, "--seed", str(seed), "--error-rate", "0.5"]) for seed in range(6)]
    out = capsys.readouterr().out
    assert 1 in codes and "WRONG" in out


def test_a_question_outside_the_world_has_no_gold_answer(capsys):
    assert main(["run", "Tell me about the Salt Guild."]) == 0
    assert "no gold answer" in capsys.readouterr().out


def test_bad_simulator_options_are_refused(capsys, monkeypatch):
    assert main(["run", TASK, "--errors", "typo"]) == 2
    assert "unknown error kind(s) ['typo']" in capsys.readouterr().err
    monkeypatch.setenv("AGENTLAB_BACKEND", "anthropic")
    assert main(["run", TASK, "--error-rate", "0.1"]) == 2
    assert "apply to the simulated backend only" in capsys.readouterr().err
