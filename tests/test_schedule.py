"""The scheduling policy on a virtual clock, and the critical path it can never beat."""

import itertools
import math
import random
import threading

import pytest

from agentlab.agents import STUB_TEAM, Agent, StepFailed, Work
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import stub_planner
from agentlab.run import run_plan
from agentlab.schedule import ListScheduler, Slot, makespan, step_durations, virtual_schedule


def random_plan(seed: int, n: int = 8, p: float = 0.3) -> tuple[Plan, dict[str, float]]:
    """A random DAG (each step may depend on any earlier one) with whole-number durations."""
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        deps = tuple(f"s{j}" for j in range(i) if rng.random() < p)
        steps.append(Step(f"s{i}", "writer", f"step {i}", depends_on=deps))
    rng.shuffle(steps)  # a plan may be written in any order; only the edges matter
    return Plan(steps), {s.id: float(rng.randint(0, 5)) for s in steps}


def all_chains(plan: Plan) -> list[list[str]]:
    """Every dependency chain that starts at a root and ends at a sink (brute force, for small plans)."""
    after = {s.id: [t.id for t in plan if s.id in t.depends_on] for s in plan}
    chains = []

    def walk(chain):
        nxt = after[chain[-1]]
        if not nxt:
            chains.append(chain)
        for n in nxt:
            walk(chain + [n])

    for s in plan:
        if not s.depends_on:
            walk([s.id])
    return chains


def check_valid(plan: Plan, durations: dict[str, float], slots: list[Slot], workers: int) -> None:
    """Every step once, for its duration, after its dependencies, never two at once on one worker."""
    assert sorted(s.step_id for s in slots) == sorted(plan.ids)
    by_id = {s.step_id: s for s in slots}
    for slot in slots:
        assert slot.end - slot.start == pytest.approx(durations[slot.step_id])
        assert 0 <= slot.worker < workers
        for dep in plan[slot.step_id].depends_on:
            assert by_id[dep].end <= slot.start
    for a, b in itertools.combinations(slots, 2):
        if a.worker == b.worker:
            assert a.end <= b.start or b.end <= a.start or a.start == a.end or b.start == b.end


# --- critical path ---------------------------------------------------------------


def test_critical_path_of_the_stub_plan_runs_through_the_slowest_branch():
    plan = stub_planner("Write a report")
    chain, length = plan.critical_path(step_durations(plan, STUB_TEAM))
    # researcher 3 s -> critic 1 s -> writer 2 s beats coder 2 s -> writer 2 s
    assert chain == ["s1", "s3", "s4"]
    assert length == 6.0


@pytest.mark.parametrize("seed", range(30))
def test_critical_path_is_the_longest_chain(seed):
    plan, durations = random_plan(seed)
    chain, length = plan.critical_path(durations)
    assert not plan[chain[0]].depends_on  # it starts at a root...
    for before, after in itertools.pairwise(chain):
        assert before in plan[after].depends_on  # ...and follows dependencies
    assert length == pytest.approx(sum(durations[i] for i in chain))
    longest = max(sum(durations[i] for i in c) for c in all_chains(plan))
    assert length == pytest.approx(longest)


def test_critical_path_names_a_step_without_a_duration():
    plan = stub_planner("Write a report")
    with pytest.raises(PlanError, match="duration for step 's3'"):
        plan.critical_path({"s1": 1, "s2": 1, "s4": 1})


def test_critical_path_rejects_a_negative_duration():
    plan = stub_planner("Write a report")
    with pytest.raises(PlanError, match="step 's2' must be a number >= 0, got -1"):
        plan.critical_path({"s1": 1, "s2": -1, "s3": 1, "s4": 1})


def test_critical_path_ties_go_to_the_step_written_first():
    plan = Plan([Step("b", "writer", "x"), Step("a", "writer", "y"), Step("c", "writer", "z", ["b", "a"])])
    assert plan.critical_path({"a": 1, "b": 1, "c": 1}) == (["b", "c"], 2.0)


# --- the schedule ----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_unlimited_workers_finish_at_the_critical_path(seed):
    plan, durations = random_plan(seed)
    slots = virtual_schedule(plan, durations, workers=None)
    check_valid(plan, durations, slots, len(plan))
    assert makespan(slots) == pytest.approx(plan.critical_path(durations)[1])


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_schedule_is_valid_and_never_beats_the_bounds(seed, workers):
    plan, durations = random_plan(seed, n=10)
    slots = virtual_schedule(plan, durations, workers)
    check_valid(plan, durations, slots, workers)
    floor = max(plan.critical_path(durations)[1], sum(durations.values()) / workers)
    assert makespan(slots) >= floor - 1e-9


@pytest.mark.parametrize("seed", range(20))
def test_no_worker_idles_while_a_step_is_ready(seed):
    """The greedy part of list scheduling: a ready step waits only while every worker is busy."""
    plan, durations = random_plan(seed, n=10, p=0.2)
    workers = 2
    slots = virtual_schedule(plan, durations, workers)
    by_id = {s.step_id: s for s in slots}
    moments = sorted({s.start for s in slots} | {s.end for s in slots})
    for slot in slots:
        ready_at = max((by_id[d].end for d in plan[slot.step_id].depends_on), default=0.0)
        for t in moments:
            if ready_at <= t < slot.start:
                busy = [s for s in slots if s.start <= t < s.end]
                assert len(busy) == workers, f"{slot.step_id} waited at t={t} with a worker free"


