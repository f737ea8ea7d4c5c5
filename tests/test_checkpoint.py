"""Checkpoints: saved after every step, resumed without redoing finished work or losing output,
even after the process was killed; a damaged or mismatched checkpoint is a clear error."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from agentlab import world
from agentlab.agents import Agent, Work, world_team
from agentlab.budget import Budget
from agentlab.checkpoint import SYNC_SECONDS, VERSION, CheckpointError, load, save
from agentlab.checkpoint_shape import canonical, canonical_utf8
from agentlab.faults import Fault
from agentlab.llm.base import Completion, ToolCall, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.recovery import Replan
from agentlab.run import orchestrate, run_plan
from agentlab.trace import Run

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


# The file, as a tool that reads or writes checkpoints sees it: a head line, then one record a save.


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def whole(path):
    """The head, and the state its records add up to: lists grow, maps gain entries, the rest is replaced."""
    head, *records = lines(path)
    state = {}
    for record in records:
        for name, value in record["state"].items():
            if name in ("plans", "calls", "trace", "slots", "failures") and name in state:
                state[name] += value
            elif name in ("outputs", "attempts", "used") and name in state:
                state[name].update(value)
            else:
                state[name] = value
    return head, state


def written(path, head, states):
    """Store `head` and one record a state, each sealed as the kit seals them: the checksum of the
    seal before and the state's canonical text."""
    out, seal = [json.dumps(head)], ""
    for state in states:
        text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        seal = hashlib.sha256((seal + text).encode("utf-8", "surrogatepass")).hexdigest()
        out.append(json.dumps({"seal": seal, "state": state}))
    path.write_text("\n".join(out) + "\n")


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
    head, *records = lines(path)
    assert head["version"] == VERSION and set(head["fingerprint"]) == {"task", "plan"}
    # the whole state first, then each save adds what changed: one step's output, the end
    assert [list(r["state"].get("outputs", "-")) for r in records] == [[], ["s1"], ["s2"], ["s3"], ["-"]]
    assert records[0]["state"]["plans"] and "plans" not in records[1]["state"]
    assert records[-1]["state"] == {"status": "done"}
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


