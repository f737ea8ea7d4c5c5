"""Steps and tasks on a Dask cluster (one 2-worker LocalCluster for the whole file) give what
threads give; what cannot travel and a worker that dies are failed steps with a reason."""

import contextlib
import io
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time

import pytest

from agentlab.agents import Agent, Work, world_team
from agentlab.attempt import submit
from agentlab.budget import Budget
from agentlab.cluster import TasksFailed, context_bytes, local_cluster, run_tasks
from agentlab.llm.base import Completion, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import usage_report
from agentlab.plan import Plan, Step
from agentlab.planners import LLMPlanner
from agentlab.recovery import Retry
from agentlab.run import orchestrate, run_plan
from agentlab.world.tasks import make_tasks

ERROR_RATE = 0.3  # some calls go wrong, so usage, failures and retries are not trivial


@pytest.fixture(scope="module")
def client():
    with local_cluster(workers=2) as client:
        yield client


def solve(task, pool=None):
    """One world task, planned and run by a team on the simulator, as notebooks 06-07 do."""
    llm = SimulatedLLM(seed=7, error_rate=ERROR_RATE)
    team = world_team(llm)
    planner = LLMPlanner(llm, team, tool_steps=False)  # every step is a model call
    return orchestrate(task.question, planner, team, workers=2, pool=pool, recovery=[Retry(1)])


def same_run(a, b):
    assert a.status == b.status and a.reason == b.reason
    assert a.outputs == b.outputs
    assert list(a.trace) == list(b.trace)
    assert a.calls == b.calls
    assert usage_report(a.calls) == usage_report(b.calls)


def test_a_simulated_llm_pickles_and_answers_the_same_after_the_trip():
    llm = SimulatedLLM(seed=3, error_rate=0.5)
    copy = pickle.loads(pickle.dumps(llm))
    question = [{"role": "user", "content": "What is the population of Varra?"}]
    ask = {"system": "You are terse.", "messages": question}
    assert copy.complete(**ask) == llm.complete(**ask)
    assert copy.injected == llm.injected and copy._lock is not llm._lock


def test_a_plan_on_the_cluster_gives_the_outputs_trace_and_usage_of_threads(client):
    task = make_tasks(5, seed=2)[1]  # a chain: steps that depend on each other
    on_threads, on_cluster = solve(task), solve(task, client.get_executor())
    assert len(on_threads.plan) >= 2 and on_threads.calls
    same_run(on_cluster, on_threads)


def test_each_slot_says_which_worker_process_ran_it_and_each_context_its_bytes(client):
    task = make_tasks(5, seed=2)[1]
    run = solve(task, client.get_executor())
    workers = set(client.run(os.getpid).values())  # the pid of each worker process
    assert {int(slot.where.rsplit(":", 1)[1]) for slot in run.slots} <= workers
    sizes = context_bytes(run)
    assert set(sizes) == set(run.plan.ids)
    for step in run.plan:  # what the loop handed the worker: the outputs it depends on, pickled
        assert sizes[step.id] == len(pickle.dumps({d: run.outputs[d] for d in step.depends_on}))
    last = run.plan.steps[-1]
    assert last.depends_on and sizes[last.id] > sum(len(run.outputs[d]) for d in last.depends_on)


def test_a_checkpointed_run_resumes_on_a_new_cluster_without_redoing_finished_steps(client, tmp_path):
    task, path = make_tasks(5, seed=2)[1], tmp_path / "run.json"
    llm = SimulatedLLM(seed=7)
    team = world_team(llm)
    planner = LLMPlanner(llm, team, tool_steps=False)
    straight = orchestrate(task.question, planner, team)
    assert len(straight.plan) >= 3
    with local_cluster(workers=1) as first:  # this cluster is gone before the run carries on
        gone = set(first.run(os.getpid).values())
        stopped = orchestrate(task.question, planner, team, pool=first.get_executor(), checkpoint=path,
                              budget=Budget(calls=len(straight.calls) - 1))
    assert stopped.status == "stopped" and 0 < len(stopped.outputs) < len(straight.plan)
    resumed = orchestrate(task.question, planner, team, pool=client.get_executor(), checkpoint=path,
                          resume=True)
    assert resumed.status == "done" and resumed.outputs == straight.outputs
    assert resumed.calls == straight.calls  # every call counted once: nothing paid for twice
    after = resumed.trace.events[resumed.trace.events.index(resumed.trace.of_kind("resumed")[0]):]
    assert not {e.step_id for e in after if e.kind == "started"} & set(stopped.outputs)  # not redone
    ran = {slot.step_id: int(slot.where.rsplit(":", 1)[1]) for slot in resumed.slots}
    assert {ran[i] for i in stopped.outputs} <= gone  # the slots saved say where, even once it is gone
    assert not {pid for i, pid in ran.items() if i not in stopped.outputs} & gone