def test_one_worker_runs_everything_in_written_order_when_it_can():
    plan = Plan([Step("c", "writer", "x"), Step("a", "writer", "y"), Step("b", "writer", "z")])
    slots = virtual_schedule(plan, {"a": 1, "b": 2, "c": 3}, workers=1)
    assert [s.step_id for s in slots] == ["c", "a", "b"]
    assert makespan(slots) == 6


def test_the_lowest_free_worker_takes_the_first_ready_step():
    plan = stub_planner("Write a report")
    slots = virtual_schedule(plan, step_durations(plan, STUB_TEAM), workers=2)
    assert slots == [
        Slot("s1", 0, 0.0, 3.0),
        Slot("s2", 1, 0.0, 2.0),
        Slot("s3", 0, 3.0, 4.0),  # worker 1 has been free since 2.0, but worker 0 is lower
        Slot("s4", 0, 4.0, 6.0),
    ]


def test_steps_stream_without_waiting_for_a_layer():
    """d needs only the short a, so it starts when a ends, while the long b is still running."""
    plan = Plan(
        [
            Step("a", "writer", "short"),
            Step("b", "writer", "long"),
            Step("d", "writer", "after a", ["a"]),
        ]
    )
    slots = {s.step_id: s for s in virtual_schedule(plan, {"a": 1, "b": 10, "d": 1}, workers=2)}
    assert slots["d"].start == 1 < slots["b"].end


def test_more_workers_never_hurt_a_fan_out():
    steps = [Step(f"r{i}", "researcher", "look") for i in range(6)]
    plan = Plan([*steps, Step("w", "writer", "join", [s.id for s in steps])])
    durations = {s.id: 3.0 for s in plan}
    spans = [makespan(virtual_schedule(plan, durations, k)) for k in range(1, 8)]
    assert spans == sorted(spans, reverse=True)
    assert spans[0] == 21.0 and spans[-1] == 6.0


def test_schedule_rejects_bad_worker_counts_and_missing_durations():
    plan = stub_planner("Write a report")
    durations = step_durations(plan, STUB_TEAM)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="workers must be a whole number >= 1"):
            virtual_schedule(plan, durations, bad)
    with pytest.raises(PlanError, match="virtual_schedule needs a duration for step 's4'"):
        virtual_schedule(plan, {"s1": 1, "s2": 1, "s3": 1})
    for bad in (float("nan"), float("inf"), True):  # a NaN step would never end
        with pytest.raises(PlanError, match=f"the duration of step 's2' must be a number >= 0, got {bad}"):
            virtual_schedule(plan, {**durations, "s2": bad})


def test_the_list_scheduler_hands_out_work_and_a_failed_step_releases_nothing():
    plan = Plan([Step("a", "w", "x"), Step("b", "w", "y", ["a"]), Step("c", "w", "z")])
    scheduler = ListScheduler(plan, 1)
    assert scheduler.steps == plan.steps and scheduler.index == {"a": 0, "b": 1, "c": 2}
    [(step, worker)] = scheduler.take()
    assert (step.id, worker, scheduler.busy, scheduler.take()) == ("a", 0, 1, [])  # one worker, busy
    scheduler.finish("a", 0, ok=False)  # "b" goes on waiting: what it needs failed
    assert scheduler.busy == 0 and [(s.id, w) for s, w in scheduler.take()] == [("c", 0)]
    scheduler.finish("c", 0)
    assert scheduler.take() == [] and scheduler.ready == [] and scheduler.busy == 0


def test_step_durations_prefers_the_declared_duration():
    plan = Plan([Step("a", "writer", "x", duration=0.5), Step("b", "critic", "y", ["a"])])
    assert step_durations(plan, STUB_TEAM) == {"a": 0.5, "b": STUB_TEAM["critic"].seconds}
    with pytest.raises(PlanError, match="no agent in the team for role"):
        step_durations(plan, {"writer": STUB_TEAM["writer"]})


def test_makespan_of_nothing_is_zero():
    assert makespan([]) == 0.0


# --- the virtual clock only ever reads finite seconds -------------------------------------------


def bounded(fn, seconds: float = 10.0):
    """fn() on a daemon thread, or a failure if it has not returned within `seconds` (a hang)."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: hung"
    return out[0]


def reports(seconds: float):
    """A writer whose act reports `seconds` for its step, as a Work or inside a StepFailed."""

    def act(step, context):
        return Work("done", seconds)

    def fails(step, context):
        raise StepFailed("gave up", (), seconds)

    return Agent("writer", act), Agent("writer", fails)


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -1.0], ids=["nan", "inf", "negative"])
def test_an_agent_reporting_bad_seconds_fails_its_step_instead_of_hanging_the_run(seconds):
    """A NaN end time never compares equal to the clock, so the run once spun forever at 100% CPU."""
    plan = Plan([Step("s1", "writer", "x"), Step("s2", "writer", "y", depends_on=["s1"])])
    reporting, failing = reports(seconds)
    run = bounded(lambda: run_plan(plan, {"writer": reporting}))
    assert run.status == "failed" and run.outputs == {}
    assert run.reason.startswith(
        "step 's1' (writer) failed: ValueError: a Work's seconds must be a number >= 0"
    )
    run = bounded(lambda: run_plan(plan, {"writer": failing}))  # a failure's seconds: the agent's default
    assert run.status == "failed" and run.reason == "step 's1' (writer) failed: StepFailed: gave up"
    assert run.slots[0].end == 1.0
