"""Checkpoints: saved after every step, resumed without redoing finished work or losing output,
even after the process was killed; a damaged or mismatched checkpoint is a clear error."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from agentlab import world
from agentlab.agents import Agent, Work, world_team
from agentlab.budget import Budget
from agentlab.checkpoint import VERSION, CheckpointError, load, save
from agentlab.faults import Fault
from agentlab.llm.base import Completion, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.recovery import Replan
from agentlab.run import orchestrate, run_plan

TASK = "count the steps"


class Counting:
    def __init__(self):
        self.tried = []

    def __call__(self, step, context):
        self.tried.append(step.id)
        out = f"{step.id}<{','.join(context.values())}>"
        return Work(out, seconds=1.0, calls=(Completion(out, "sim-large", "test", Usage(10, 5), 1.0),))


def chain(n=5):
    return Plan([Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, n + 1)])


def summary(run):
    return run.status, run.outputs, [(s, r, c.text) for s, r, c in run.calls], run.deliverable


def test_the_state_is_saved_after_every_step(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    saved = []
    real_save = save

    def spy(path, run, now):
        saved.append(sorted(run.outputs))
        real_save(path, run, now)

    monkeypatch.setattr("agentlab.checkpoint.save", spy)
    run_plan(chain(3), {"a": Agent("a", Counting())}, TASK, checkpoint=path)
    assert saved == [[], ["s1"], ["s1", "s2"], ["s1", "s2", "s3"], ["s1", "s2", "s3"]]  # start, 3 steps, end
    document = json.loads(path.read_text())
    assert document["version"] == VERSION and set(document["fingerprint"]) == {"task", "plan"}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left behind


def test_a_stopped_run_resumes_without_redoing_finished_steps(tmp_path):
    path = tmp_path / "run.json"
    first, second = Counting(), Counting()
    stopped = run_plan(chain(), {"a": Agent("a", first)}, TASK, checkpoint=path, budget=Budget(calls=2))
    assert stopped.status == "stopped" and first.tried == ["s1", "s2"]
    resumed = run_plan(chain(), {"a": Agent("a", second)}, TASK, checkpoint=path, resume=True)
    assert second.tried == ["s3", "s4", "s5"]  # the finished steps were not run again
    straight = run_plan(chain(), {"a": Agent("a", Counting())}, TASK)
    assert summary(resumed) == summary(straight)  # nothing lost: outputs and every call
    assert resumed.trace.of_kind("resumed")[0].detail == (
        "resumed from a checkpoint: 2 step(s) done, to do: s3, s4, s5"
    )
    assert resumed.elapsed == straight.elapsed  # the virtual clock carries on where it stopped


def test_resuming_a_finished_run_runs_nothing(tmp_path):
    path = tmp_path / "run.json"
    run_plan(chain(), {"a": Agent("a", Counting())}, TASK, checkpoint=path)
    again = Counting()
    run = run_plan(chain(), {"a": Agent("a", again)}, TASK, checkpoint=path, resume=True)
    assert run.status == "done" and again.tried == [] and len(run.outputs) == 5


def test_a_replanned_run_resumes_with_its_new_plan(tmp_path):
    path = tmp_path / "run.json"
    llm = SimulatedLLM()
    team = world_team(llm)
    task = world.sample_tasks()[1]
    options = dict(recovery=[Replan()], faults=[Fault(step="s2")], checkpoint=path)
    stopped = orchestrate(task.question, LLMPlanner(llm, team), team, budget=Budget(calls=2), **options)
    assert stopped.status == "stopped" and len(stopped.plans) == 2
    planner = LLMPlanner(llm, team)
    resumed = orchestrate(task.question, planner, team, resume=True, **options)
    assert planner.calls == []  # the plan came from the checkpoint, not from a new planning call
    assert resumed.status == "done" and task.check(resumed.deliverable)
    assert resumed.plan.ids == stopped.plan.ids and resumed.calls[: len(stopped.calls)] == stopped.calls


SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from agentlab.agents import Agent, Work
    from agentlab.llm.base import Completion, Usage
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    log, path, nap = sys.argv[1], sys.argv[2], float(sys.argv[3])

    def act(step, context):
        with open(log, "a") as f:
            f.write(step.id + "\\n")
        time.sleep(nap)
        out = step.id + "<" + ",".join(context.values()) + ">"
        return Work(out, seconds=1.0, calls=(Completion(out, "sim-large", "test", Usage(10, 5), 1.0),))

    plan = Plan([Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, 9)])
    run = run_plan(plan, {"a": Agent("a", act)}, "count to eight", checkpoint=path, resume=True)
    calls = [c.text for _, _, c in run.calls]
    print(json.dumps({"status": run.status, "outputs": run.outputs, "calls": calls}))
    """
)