def test_a_new_clusters_workers_see_the_environment_as_it_is_when_it_starts(client, monkeypatch):
    """Workers fork from a server started with an earlier cluster (here the module's): without
    `env=` they saw its environment, so a key or server set since never reached them."""
    monkeypatch.setenv("AGENTLAB_TEST_SET_LATER", "seen")
    with local_cluster(workers=1) as later:
        assert list(later.run(os.getenv, "AGENTLAB_TEST_SET_LATER").values()) == ["seen"]


def test_a_straggling_worker_times_out_on_the_real_clock_and_retry_runs_the_step_again(client, tmp_path):
    marker = tmp_path / "slow"

    def act(step, context):  # the first try at s2 sleeps on its worker, far past the limit
        if step.id == "s2" and not marker.exists():
            marker.touch()
            time.sleep(1.5)
        return f"{step.id} done"

    plan = Plan([Step("s1", "a", "first"), Step("s2", "a", "then", ["s1"]), Step("s3", "a", "last", ["s2"])])
    started = time.monotonic()
    run = run_plan(plan, {"a": Agent("a", act)}, pool=client.get_executor(), clock="real", timeout=0.5,
                   recovery=[Retry(1)])
    assert time.monotonic() - started < 1.5  # the run did not wait for the straggler
    [(step, role, failure)] = run.failures
    assert (step, failure.kind) == ("s2", "timeout") and "0.5 s limit" in failure.message
    assert run.status == "done" and run.attempts["s2"] == 2 and run.deliverable == "s3 done"
    assert marker.exists()


def test_a_batch_of_tasks_on_the_cluster_gives_what_one_by_one_gives(client, capsys):
    tasks = make_tasks(6, seed=4)
    one_by_one = [solve(task) for task in tasks]
    runs = run_tasks(tasks, solve, client)
    assert len(runs) == len(tasks)
    for run, expected, task in zip(runs, one_by_one, tasks, strict=True):
        assert run.task == task.question
        same_run(run, expected)
    assert "6/6 tasks" in capsys.readouterr().err
    assert sum(len(run.calls) for run in runs) > 3 * len(tasks)  # usage rolled up from every worker
    assert any(run.failures for run in runs)  # a model's slip, retried, the same on both


def test_an_agent_that_cannot_be_pickled_is_a_failed_step_that_says_what_holds_what(client):
    llm = SimulatedLLM(seed=1)
    team = world_team(llm)
    lock = threading.Lock()

    def write(step, context):
        with lock:
            return "done"

    team["writer"] = Agent("writer", write, description="reports the team's final answer")
    pool = client.get_executor()
    run = orchestrate("What is the population of Varra?", LLMPlanner(llm, team), team, pool=pool)
    assert run.status == "failed"
    assert "the writer agent cannot be sent to a worker: it holds `lock` (lock)" in run.reason
    assert "Traceback" not in run.reason and run.outputs  # the steps before it are kept


@contextlib.contextmanager
def dask_log():
    """What Dask logs in this process (in a notebook, its handler prints into the cell that
    started the cluster, whichever cell is running now)."""
    printed = io.StringIO()
    handler = logging.StreamHandler(printed)
    logging.getLogger("distributed").addHandler(handler)
    try:
        yield printed
    finally:
        logging.getLogger("distributed").removeHandler(handler)


def test_a_step_whose_worker_is_killed_fails_with_that_reason_and_retry_recovers_it(client, tmp_path):
    task = make_tasks(5, seed=2)[1]
    llm = SimulatedLLM(seed=7)
    team = world_team(llm)
    writer, here, marker = team["writer"], os.getpid(), tmp_path / "killed"

    def write_or_die(step, context):  # on a worker, the first time: its process is killed
        if os.getpid() != here and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return writer(step, context)

    team["writer"] = Agent("writer", write_or_die, description=writer.description)
    expected = orchestrate(task.question, LLMPlanner(llm, world_team(llm)), world_team(llm))
    pool = client.get_executor()
    with dask_log() as printed:
        run = orchestrate(task.question, LLMPlanner(llm, team), team, pool=pool, recovery=[Retry(1)])
        client.wait_for_workers(2, timeout=30)  # the nanny's restart of the killed worker logs too
    assert "died" not in printed.getvalue() and "ERROR" not in printed.getvalue(), printed.getvalue()
    assert marker.exists()
    [(step, role, failure)] = run.failures
    assert role == "writer" and "the worker running it died (KilledWorker" in failure.message
    assert run.status == "done" and run.outputs == expected.outputs  # nothing lost
    assert run.attempts[step] == 2


