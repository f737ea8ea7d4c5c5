"""Every wait in a run is bounded when a time limit is set: an agent that blocks cannot hang a run
on either clock, and an attempt the run walked away from does not keep the process alive."""

import signal
import subprocess
import sys
import textwrap
import threading
import time

from agentlab.agents import Agent, Work
from agentlab.plan import Plan, Step
from agentlab.run import WALL_FACTOR, run_plan

NEVER = threading.Event()  # never set: an agent waiting on it blocks for good


def blocks(step, context):
    NEVER.wait()
    return "never"


def quick(step, context):
    return Work(f"{step.id} done", seconds=0.01)


def in_thread(call, limit):
    """Run `call` on a daemon thread; its result, or None if it is still going after `limit` s
    (so that a test of a hang fails instead of hanging the suite)."""
    box = []
    thread = threading.Thread(target=lambda: box.append(call()), daemon=True)
    thread.start()
    thread.join(limit)
    return box[0] if box else None


PLAN = Plan([Step("s1", "stuck", "wait"), Step("s2", "ok", "go"), Step("s3", "ok", "join", ["s2"])])
TEAM = {"stuck": Agent("stuck", blocks), "ok": Agent("ok", quick)}


def test_on_the_virtual_clock_an_agent_that_blocks_fails_as_a_timeout_after_a_real_time_bound():
    began = time.monotonic()
    run = in_thread(lambda: run_plan(PLAN, TEAM, "t", workers=2, timeout=0.05), limit=10)
    took = time.monotonic() - began
    assert run is not None, "the run hung"
    assert 0.05 * WALL_FACTOR <= took < 5  # it waited the safety bound (0.5 s), not for ever
    assert run.status == "failed" and run.outputs == {"s2": "s2 done", "s3": "s3 done"}  # the rest ran
    assert run.reason == (
        "step 's1' (stuck) failed: no result within the 0.05 s limit (no report after 0.5 s of real time)"
    )
    [failed] = run.trace.of_kind("failed")
    assert failed.time == 0.05  # on the virtual clock it failed at its limit, as a late report would
    assert run.step_status == {"s1": "failed", "s2": "done", "s3": "done"}


def test_the_safety_bound_does_not_catch_a_step_that_reports_in_time_however_long_it_really_took():
    def slow_but_honest(step, context):
        time.sleep(0.15)  # three times the limit in real time
        return Work("fine", seconds=0.01)  # but the step says it took 0.01 s (a simulated model does)

    plan = Plan([Step("s1", "a", "x")])
    run = run_plan(plan, {"a": Agent("a", slow_but_honest)}, "t", timeout=0.05)
    assert run.status == "done" and run.elapsed == 0.01


SCRIPT = textwrap.dedent(
    """
    import threading, time
    from agentlab.agents import Agent
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    never = threading.Event()
    team = {"a": Agent("a", lambda step, context: never.wait() and "never")}
    for clock in ("real", "virtual"):
        began = time.monotonic()
        run = run_plan(Plan([Step("s1", "a", "x")]), team, "t", timeout=0.1, clock=clock)
        print(clock, run.status, f"{time.monotonic() - began:.1f}", flush=True)
    """
)


def test_a_process_whose_runs_abandoned_blocked_attempts_still_exits(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    began = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"the process did not exit: {hung.stdout!r}") from None
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert [line[:2] for line in lines] == [["real", "failed"], ["virtual", "failed"]]
    assert all(float(seconds) < 2 for *_, seconds in lines)  # 0.1 s (real), 1 s (virtual: 10 x 0.1 s)
    assert time.monotonic() - began < 25  # python's start and the two runs, not a wait at exit


def test_time_limits_are_bounded_above_too_naming_the_setting():
    """timeout=1e9 (virtual clock) used to crash the loop with AttributeError, 1e12 (real clock)
    with OverflowError; a slow fault or a model client with such a limit did the same later."""
    import pytest

    from agentlab.faults import Fault
    from agentlab.llm.anthropic import AnthropicLLM

    MAX_TIMEOUT = 86_400  # a day
    ok = {"ok": Agent("ok", quick)}
    plan = Plan([Step("s1", "ok", "go")])
    for clock, huge in (("virtual", 1e9), ("real", 1e12)):
        with pytest.raises(ValueError, match=r"^timeout must be a number of seconds in \(0, 86400\]"):
            run_plan(plan, ok, clock=clock, timeout=huge)
    assert run_plan(plan, ok, timeout=MAX_TIMEOUT).status == "done"  # the longest allowed works
    assert run_plan(plan, ok, clock="real", timeout=MAX_TIMEOUT, workers=2).status == "done"
    with pytest.raises(ValueError, match="a fault's seconds must be"):
        Fault("s1", kind="slow", seconds=1e12)
    for setting in ("timeout", "max_wait"):
        with pytest.raises(ValueError, match=f"^{setting} must be"):
            AnthropicLLM(**{setting: 1e12})


def test_an_interrupt_during_a_multi_worker_run_returns_promptly_with_the_run_stopped():
    """Interrupting a kernel waited for every running step (20 s here) and lost the run."""
    import _thread

    import pytest

    started = threading.Event()

    def slow(step, context):
        started.set()
        time.sleep(4)
        return "late"

    plan = Plan([Step("a", "w", "x"), Step("b", "w", "y"), Step("c", "w", "z", ["a", "b"])])
    threading.Thread(target=lambda: started.wait(10) and (time.sleep(0.2), _thread.interrupt_main()),
                     daemon=True).start()
    # a suite started as a background job has SIGINT ignored, and then interrupt_main does nothing
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    began = time.monotonic()
    try:
        run = run_plan(plan, {"w": Agent("w", slow)}, workers=2)
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped run_plan, and the run with it")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - began < 3
    assert run.status == "stopped" and run.reason.startswith("interrupted")
    assert run.step_status["c"] == "skipped"
