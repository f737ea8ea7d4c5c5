"""One checkpoint path, two users: a second run is refused while the first is live, a reader
never disturbs the writer, and no run is lost to the other's files (issue 22)."""

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from agentlab.agents import Agent, Work
from agentlab.budget import Budget
from agentlab.checkpoint import CheckpointError, load
from agentlab.plan import Plan, Step
from agentlab.run import run_plan

TASK = "share the file"


def chain(n):
    return Plan([Step(f"s{i}", "a", f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, n + 1)])


def slow(seconds):
    def act(step, context):
        time.sleep(seconds)
        return Work(f"{step.id} " + "x" * 20_000)

    return {"a": Agent("a", act)}


def test_reading_a_checkpoint_never_deletes_another_writers_file(tmp_path):
    """`load` used to delete every `<name>.*.tmp`: a run writing its next save at that moment
    lost its file and crashed with FileNotFoundError (a second notebook polling the checkpoint)."""
    path = tmp_path / "run.json"
    run_plan(chain(3), slow(0), TASK, checkpoint=path)
    writing = tmp_path / "run.json.w9r1t1ng.tmp"  # a save under way, between mkstemp and os.replace
    writing.write_text('{"format": "agentlab-chec')
    assert len(load(path, TASK)["outputs"]) == 3
    assert writing.exists()


def test_a_second_run_on_a_path_in_use_is_refused_and_the_first_goes_on(tmp_path):
    path, go, results = tmp_path / "run.json", threading.Event(), {}

    def held(step, context):  # the first run waits in its first step until told to go on
        go.wait(30)
        return "ok"

    def first():
        results["first"] = run_plan(chain(5), {"a": Agent("a", held)}, TASK, checkpoint=path)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        for other in ("the same task", "another task"):  # a second writer, whatever it runs
            with pytest.raises(CheckpointError, match="in use by another run that is still going"):
                run_plan(chain(5), slow(0), TASK if other == "the same task" else other, checkpoint=path)
        assert len(load(path, TASK)["outputs"]) == 0  # a reader is welcome meanwhile
    finally:
        go.set()
        thread.join(30)
    assert results["first"].status == "done" and len(results["first"].outputs) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no lock or temporary file left
    assert run_plan(chain(5), slow(0), TASK, checkpoint=path, resume=True).status == "done"  # free again


def test_a_path_in_use_by_another_process_is_refused(tmp_path):
    path, started = tmp_path / "run.json", tmp_path / "started"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from agentlab.agents import Agent
        from agentlab.plan import Plan, Step
        def act(step, context):
            Path({str(started)!r}).touch()
            time.sleep(0.2)
            return "ok"
        plan = Plan([Step(f"s{{i}}", "a", "x", [f"s{{i - 1}}"] if i > 1 else []) for i in range(1, 30)])
        from agentlab.run import run_plan
        print(run_plan(plan, {{"a": Agent("a", act)}}, {TASK!r}, checkpoint={str(path)!r}).status)
    """)
    other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(CheckpointError, match="in use by another run"):
            run_plan(chain(3), slow(0), TASK, checkpoint=path)
    finally:
        other.kill()
        other.wait(10)
    assert run_plan(chain(3), slow(0), TASK, checkpoint=tmp_path / "mine.json").status == "done"
    # the killed process held the path; its death freed it
    assert run_plan(chain(3), slow(0), "another task", checkpoint=path).status == "done"


def test_a_checkpoint_edited_and_sealed_again_is_refused_not_resumed_as_a_forged_run(tmp_path):
    """A re-sealed edit (a fresh checksum) resumed as "done: 5/4 steps" with a forged deliverable."""
    import hashlib
    import json

    path = tmp_path / "run.json"
    run_plan(chain(4), slow(0), TASK, checkpoint=path)
    last_seal = json.loads(path.read_text().splitlines()[-1])["seal"]
    forged = {"outputs": {"s9": "forged"}}  # a record added by hand, sealed as the kit seals one
    canonical = json.dumps(forged, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    seal = hashlib.sha256((last_seal + canonical).encode()).hexdigest()
    with path.open("a") as f:
        f.write(json.dumps({"seal": seal, "state": forged}) + "\n")
    with pytest.raises(CheckpointError, match="an output for step 's9', which no plan of the run has"):
        run_plan(chain(4), slow(0), TASK, checkpoint=path, resume=True)


def test_a_finished_event_whose_output_is_not_there_is_refused(tmp_path):
    """A "finished" event leaves its output to `outputs` (saved once): one without it is forged."""
    import hashlib
    import json

    path = tmp_path / "run.json"
    run_plan(chain(2), slow(0), TASK, checkpoint=path, budget=Budget(calls=0))
    head, first, *_ = path.read_text().splitlines()
    state = json.loads(first)["state"]
    state["trace"].append([1.0, "finished", "s2", "a", ["s1"], None])
    canonical = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    seal = hashlib.sha256(canonical.encode()).hexdigest()
    path.write_text(head + "\n" + json.dumps({"seal": seal, "state": state}) + "\n")
    with pytest.raises(CheckpointError, match="step 's2' finished with an output it does not hold"):
        run_plan(chain(2), slow(0), TASK, checkpoint=path, resume=True)