def test_a_killed_process_resumes_from_its_checkpoint(tmp_path):
    script, log, path = tmp_path / "job.py", tmp_path / "log.txt", tmp_path / "run.json"
    script.write_text(SCRIPT)
    command = [sys.executable, str(script), str(log), str(path)]
    victim = subprocess.Popen(command + ["0.25"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    done_before = []
    while time.monotonic() < deadline and len(done_before) < 3:
        time.sleep(0.02)
        try:
            done_before = list(json.loads(path.read_text())["state"]["outputs"])
        except (FileNotFoundError, json.JSONDecodeError):
            continue  # not there yet (it is never half-written: the rename is atomic)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    assert victim.returncode == -signal.SIGKILL and len(done_before) >= 3
    done_before = list(load(path, "count to eight")["outputs"])  # what survived the kill
    started_before = log.read_text().split()

    finished = subprocess.run(command + ["0"], capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(finished.stdout)
    assert result["status"] == "done"
    expected = {
        f"s{i}": f"s{i}<" + (f"{result['outputs'][f's{i - 1}']}" if i > 1 else "") + ">" for i in range(1, 9)
    }
    assert result["outputs"] == expected  # every output, none lost
    assert result["calls"] == [expected[f"s{i}"] for i in range(1, 9)]  # each step's call counted once
    rerun = log.read_text().split()[len(started_before) :]
    assert not set(rerun) & set(done_before)  # nothing finished before the kill ran again
    assert rerun == [f"s{i}" for i in range(len(done_before) + 1, 9)]


# --- refusing what cannot be resumed ---------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "run.json"
    run_plan(chain(), {"a": Agent("a", Counting())}, TASK, checkpoint=path, budget=Budget(calls=2))
    return path


def resume(path, plan=None, task=TASK):
    return run_plan(plan or chain(), {"a": Agent("a", Counting())}, task, checkpoint=path, resume=True)


def test_a_checkpoint_for_another_task_or_plan_is_refused(saved):
    with pytest.raises(CheckpointError, match="run.json belongs to a different task .'count the steps'."):
        resume(saved, task="count the sheep")
    with pytest.raises(CheckpointError, match="run.json belongs to a different plan"):
        resume(saved, plan=chain(4))


def test_a_truncated_checkpoint_is_refused(saved):
    saved.write_text(saved.read_text()[:200])
    with pytest.raises(CheckpointError, match=r"run.json is damaged: not valid JSON .*delete it to start"):
        resume(saved)


def test_an_edited_checkpoint_fails_its_checksum(saved):
    document = json.loads(saved.read_text())
    document["state"]["outputs"]["s1"] = "something else"
    saved.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match="does not match its checksum"):
        resume(saved)


def test_another_version_or_another_file_is_refused(saved):
    document = json.loads(saved.read_text())
    saved.write_text(json.dumps(dict(document, version=VERSION + 1)))
    with pytest.raises(
        CheckpointError, match=f"format version {VERSION + 1}; this kit reads version {VERSION}"
    ):
        resume(saved)
    saved.write_text(json.dumps({"steps": []}))
    with pytest.raises(CheckpointError, match="run.json is not an agentlab checkpoint"):
        resume(saved)


class HandOver:
    """A planner whose new plan gives the rest of the work to role "b"."""

    calls = ()

    def replan(self, task, plan, outputs, failure):
        return Plan([Step("s1", "b", "nearly"), Step("s2", "b", "finish", ["s1"])])


def test_a_checkpoint_for_another_team_is_refused(tmp_path):
    path = tmp_path / "run.json"
    team = {"a": Agent("a", Counting()), "b": Agent("b", Counting())}
    options = dict(checkpoint=path, recovery=[Replan(HandOver())], faults=[Fault(step="s3")])
    assert run_plan(chain(), team, TASK, budget=Budget(calls=3), **options).status == "stopped"
    with pytest.raises(
        CheckpointError, match="cannot be resumed: PlanError: step 'r1_s1' has unknown role 'b'"
    ):
        run_plan(chain(), {"a": team["a"]}, TASK, resume=True, **options)


def test_a_failed_write_leaves_the_last_checkpoint_whole(saved, monkeypatch):
    before = saved.read_text()

    def disk_full(src, dst):
        raise OSError("No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(OSError, match="No space left"):
        run_plan(chain(), {"a": Agent("a", Counting())}, TASK, checkpoint=saved)
    assert saved.read_text() == before and [p.name for p in saved.parent.iterdir()] == ["run.json"]


def test_resume_needs_a_file_and_calls_must_be_storable(tmp_path):
    with pytest.raises(ValueError, match="resume=True needs the checkpoint file"):
        run_plan(chain(), {"a": Agent("a", Counting())}, TASK, resume=True)
    odd = Agent("a", lambda step, context: Work("ok", calls=(object(),)))
    with pytest.raises(CheckpointError, match="cannot checkpoint a call of type object"):
        run_plan(chain(1), {"a": odd}, TASK, checkpoint=tmp_path / "x.json")
