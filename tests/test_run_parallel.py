"""Running a plan on several workers: same results, a deterministic virtual clock, clean failures."""

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentlab.agents import STUB_TEAM, Agent, Work
from agentlab.plan import Plan, Step
from agentlab.run import orchestrate, run_plan
from agentlab.schedule import makespan, step_durations, virtual_schedule


def echo(step, context):
    """Output depends on the step and on every input, so a wrong thread-through shows."""
    joined = " + ".join(f"{k}=({v})" for k, v in sorted(context.items()))
    return Work(f"{step.id}[{joined}]", calls=(f"call-{step.id}",))


def jittery(step, context):
    """Like echo, but sleeps a random real time first: threads finish in a random order."""
    time.sleep(random.random() * 0.004)
    return echo(step, context)


TEAM = {
    "researcher": Agent("researcher", echo, seconds=3.0),
    "critic": Agent("critic", echo, seconds=1.0),
    "writer": Agent("writer", echo, seconds=2.0),
}
JITTERY = {role: Agent(role, jittery, seconds=a.seconds) for role, a in TEAM.items()}


def wide_plan() -> Plan:
    """Five researchers fan out, three critics each read two of them, one writer joins all."""
    steps = [Step(f"r{i}", "researcher", f"look up part {i}", duration=1.0 + i % 3) for i in range(5)]
    steps += [Step(f"c{i}", "critic", f"check r{i}, r{i + 1}", [f"r{i}", f"r{i + 1}"]) for i in range(3)]
    steps.append(Step("w", "writer", "write it up", [s.id for s in steps]))
    return Plan(steps)


@pytest.mark.parametrize("team", [TEAM, JITTERY], ids=["instant", "jittery"])
def test_outputs_and_calls_do_not_depend_on_the_worker_count(team):
    plan = wide_plan()
    runs = [run_plan(plan, team, workers=k) for k in (1, 2, 8)]
    assert all(r.status == "done" for r in runs)
    assert runs[0].outputs == runs[1].outputs == runs[2].outputs
    assert runs[0].calls == runs[1].calls == runs[2].calls
    assert [c[0] for c in runs[0].calls] == plan.ids  # in plan order, not finishing order
    assert "r0=(r0[])" in runs[0].outputs["c0"] and "c2=(c2[" in runs[0].deliverable


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_the_virtual_trace_does_not_depend_on_thread_timing(workers):
    plan = wide_plan()
    reference = run_plan(plan, TEAM, workers=workers)
    for _ in range(3):
        shaken = run_plan(plan, JITTERY, workers=workers)
        assert shaken.trace.events == reference.trace.events
        assert shaken.slots == reference.slots
    with ThreadPoolExecutor(max_workers=8) as roomy:  # a bigger pool than workers changes nothing
        assert run_plan(plan, JITTERY, workers=workers, pool=roomy).trace.events == reference.trace.events


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
def test_a_run_follows_the_virtual_schedule(workers):
    plan = wide_plan()
    run = run_plan(plan, TEAM, workers=workers)
    predicted = virtual_schedule(plan, step_durations(plan, TEAM), workers)
    assert run.slots == predicted
    assert run.elapsed == makespan(predicted)
    started = {e.step_id: e.time for e in run.trace.of_kind("started")}
    finished = {e.step_id: e.time for e in run.trace.of_kind("finished")}
    assert started == {s.step_id: s.start for s in predicted}
    assert finished == {s.step_id: s.end for s in predicted}


def test_agent_reported_seconds_drive_the_clock():
    """Without a declared duration, the seconds an agent reports are the step's time."""

    def timed(step, context):
        return Work("ok", seconds=float(len(step.instruction)))

    team = {"writer": Agent("writer", timed)}
    plan = Plan([Step("a", "writer", "xx"), Step("b", "writer", "xxxxx"), Step("c", "writer", "x", ["a"])])
    run = run_plan(plan, team, workers=2)
    assert run.slots == virtual_schedule(plan, {"a": 2.0, "b": 5.0, "c": 1.0}, 2)
    assert run.elapsed == 5.0


def test_unlimited_parallelism_reaches_the_critical_path():
    plan = wide_plan()
    run = run_plan(plan, TEAM, workers=len(plan))
    assert run.elapsed == plan.critical_path(step_durations(plan, TEAM))[1]


def test_never_more_agents_at_once_than_workers():
    lock, now, peak = threading.Lock(), [0], [0]

    def counting(step, context):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.005)
        with lock:
            now[0] -= 1
        return "ok"

    plan = Plan([Step(f"s{i}", "writer", "x") for i in range(12)])
    with ThreadPoolExecutor(max_workers=12) as pool:
        run_plan(plan, {"writer": Agent("writer", counting)}, workers=3, pool=pool, clock="real")
    assert peak[0] == 3


def test_the_real_clock_measures_and_keeps_the_same_outputs():
    def napping(step, context):
        time.sleep(0.02)
        return echo(step, context)

    plan = Plan([Step(f"s{i}", "writer", "x") for i in range(4)] + [Step("w", "writer", "join", ["s0"])])
    run = run_plan(plan, {"writer": Agent("writer", napping)}, workers=4, clock="real")
    assert run.outputs == run_plan(plan, TEAM, workers=4).outputs
    assert 0.035 < run.elapsed < 1.0  # two sleeps back to back, not five
    assert all(s.end - s.start >= 0.015 for s in run.slots)
    assert "wall clock, 4 workers" in run.summary()