def test_a_batch_whose_task_fails_keeps_the_other_results(client):
    def half(n):
        if n == 2:
            raise ValueError("no twos")
        return n * 10

    with pytest.raises(TasksFailed, match="1 of 4 task.*task 2: ValueError: no twos") as failed:
        run_tasks([0, 1, 2, 3], half, client, progress=False)
    assert failed.value.results == [0, 10, None, 30]


def test_a_pool_that_refuses_a_step_is_a_failed_attempt_not_an_exception():
    class Closed:
        def submit(self, fn, *args):
            raise RuntimeError("cannot schedule new futures after shutdown")

    agent = world_team(SimulatedLLM())["writer"]  # it pickles: the reason is the pool's
    attempt = submit(Closed(), agent, None, None, {}, (), None, 1, False).result()
    refused = "the pool refused it (RuntimeError: cannot schedule new futures after shutdown)"
    assert attempt.failure.message == refused


def test_importing_agentlab_does_not_import_dask():
    code = "import sys, agentlab; print('distributed' in sys.modules, 'dask' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_a_result_that_cannot_travel_back_fails_the_step_naming_it_and_keeps_what_can(client):
    """A call record holding a lock (here: a str subclass carrying one) used to leave its Dask
    future pending for ever: the run hung. Now the worker checks what goes back."""

    class Noted(str):  # text with something attached that no pickler can send
        pass

    def act(step, context):
        text = Noted("the answer")
        text.lock = threading.Lock()
        return Work("plain output", calls=(Completion(text, "sim-small", "simulated", Usage(3, 4)),))

    team = {"writer": Agent("writer", act)}
    plan = Plan([Step("s1", "writer", "write it")])
    done = {}
    pool = client.get_executor()
    worker = threading.Thread(target=lambda: done.setdefault("run", run_plan(plan, team, pool=pool)))
    worker.daemon = True
    started = time.monotonic()
    worker.start()
    worker.join(30)
    assert "run" in done, "the run hung on a result that cannot be pickled back"
    run = done["run"]
    assert time.monotonic() - started < 30
    assert run.status == "failed"
    assert "cannot be sent back from the worker" in run.reason and "calls[0]" in run.reason
    assert "lock" in run.reason
    assert [c.usage for _, _, c in run.calls] == [Usage(3, 4)]  # the paid call is still counted


def test_the_claude_path_runs_on_the_cluster_with_one_model_for_planner_and_team(client):
    """One AnthropicLLM for planner and team, the usual way: after the planner's call it held the
    SDK client's lock and every step failed to travel; before it, it travelled with its key."""
    from agentlab.llm.anthropic import AnthropicLLM
    from agentlab.llm.serve import start_server

    key = "sk-ant-api03-not-a-real-key-but-secret-0000"
    task = make_tasks(5, seed=2)[1]
    with start_server() as server:
        llm = AnthropicLLM(base_url=server.url, api_key=key)
        assert key.encode() not in pickle.dumps(llm)  # nothing sends the key to a worker
        team = world_team(llm)
        planner = LLMPlanner(llm, team, tool_steps=False)
        on_threads = orchestrate(task.question, planner, team, workers=2)
        # on one worker of the two: each worker process pays ~3 CPU-s to import the SDK, and one
        # is enough to show the model travel without its client and build its own there
        one = client.get_executor(workers=list(client.scheduler_info()["workers"])[:1])
        on_cluster = orchestrate(task.question, planner, team, workers=2, pool=one)
        assert key.encode() not in pickle.dumps(llm) and "_api_key" not in vars(llm)
    assert on_threads.status == "done", on_threads.reason
    assert on_cluster.status == "done", on_cluster.reason
    assert on_cluster.outputs == on_threads.outputs
    assert len(on_cluster.calls) == len(on_threads.calls) > len(on_cluster.plan)  # every call counted
    assert all(slot.where and slot.where.split(":")[1] != str(os.getpid()) for slot in on_cluster.slots)
