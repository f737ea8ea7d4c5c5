"""The environment picks the backend; one line says which, and never shows the key."""

import pytest

from agentlab.llm import AnthropicLLM, Completion, SimulatedLLM, Usage
from agentlab.llm.backend import choose_backend, describe_backend, make_llm
from agentlab.llm.replay import RecordingLLM, ReplayLLM

SECRET = "sk-ant-api03-DO-NOT-PRINT-ME-0123456789"


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, "simulated"),
        ({"ANTHROPIC_API_KEY": SECRET}, "anthropic"),
        ({"ANTHROPIC_API_KEY": "  "}, "simulated"),
        (
            {"AGENTLAB_BACKEND": "simulated", "ANTHROPIC_API_KEY": SECRET},
            "simulated",
        ),  # the explicit choice wins
        ({"AGENTLAB_BACKEND": "Anthropic"}, "anthropic"),
        ({"AGENTLAB_BACKEND": "replay", "ANTHROPIC_API_KEY": SECRET}, "replay"),
    ],
)
def test_the_backend_comes_from_the_environment(env, expected):
    assert choose_backend(env) == expected


def test_an_unknown_backend_is_a_clear_error():
    with pytest.raises(
        ValueError, match=r"AGENTLAB_BACKEND='gpt' is not one of \('simulated', 'anthropic', 'replay'\)"
    ):
        choose_backend({"AGENTLAB_BACKEND": "gpt"})
    with pytest.raises(ValueError, match="unknown backend 'gpt'"):
        make_llm("gpt", env={})


def test_the_simulated_line_is_unchanged_for_existing_notebooks():
    assert describe_backend({}) == "Backend: simulated (offline, deterministic; no key needed)."


def test_the_claude_line_names_the_models_and_never_the_key():
    line = describe_backend({"ANTHROPIC_API_KEY": SECRET, "AGENTLAB_EXECUTOR_MODEL": "claude-sonnet-5-5"})
    assert line == (
        "Backend: anthropic (Claude via the official SDK): "
        "planner claude-opus-5-5, executor claude-sonnet-5-5."
    )
    assert SECRET not in line and "sk-ant" not in line


def test_the_claude_line_warns_when_no_key_is_set_and_names_a_local_server():
    assert describe_backend({"AGENTLAB_BACKEND": "anthropic"}).endswith(
        "; no ANTHROPIC_API_KEY is set, so calls will fail."
    )
    local = {"AGENTLAB_BACKEND": "anthropic", "ANTHROPIC_BASE_URL": "http://localhost:11434"}
    assert describe_backend(local).endswith(", server http://localhost:11434.")


def test_make_llm_builds_claude_with_the_models_the_environment_names():
    llm = make_llm(env={"ANTHROPIC_API_KEY": SECRET, "AGENTLAB_PLANNER_MODEL": "claude-fable-5-2"})
    assert isinstance(llm, AnthropicLLM)
    assert (llm.planner_model, llm.executor_model) == ("claude-fable-5-2", "claude-haiku-5-5")
    assert llm._client is None  # nothing contacted yet
    assert make_llm("anthropic", env={}, planner_model="mine").planner_model == "mine"  # arguments win


def recording(tmp_path):
    """A one-call recording, made by wrapping a tiny stand-in model."""

    class Echo:
        backend = "echo"

        def complete(self, *, system, messages, tools=(), schema=None, model=None, max_tokens=1024):
            return Completion("hello", "echo-1", self.backend, Usage(3, 1))

    path = tmp_path / "calls.jsonl"
    RecordingLLM(Echo(), path).complete(system="s", messages=[{"role": "user", "content": "hi"}])
    return path


def test_replay_is_chosen_by_the_environment_and_described_with_its_recording(tmp_path):
    path = recording(tmp_path)
    env = {"AGENTLAB_BACKEND": "replay", "AGENTLAB_REPLAY": str(path)}
    llm = make_llm(env=env)
    assert isinstance(llm, ReplayLLM)
    assert llm.complete(system="s", messages=[{"role": "user", "content": "hi"}]).text == "hello"
    assert describe_backend(env) == f"Backend: replay of {path} (offline; 1 recorded calls; no key needed)."


def test_replay_without_a_recording_says_what_to_set(tmp_path):
    with pytest.raises(ValueError, match="set AGENTLAB_REPLAY=path/to/calls.jsonl"):
        make_llm(env={"AGENTLAB_BACKEND": "replay"})
    missing = tmp_path / "nope.jsonl"
    assert describe_backend({"AGENTLAB_BACKEND": "replay", "AGENTLAB_REPLAY": str(missing)}).endswith(
        "which does not exist."
    )


def test_agentlab_record_wraps_the_chosen_backend_in_a_recorder(tmp_path):
    target = tmp_path / "rec.jsonl"
    env = {"ANTHROPIC_API_KEY": SECRET, "AGENTLAB_RECORD": str(target)}
    llm = make_llm(env=env)
    assert isinstance(llm, RecordingLLM) and isinstance(llm.llm, AnthropicLLM) and llm.backend == "anthropic"
    assert describe_backend(env).endswith(f" Recording every call to {target}.")


def test_the_simulator_is_the_default_build_and_takes_its_options():
    llm = make_llm(env={}, seed=3, error_rate=0.1)
    assert isinstance(llm, SimulatedLLM) and (llm.seed, llm.error_rate) == (3, 0.1)
    assert isinstance(make_llm("simulated", env={"ANTHROPIC_API_KEY": SECRET}), SimulatedLLM)