def test_a_failure_stops_new_work_but_lets_running_steps_finish():
    def broken(step, context):
        raise RuntimeError("source offline")

    team = dict(TEAM, critic=Agent("critic", broken, seconds=1.0))
    plan = Plan(
        [
            Step("check", "critic", "fails at t=1"),
            Step("long", "researcher", "runs from 0 to 4", duration=4.0),
            Step("next", "researcher", "would start at t=1"),
            Step("join", "writer", "after all", ["check", "long", "next"]),
        ]
    )
    run = run_plan(plan, team, workers=2)
    assert run.status == "failed"
    assert run.reason == "step 'check' (critic) failed: RuntimeError: source offline"
    assert [(e.time, e.kind, e.step_id) for e in run.trace if e.kind != "planned"] == [
        (0.0, "started", "check"),
        (0.0, "started", "long"),
        (1.0, "failed", "check"),  # nothing new starts on the freed worker...
        (4.0, "finished", "long"),  # ...but the step already running finishes and is kept
        (4.0, "skipped", "next"),
        (4.0, "skipped", "join"),
    ]
    assert run.outputs == {"long": "long[]"} and run.deliverable is None
    assert run.calls == [("long", "researcher", "call-long")]
    assert run.elapsed == 4.0


def test_a_failure_in_a_wide_plan_is_the_same_every_time():
    def broken(step, context):
        time.sleep(random.random() * 0.004)
        raise RuntimeError("source offline")

    team = dict(JITTERY, critic=Agent("critic", broken, seconds=1.0))
    runs = [run_plan(wide_plan(), team, workers=2) for _ in range(3)]
    assert runs[0].trace.events == runs[1].trace.events == runs[2].trace.events
    assert runs[0].reason.startswith("step 'c0' (critic) failed")
    assert set(runs[0].outputs) == {"r0", "r1", "r2", "r3", "r4"}  # c0 fails at 5.0, as r4 finishes


def test_a_pool_you_pass_is_yours_to_keep():
    with ThreadPoolExecutor(max_workers=2) as pool:
        run_plan(wide_plan(), TEAM, workers=2, pool=pool)
        assert pool.submit(lambda: 41 + 1).result() == 42


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="clock must be one of"):
        run_plan(wide_plan(), TEAM, clock="sundial")
    with pytest.raises(ValueError, match=r"workers must be a whole number >= 1 .*, got 0"):
        run_plan(wide_plan(), TEAM, workers=0)


def test_orchestrate_passes_the_worker_count_through():
    one = orchestrate("Write a short report on planning.", team=STUB_TEAM)
    two = orchestrate("Write a short report on planning.", team=STUB_TEAM, workers=2)
    assert one.deliverable == two.deliverable
    assert (one.elapsed, two.elapsed) == (8.0, 6.0)
    assert "(virtual, 2 workers)" in two.summary() and "(virtual)" in one.summary()


def test_a_chain_on_many_workers_runs_on_the_callers_thread_and_a_wide_run_reuses_its_threads(monkeypatch):
    """Per-step overhead: a step started alone was handed to a thread and back (a chain on 16
    workers cost 3x one on one worker), and each run started its own threads (a 200-wide fan-out
    started 200, which cost more than its steps)."""
    from agentlab import threads

    seen = []
    team = {"w": Agent("w", lambda step, context: seen.append(threading.current_thread().name) or "ok")}
    chain = Plan([Step(f"s{i}", "w", "x", (f"s{i - 1}",) if i else ()) for i in range(5)])
    assert run_plan(chain, team, workers=16).status == "done"
    assert seen == [threading.current_thread().name] * 5

    together = threading.Barrier(40, timeout=20)  # the 40 branches must all run at once: 40 threads

    def branch(step, context):
        if step.id != "root":
            together.wait()
        return "ok"

    team = {"w": Agent("w", branch)}
    wide = Plan([Step("root", "w", "x")] + [Step(f"b{i}", "w", "x", ("root",)) for i in range(40)])
    assert run_plan(wide, team, workers=40).status == "done"
    deadline = time.monotonic() + 10
    while threads._idle[0] < 40 and time.monotonic() < deadline:  # each back to waiting for a call
        time.sleep(0.01)
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda t: started.append(t.name) or start(t))
    assert run_plan(wide, team, workers=40).status == "done"
    assert started == []  # not one new thread: the first run's were used again


def test_a_wide_run_hands_each_moments_steps_over_at_once_and_makes_no_future_a_step(monkeypatch):
    """Per-step overhead, counted rather than timed: each step started was handed to a daemon thread
    of its own and came back through a Future (a lock and a condition each): 198 hand-offs and
    200 Futures for a 200-node fan-out of no-op steps on 16 workers, whose cost was a seventh of
    LangGraph's per step. The steps a moment starts now go over together, and come back as tickets."""
    from concurrent import futures

    from agentlab import threads

    branches = [Step(f"b{i}", "w", "x", ("root",)) for i in range(198)]
    wide = Plan([Step("root", "w", "x"), *branches, Step("join", "w", "x", tuple(b.id for b in branches))])
    woken, made = [], []
    wake, init = threads._wake, futures.Future.__init__
    monkeypatch.setattr(threads, "_wake", lambda call: woken.append(call) or wake(call))
    monkeypatch.setattr(futures.Future, "__init__", lambda self: made.append(self) or init(self))
    run = run_plan(wide, {"w": Agent("w", lambda step, context: "ok")}, workers=16)
    assert run.status == "done" and len(run.slots) == 200
    moments = -(-198 // 16)  # 13 moments start 16 branches (the last 6); root and join run alone, here
    assert moments <= len(woken) < 198 / 4  # one hand-off a moment (one more if its thread stalls 1 ms)
    assert made == []
