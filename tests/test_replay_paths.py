"""AGENTLAB_RECORD and AGENTLAB_REPLAY name a file relative to where the command was typed.

A kernel runs in its notebook's folder (notebooks/), so `AGENTLAB_RECORD=recordings/03.jsonl jupyter
nbconvert --execute notebooks/03_llm_planner.ipynb`, typed at the kit's root, used to look for
notebooks/recordings/: "could not record the call to recordings/03.jsonl", even after `mkdir
recordings`. The kernel inherits the shell's PWD, the folder the command was typed in."""

import pytest

from agentlab.llm import describe_backend, make_llm
from agentlab.llm.base import ModelError
from agentlab.llm.replay import RecordingLLM
from agentlab.llm.simulated import SimulatedLLM


def ask(llm, text="What is the capital of Kelloway?"):
    return llm.complete(system="You answer.", messages=[{"role": "user", "content": text}], max_tokens=50)


@pytest.fixture
def in_a_kernel(tmp_path, monkeypatch):
    """The shell typed the command at tmp_path; the kernel runs in tmp_path/notebooks."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "recordings").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    return tmp_path


def test_a_recording_goes_where_the_command_was_typed_and_a_replay_reads_it_there(in_a_kernel):
    root = in_a_kernel
    shell = {"PWD": str(root), "AGENTLAB_BACKEND": "simulated", "AGENTLAB_RECORD": "recordings/03.jsonl"}
    said = ask(make_llm(env=shell))
    assert (root / "recordings" / "03.jsonl").exists()
    assert not (root / "notebooks" / "recordings").exists()
    shell = {"PWD": str(root), "AGENTLAB_BACKEND": "replay", "AGENTLAB_REPLAY": "recordings/03.jsonl"}
    replay = make_llm(env=shell)
    assert ask(replay).text == said.text
    described = describe_backend({"PWD": str(root), "AGENTLAB_BACKEND": "replay",
                                  "AGENTLAB_REPLAY": "recordings/03.jsonl"})
    assert f"replay of {root / 'recordings' / '03.jsonl'} (offline; 1 recorded calls" in described


def test_a_missing_recording_names_the_folder_it_looked_in(in_a_kernel):
    root = in_a_kernel
    env = {"PWD": str(root), "AGENTLAB_BACKEND": "replay", "AGENTLAB_REPLAY": "recordings/04.jsonl"}
    with pytest.raises(FileNotFoundError) as missing:
        make_llm(env=env)
    said = str(missing.value)
    assert f"no recording at {root / 'recordings' / '04.jsonl'}" in said
    assert "where the command was typed" in said
    missing = root / "recordings" / "04.jsonl"
    assert describe_backend(env).endswith(f"replay of {missing}, which does not exist.")


def test_a_recorder_that_cannot_write_names_the_whole_path(in_a_kernel):
    root = in_a_kernel
    env = {"PWD": str(root), "AGENTLAB_BACKEND": "simulated", "AGENTLAB_RECORD": "nowhere/03.jsonl"}
    with pytest.raises(ModelError, match=f"could not record the call to {root / 'nowhere' / '03.jsonl'}"):
        ask(make_llm(env=env))


def test_without_a_shell_folder_a_path_is_the_processs_own_and_absolute_paths_stay(in_a_kernel, tmp_path):
    llm = make_llm(env={"AGENTLAB_BACKEND": "simulated", "AGENTLAB_RECORD": "here.jsonl"})
    ask(llm)
    assert (in_a_kernel / "notebooks" / "here.jsonl").exists()
    elsewhere = tmp_path / "elsewhere.jsonl"
    ask(make_llm(env={"PWD": str(in_a_kernel), "AGENTLAB_BACKEND": "simulated",
                      "AGENTLAB_RECORD": str(elsewhere)}))
    assert elsewhere.exists()
    assert RecordingLLM(SimulatedLLM(), "x.jsonl").path == in_a_kernel / "notebooks" / "x.jsonl"