def test_a_save_writes_what_changed_and_each_output_once(tmp_path):
    """Every save used to rewrite the whole run (40 steps x 200 KB: 12 s against 0.05 s without a
    checkpoint), and each output was in the file twice (in `outputs` and in its finished event)."""
    path, big = tmp_path / "run.json", 20_000
    team = {"a": Agent("a", lambda step, context: Work(step.id * (big // len(step.id))))}
    run = run_plan(chain(10), team, TASK, checkpoint=path)
    assert run.status == "done"
    head, *records = lines(path)
    assert len(records) == 12 and path.stat().st_size < 1.1 * 10 * big  # start, 10 steps, the end
    assert all(len(json.dumps(r)) < 1.1 * big for r in records)  # no record holds two outputs
    resumed = resume(path, chain(10))
    assert resumed.trace.of_kind("finished")[3].detail == run.outputs["s4"] == resumed.outputs["s4"]


def test_a_checkpoint_from_before_the_journal_still_resumes(saved):
    """Version 1 kept one JSON document, rewritten whole on every save."""
    head, state = whole(saved)
    for event in state["trace"]:
        event[5] = state["outputs"][event[2]] if event[5] is None else event[5]
    text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    document = dict(head, version=1, checksum=hashlib.sha256(text.encode()).hexdigest(), state=state)
    saved.write_text(json.dumps(document, indent=1))
    assert summary(resume(saved)) == summary(run_plan(chain(), {"a": Agent("a", Counting())}, TASK))
    assert lines(saved)[0]["version"] == VERSION  # saved again in today's format
    document["state"]["now"] += 1
    saved.write_text(json.dumps(document, indent=1))
    with pytest.raises(CheckpointError, match="run.json is damaged: its state does not match its checksum"):
        resume(saved)


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
    from agentlab.llm.base import Completion, ToolCall, Usage
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    log, path, nap = sys.argv[1], sys.argv[2], float(sys.argv[3])

    def act(step, context):
        with open(log, "a") as f:
            f.write(step.id + "\\n")
        if int(step.id[1:]) > 3:  # steps 1 to 3 finish at once; the kill comes during step 4's nap
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
    victim = subprocess.Popen(command + ["30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    done_before = []
    while time.monotonic() < deadline and len(done_before) < 3:
        time.sleep(0.02)
        try:
            done_before = list(load(path, "count to eight")["outputs"])
        except CheckpointError:
            continue  # not there yet (a record cut short by a write in progress is not read)
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


def test_a_checkpoint_cut_short_before_its_first_record_is_refused(saved):
    text = saved.read_text()
    saved.write_text(text[:50])  # inside the head
    with pytest.raises(CheckpointError, match=r"run.json is damaged: not valid JSON .*delete it to start"):
        resume(saved)
    saved.write_text(text[: text.index("\n") + 200])  # inside the first record
    with pytest.raises(CheckpointError, match=r"run.json is damaged: it ends before its first record"):
        resume(saved)


def test_a_save_killed_halfway_loses_only_that_save(tmp_path):
    """Each save adds a line; a kill while one is written leaves a last line with no end, which
    is left out: the run resumes from the save before, and the step of that save runs again."""
    path = tmp_path / "run.json"
    run_plan(chain(), {"a": Agent("a", Counting())}, TASK, checkpoint=path, budget=Budget(calls=3))
    text = path.read_text()
    added_s3 = text.rindex("\n", 0, text.index('"outputs":{"s3"')) + 1
    path.write_text(text[: added_s3 + 100])  # the save after s3, cut short
    assert sorted(load(path, TASK)["outputs"]) == ["s1", "s2"]
    second = Counting()
    resumed = run_plan(chain(), {"a": Agent("a", second)}, TASK, checkpoint=path, resume=True)
    assert second.tried == ["s3", "s4", "s5"]
    assert summary(resumed) == summary(run_plan(chain(), {"a": Agent("a", Counting())}, TASK))
    # the resumed run saves all it has at once, in a file of its own: the cut line is gone
    assert [list(r["state"].get("outputs", "-")) for r in lines(path)[1:]] == [
        ["s1", "s2"], ["s3"], ["s4"], ["s5"], ["-"]
    ]


def test_an_edited_checkpoint_fails_its_checksum(saved):
    head, *records = lines(saved)
    records[1]["state"]["outputs"]["s1"] = "something else"
    saved.write_text("".join(json.dumps(line) + "\n" for line in [head, *records]))
    with pytest.raises(CheckpointError, match="its record on line 3 does not match its checksum"):
        resume(saved)
    saved.write_text("".join(json.dumps(line) + "\n" for line in [head, *records[2:]]))  # one dropped
    with pytest.raises(CheckpointError, match="its record on line 2 does not match its checksum"):
        resume(saved)


def test_another_version_or_another_file_is_refused(saved):
    head, state = whole(saved)
    written(saved, dict(head, version=VERSION + 1), [state])
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

    monkeypatch.setattr(os, "replace", disk_full)  # a new run's first save: the whole state, in a new file
    agent = Counting()
    run = run_plan(chain(), {"a": Agent("a", agent)}, TASK, checkpoint=saved)  # raised OSError: the Run lost
    assert run.status == "stopped" and "checkpoint could not be saved (No space left" in run.reason
    assert agent.tried == []  # nothing ran unsaved
    assert saved.read_text() == before and [p.name for p in saved.parent.iterdir()] == ["run.json"]


def test_resume_needs_a_file_and_calls_must_be_storable(tmp_path):
    with pytest.raises(ValueError, match="resume=True needs the checkpoint file"):
        run_plan(chain(), {"a": Agent("a", Counting())}, TASK, resume=True)
    odd = Agent("a", lambda step, context: Work("ok", calls=(object(),)))
    with pytest.raises(CheckpointError, match="cannot checkpoint a call of type object"):
        run_plan(chain(1), {"a": odd}, TASK, checkpoint=tmp_path / "x.json")


# --- damaged files: always a CheckpointError that says what is wrong --------------------------------


def rewritten(path, edit):
    """Apply `edit` to the saved state and store it as one record with a matching seal, as a tool
    that writes checkpoints (or a careless hand) might: only the shape check can catch it."""
    head, state = whole(path)
    edit(state)
    written(path, head, [state])


def test_a_checkpoint_that_is_not_utf8_text_is_refused(saved):
    whole = saved.read_bytes()
    saved.write_bytes(b"\xff\xfe" + whole)
    with pytest.raises(CheckpointError, match=r"run.json is damaged: not UTF-8 text \(at byte 0\); delete"):
        resume(saved)
    saved.write_bytes("{\"task\": \"café".encode()[:-1])  # cut inside a character, as a kill can
    with pytest.raises(CheckpointError, match="run.json is damaged: not UTF-8 text"):
        resume(saved)


def test_a_directory_at_the_checkpoint_path_is_refused_before_anything_runs(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    agent = Counting()
    for again in (False, True):
        with pytest.raises(CheckpointError, match=r"path '.*checkpoints' is a directory; give a file, e\.g"):
            run_plan(chain(), {"a": Agent("a", agent)}, TASK, checkpoint=folder, resume=again)
    with pytest.raises(CheckpointError, match="is a directory"):
        orchestrate(TASK, lambda task: chain(), {"a": Agent("a", agent)}, checkpoint=folder, resume=True)
    assert agent.tried == [] and folder.is_dir()


WRONG_FIELDS = [
    ("outputs", lambda s: s["outputs"].update(s1=5), r"outputs/s1: 5 is not of type 'string'"),
    ("outputs", lambda s: s.update(outputs=["s1"]), r"outputs: \['s1'\] is not of type 'object'"),
    ("now", lambda s: s.update(now="3"), r"now: '3' is not of type 'number'"),
    ("now", lambda s: s.update(now=-1), r"now: -1 is less than the minimum of 0"),
    ("trace", lambda s: s["trace"][0].pop(), r"trace/0: .* is too short"),
    ("trace", lambda s: s["trace"][0].__setitem__(0, "0.0"), r"trace/0/0: '0.0' is not of type 'number'"),
    ("trace", lambda s: s["trace"][0].__setitem__(1, "exploded"), r"trace/0/1: 'exploded' is not one of"),
    ("slots", lambda s: s["slots"][0].__setitem__(1, "w0"), r"slots/0/1: 'w0' is not of type 'integer'"),
    ("attempts", lambda s: s["attempts"].update(s1="1"), r"attempts/s1: '1' is not of type 'integer'"),
    ("used", lambda s: s.update(used={"s1": 1}), r"used/s1: 1 is not of type 'object'"),
    ("replans", lambda s: s.update(replans=None), r"replans: None is not of type 'integer'"),
    ("calls", lambda s: s["calls"][0][2]["usage"].update(input_tokens="10"), r"calls/0/2"),
    ("calls", lambda s: s["calls"].append("a call"), r"calls/2: 'a call' is not of type 'array'"),
    ("failures", lambda s: s.update(failures=[["s1", "a", "meltdown", "x"]]), r"failures/0/2: 'meltdown'"),
    ("plans", lambda s: s.update(plans=[]), r"plans: \[\] should be non-empty"),
    ("task", lambda s: s.pop("task"), r"the state: 'task' is a required property"),
]


@pytest.mark.parametrize(
    "field, edit, said", WRONG_FIELDS, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG_FIELDS)]
)
def test_a_field_of_the_wrong_type_is_refused_naming_the_field(saved, field, edit, said):
    rewritten(saved, edit)
    with pytest.raises(CheckpointError, match=f"run.json is damaged: {said}"):
        resume(saved)


def test_numbers_no_run_could_have_saved_are_refused(saved):
    for number in ("NaN", "Infinity", "1e999", "1" * 5000):
        text = saved.read_text()
        now = json.dumps(lines(saved)[1]["state"]["now"])
        assert f'"now":{now},' in text
        saved.write_text(text.replace(f'"now":{now},', f'"now":{number},', 1))
        with pytest.raises(CheckpointError, match="run.json is damaged: "):
            resume(saved)
        saved.write_text(text)


def test_a_fingerprint_of_the_wrong_type_is_refused(saved):
    head, state = whole(saved)
    written(saved, dict(head, fingerprint="abc"), [state])
    with pytest.raises(CheckpointError, match="run.json is damaged: its fingerprint is not an object"):
        resume(saved)


def test_temporary_files_left_by_a_killed_write_are_removed_on_the_next_resume_or_save(saved):
    stray = saved.parent / "run.json.k1ll3d_x.tmp"  # what a kill between mkstemp and os.replace leaves
    mine = saved.parent / "run.json.notes.txt"
    for where in ("resume", "save"):
        stray.write_text('{"format": "agentlab-chec')
        mine.write_text("not the kit's")
        if where == "resume":
            resume(saved)
        else:
            run_plan(chain(), {"a": Agent("a", Counting())}, TASK, checkpoint=saved)
        assert sorted(p.name for p in saved.parent.iterdir()) == ["run.json", "run.json.notes.txt"]


def test_where_each_step_ran_is_saved_and_a_checkpoint_from_before_it_still_resumes(saved):
    here = f"{socket.gethostname()}:{os.getpid()}"
    stopped = saved.read_text()
    assert [slot[4] for slot in whole(saved)[1]["slots"]] == [here, here]
    resumed = resume(saved)
    assert resumed.status == "done" and [slot.where for slot in resumed.slots] == [here] * 5
    saved.write_text(stopped)
    rewritten(saved, lambda state: state.update(slots=[slot[:4] for slot in state["slots"]]))  # older
    resumed = resume(saved)
    assert resumed.status == "done" and [slot.where for slot in resumed.slots] == ["", ""] + [here] * 3
    rewritten(saved, lambda state: state["slots"][0].__setitem__(4, 7))
    with pytest.raises(CheckpointError, match="run.json is damaged: slots/0/4: 7 is not of type 'string'"):
        resume(saved)


def test_text_utf8_cannot_hold_is_checkpointed_and_resumed(tmp_path):
    """A lone surrogate in an output (a filename, a tool's text) used to raise UnicodeEncodeError
    out of run_plan with a checkpoint, and the Run was lost; without one the run was done."""
    name = b"notes-\xff.txt".decode("utf-8", "surrogateescape")

    def files(step, context):
        paid = Completion(f"saw {name}", "sim-large", "test", Usage(1, 1))
        return Work(f"{step.id} read {name}", calls=(paid,))

    path = tmp_path / "run.json"
    plain = run_plan(chain(3), {"a": Agent("a", files)}, TASK)
    saved = run_plan(chain(3), {"a": Agent("a", files)}, TASK, checkpoint=path)
    assert saved.status == plain.status == "done" and saved.outputs == plain.outputs
    resumed = resume(path, chain(3))
    assert resumed.outputs == plain.outputs
    assert [c for _, _, c in resumed.calls] == [c for _, _, c in plain.calls]
    path.read_bytes().decode("utf-8")  # still UTF-8 text


def test_a_resume_still_checks_the_shape_after_an_import_of_jsonschema_was_cut_short():
    """An exercise's time limit can interrupt the first, slow `import jsonschema` (seen on a loaded
    machine in 04.installments); the next import then finds `jsonschema.exceptions` loaded but not
    bound on the package, and every later resume failed with an AttributeError."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import builtins
        real = builtins.__import__
        def cut(name, *args, **kwargs):
            module = real(name, *args, **kwargs)
            if name == "jsonschema.validators":
                raise TimeoutError("the case's time limit")
            return module
        builtins.__import__ = cut
        try:
            import jsonschema
        except TimeoutError:
            pass
        builtins.__import__ = real
        from agentlab.checkpoint_shape import shape_problem
        print(shape_problem({"outputs": 3}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() and "AttributeError" not in done.stdout


# --- what a save costs, and what it keeps ----------------------------------------------------------

KEY = "sk-ant-api03-" + "Qw7_zX3-" * 12 + "BB"  # shaped like a real key, and not one
JWT = "eyJhbGciOiJIUzI1NiJ9." + "a1B2c3D4" * 200  # a token longer than the quick escape's threshold


def test_a_key_anywhere_in_a_saved_state_is_redacted_even_across_a_maps_key_and_value(tmp_path, monkeypatch):
    """The record is redacted as one text, so a credential split between a JSON key and its value
    ({"api_key": "..."}, in a plan's args or a model's tool call) is caught, long or short."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "correct-horse-battery-staple")
    asked = ToolCall("t1", "fetch", {"token": JWT, "note": f"use {KEY}"})

    def leaky(step, context):
        said = Completion("fetching", "sim-large", "test", Usage(3, 2), 1.0, tool_calls=(asked,))
        return Work(f"{step.id}: the server said correct-horse-battery-staple\n" * 200, calls=(said,))

    first = Step("s1", "a", "go", args={"api_key": "plain-looking-value-42"})
    plan = Plan([first, Step("s2", "a", "on", ["s1"])])
    path = tmp_path / "run.json"
    assert run_plan(plan, {"a": Agent("a", leaky)}, TASK, checkpoint=path).status == "done"
    text = path.read_text()
    for secret in ("plain-looking-value-42", JWT[:40], KEY[13:40], "correct-horse-battery-staple"):
        assert secret not in text
    assert text.count("[redacted]") >= 2 * 200 + 3  # every echo of the key, the args, the token, the key
    assert load(path, TASK)["outputs"]["s2"].startswith("s2: the server said [redacted]\n")


def test_a_long_output_is_redacted_next_to_its_words_exactly_as_by_a_regex_over_all_of_it():
    """`redact` tries a pattern's regex only next to the words it needs (quick on a long output
    that says "key" or "token" here and there); it must redact exactly what the regex over the
    whole text does: secrets at the start, the end, back to back, in any case, beside plain words."""
    import random

    from agentlab.llm.base import _SECRET_PATTERNS, _sub_near

    bits = ["sk-ant-", "Qw7_zX3-", "Bearer ", "x-api_key", "API_KEY", "Access_Token", "token", "PASSWORD",
            "secret", ":", "=", " ", "\n", "'", '"', "\\", "https://", "user:pw@", "@", "/", "[redacted]",
            ",", "-", "a key finding about tokens. "]
    draw = random.Random(22)
    for _ in range(500):
        text = "".join(draw.choice(bits) for _ in range(draw.randint(1, 30))) * draw.randint(1, 3)
        for secret in _SECRET_PATTERNS:
            searched = text.lower() if secret.ignores_case else text
            assert _sub_near(secret, text, searched) == secret.pattern.sub(secret.replacement, text)


def test_the_quick_encoder_writes_exactly_the_text_the_seal_reads():
    """`canonical_utf8` escapes long text its own way, for speed; a record's seal is checked
    against `canonical` (json.dumps) on reading, so the two must agree byte for byte."""
    every = "".join(map(chr, range(128))) + "é€😀\u2028\\\"" + '\\"'  # every ASCII character, and more
    long = every * 20
    values = [
        long, every, "", {"b": long, "a": [1, 2.5, -0.0, 1e16, float("nan"), True, None, (long, every)]},
        {"z": {"y": [{"x": long}]}, "Z": every, "": {}}, [[], {}, [long], ()], {3: long, 1: "one"},
    ]
    for value in values:
        assert canonical_utf8(value) == canonical(value).encode("utf-8")
    for lone in (long + "\udcff", "\ud800"):  # UTF-8 cannot hold it: the save takes the escaping way
        with pytest.raises(UnicodeEncodeError):
            canonical_utf8({"text": lone})


def test_records_reach_the_disk_at_most_once_a_second_and_always_at_the_end(tmp_path, monkeypatch):
    """A save hands its record to the OS (enough for a killed process, see the kill test above);
    fsync, against a power cut, waited ~15 ms a step on a shared machine and was most of a run's cost."""
    path, synced = tmp_path / "run.json", []
    real = os.fsync

    def counted(handle):
        synced.append(os.fstat(handle).st_size)
        real(handle)

    monkeypatch.setattr(os, "fsync", counted)
    started = time.monotonic()
    run = run_plan(chain(30), {"a": Agent("a", Counting())}, TASK, checkpoint=path)
    took = time.monotonic() - started
    assert run.status == "done" and len(lines(path)) == 1 + 32  # the head; the start, 30 steps, the end
    assert 2 <= len(synced) <= 2 + took / SYNC_SECONDS  # the first save, the end, and once a second
    assert synced[-1] == path.stat().st_size  # the end: the whole file is on the disk
    # a save with nothing new still puts what the one before only handed over on the disk, once due
    other, plan = tmp_path / "other.json", chain(2)
    run = Run(task=TASK, plan=plan, plans=[plan])
    monkeypatch.setattr("agentlab.checkpoint.SYNC_SECONDS", 3600.0)
    save(other, run, 0.0)  # the first save: on the disk
    run.outputs["s1"], run.attempts["s1"] = "s1<>", 1
    save(other, run, 1.0)  # handed to the OS only
    before = len(synced)
    monkeypatch.setattr("agentlab.checkpoint.SYNC_SECONDS", 0.0)
    save(other, run, 1.0)
    assert len(synced) == before + 1 and synced[-1] == other.stat().st_size
    assert load(other, TASK)["outputs"] == {"s1": "s1<>"}
