"""`agentlab doctor` says "Ready for the course." only when the configured backend would answer: the
endpoint answers over real HTTP and, with a key, lists the models the kit is configured to use."""

import socket

import pytest

from agentlab.course.cli import main
from agentlab.llm.serve import start_server


@pytest.fixture
def claude_env(monkeypatch):
    for name in ("AGENTLAB_BACKEND", "AGENTLAB_PLANNER_MODEL", "AGENTLAB_EXECUTOR_MODEL", "AGENTLAB_RECORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENTLAB_BACKEND", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "any-key")
    return monkeypatch


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_ready_when_the_server_answers_and_lists_the_configured_models(claude_env, capsys):
    with start_server() as server:
        claude_env.setenv("ANTHROPIC_BASE_URL", server.url)
        assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert f"{server.url} answers and lists the planner's and the executor's models" in out
    assert out.rstrip().endswith("Ready for the course.")


def test_not_ready_when_nothing_answers_at_the_configured_address(claude_env, capsys):
    url = f"http://127.0.0.1:{closed_port()}"
    claude_env.setenv("ANTHROPIC_BASE_URL", url)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "Ready for the course." not in out
    assert f"Not ready: nothing answers at {url}" in out and "ANTHROPIC_BASE_URL" in out


def test_not_ready_when_a_configured_model_is_not_listed(claude_env, capsys):
    claude_env.setenv("AGENTLAB_PLANNER_MODEL", "claude-nonesuch-1")
    with start_server() as server:
        claude_env.setenv("ANTHROPIC_BASE_URL", server.url)
        assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "Not ready: the server does not list the planner's model claude-nonesuch-1" in out
    assert "AGENTLAB_PLANNER_MODEL" in out and "the nearest it lists is " in out


def test_a_retired_model_id_is_named_with_the_nearest_listed_one(claude_env, capsys):
    claude_env.setenv("AGENTLAB_PLANNER_MODEL", "claude-opus-5-4")  # retired; the server lists 5-5
    with start_server() as server:
        claude_env.setenv("ANTHROPIC_BASE_URL", server.url)
        assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "does not list the planner's model claude-opus-5-4 (the nearest it lists is claude-opus-5-5" in out


def test_not_ready_when_the_server_refuses_the_key(claude_env, capsys):
    with start_server(api_key="the-right-key") as server:
        claude_env.setenv("ANTHROPIC_BASE_URL", server.url)
        assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"Not ready: {server.url} refused the key (401)" in out and "any-key" not in out


def test_a_replay_without_its_recording_is_not_ready(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AGENTLAB_BACKEND", "replay")
    monkeypatch.setenv("AGENTLAB_REPLAY", str(tmp_path / "none.jsonl"))
    assert main(["doctor"]) == 1
    assert "Not ready: no recording at" in capsys.readouterr().out
