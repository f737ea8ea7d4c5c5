"""Recovering: retry, reroute and replan, each within its bound, and the trace naming the bound
that stopped it; on the task world, replanning recovers tasks that no recovery loses."""

import threading

import pytest

from agentlab import world
from agentlab.agents import Agent, StepFailed, ToolFunction, Work, model_agent, world_team
from agentlab.faults import Fault
from agentlab.llm.base import Completion, ModelError, Usage
from agentlab.llm.simulated import SimulatedLLM
from agentlab.monitor import Failure
from agentlab.plan import Plan, Step, remaining, renamed
from agentlab.planners import LLMPlanner, PlanningFailed, stub_planner
from agentlab.recovery import Replan, Reroute, Retry
from agentlab.run import orchestrate, run_plan


def call(tokens=10):
    return Completion("ok", "sim-large", "test", Usage(tokens, 5), 1.0)


class Counting:
    """An agent that echoes its step and inputs, and counts how often each step was tried."""

    def __init__(self):
        self.tried, self.seen, self.lock = {}, [], threading.Lock()

    def __call__(self, step, context):
        with self.lock:
            self.tried[step.id] = self.tried.get(step.id, 0) + 1
            self.seen.append(step)
        return Work(f"{step.id}<{','.join(context.values())}>", calls=(call(),))


def chain(n=4, role="a"):
    return Plan([Step(f"s{i}", role, f"step {i}", [f"s{i - 1}"] if i > 1 else []) for i in range(1, n + 1)])


class ScriptedPlanner:
    """A planner that replans with the plans it is given, in order, and keeps what it was told."""

    def __init__(self, *plans, error=None):
        self.plans, self.error, self.requests, self.calls = list(plans), error, [], []

    def __call__(self, task):
        return chain()

    def replan(self, task, plan, outputs, failure):
        self.requests.append((task, plan, dict(outputs), failure))
        if self.error is not None:
            raise self.error
        return Plan(self.plans.pop(0).steps, calls=[call(100)])  # the call that wrote it goes with it


# --- retry ------------------------------------------------------------------------------------------


def test_a_flaky_step_is_retried_and_the_run_succeeds():
    agent = Counting()
    run = run_plan(chain(), {"a": Agent("a", agent)}, recovery=[Retry(2)], faults=[Fault(step="s2", times=1)])
    assert run.status == "done" and agent.tried == {"s1": 1, "s2": 1, "s3": 1, "s4": 1}
    kinds = [e.kind for e in run.trace.for_step("s2")]
    assert kinds == ["planned", "started", "failed", "retried", "started", "finished"]
    assert run.trace.of_kind("retried")[0].detail == "retry 1 of 2: attempt 2"
    assert run.elapsed == 5.0  # the failed attempt's second is on the clock


def test_a_retry_tells_the_agent_what_went_wrong_but_a_tool_step_runs_as_it_stands():
    agent = Counting()
    plan = Plan([Step("s1", "a", "What is it?")])
    run_plan(plan, {"a": Agent("a", agent)}, recovery=[Retry(2)], faults=[Fault(times=2)])
    notes = [s.instruction for s in agent.seen]
    assert notes == [
        "What is it?\n(Retry 2 of 2: the last attempt failed: InjectedFault: "
        "injected error fault at step 's1', attempt 2)"
    ]
    assert Retry(2).next_step(Step("s1", "a", "x", tool="lookup"), None, {}).instruction == "x"
    noted = Retry(1).next_step(Step("s1", "a", "x"), Failure("error", "it refers to $s9"), {})
    assert noted.instruction.endswith("failed: it refers to s9)")  # a note is not a $reference


def test_failed_attempts_count_their_calls_and_time():
    tries = []

    def stumbles(step, context):
        tries.append(step.id)
        if len(tries) == 1:
            raise StepFailed("stopped by max_turns=2", [call(), call()], seconds=2.5)
        return Work("fine", seconds=1.0, calls=(call(),))

    run = run_plan(Plan([Step("s1", "a", "go")]), {"a": Agent("a", stumbles)}, recovery=[Retry(1)])
    assert run.status == "done" and len(run.calls) == 3 and run.elapsed == 3.5


def test_retries_stop_at_their_bound_and_the_trace_says_so():
    agent = Counting()
    run = run_plan(chain(), {"a": Agent("a", agent)}, recovery=[Retry(2)], faults=[Fault(step="s2")])
    assert run.status == "failed" and agent.tried.get("s2", 0) == 0  # faults strike before the agent
    assert [e.kind for e in run.trace.for_step("s2")].count("failed") == 3  # the try and two retries
    stopped = run.trace.of_kind("stopped")
    assert [e.detail for e in stopped] == ["recovery exhausted: Retry(times=2): 2 of 2 retries used"]
    assert run.reason.endswith("(recovery exhausted: Retry(times=2): 2 of 2 retries used)")
    assert set(run.outputs) == {"s1"} and run.step_status["s3"] == "skipped"


# --- reroute -----------------------------------------------------------------------------------------


def test_a_step_whose_role_is_down_is_rerouted_once_to_its_stand_in_as_an_instruction():
    agent = Counting()
    team = {"a": Agent("a", agent), "b": Agent("b", agent)}
    plan = Plan([Step("s1", "a", "What is 2 + 2?", tool="calculate", args={"expression": "2 + 2"})])
    run = run_plan(plan, team, recovery=[Reroute({"a": "b"})], faults=[Fault(role="a")])
    assert run.status == "done"
    (tried,) = agent.seen
    assert (tried.role, tried.tool, dict(tried.args)) == ("b", None, {})  # the stand-in reads the instruction
    assert (
        run.trace.of_kind("rerouted")[0].detail
        == "rerouted to b, as an instruction (no direct tool call): attempt 2"
    )
    assert [role for _, role, _ in run.calls] == ["b"]


def test_a_reroute_happens_once_per_step():
    team = {"a": Agent("a", Counting()), "b": Agent("b", Counting())}
    run = run_plan(chain(2), team, recovery=[Reroute({"a": "b", "b": "a"})], faults=[Fault(step="s1")])
    assert run.status == "failed" and len(run.trace.of_kind("rerouted")) == 1
    assert "Reroute: already rerouted once" in run.reason


def test_policies_are_tried_in_the_order_given():
    team = {"a": Agent("a", Counting()), "b": Agent("b", Counting())}
    faults = [Fault(step="s1", times=2)]
    first_retry = run_plan(chain(1), team, recovery=[Retry(1), Reroute({"a": "b"})], faults=faults)
    first_reroute = run_plan(chain(1), team, recovery=[Reroute({"a": "b"}), Retry(1)], faults=faults)
    assert [e.kind for e in first_retry.trace if e.kind in ("retried", "rerouted")] == ["retried", "rerouted"]
    assert [e.kind for e in first_reroute.trace if e.kind in ("retried", "rerouted")] == [
        "rerouted",
        "retried",
    ]


# --- replan --------------------------------------------------------------------------------------------


def test_replanning_keeps_the_finished_steps_and_runs_only_the_new_ones():
    agent = Counting()
    new = Plan([Step("s1", "a", "fix it"), Step("s2", "a", "finish with $s1", ["s1"])])
    planner = ScriptedPlanner(new)
    run = run_plan(
        chain(),
        {"a": Agent("a", agent)},
        "count to four",
        recovery=[Replan(planner)],
        faults=[Fault(step="s3")],
    )
    assert run.status == "done"
    assert run.plan.ids == ["s1", "s2", "r1_s1", "r1_s2"] and len(run.plans) == 2
    assert run.plan["r1_s2"].instruction == "finish with $r1_s1"  # references follow the new ids
    assert agent.tried == {"s1": 1, "s2": 1, "r1_s1": 1, "r1_s2": 1}  # nothing finished was redone
    assert run.deliverable == "r1_s2<r1_s1<>>"
    task, old_plan, outputs, failure = planner.requests[0]
    assert task == "count to four" and old_plan.ids == ["s1", "s2", "s3", "s4"]
    assert outputs == {"s1": "s1<>", "s2": "s2<s1<>>"}
    assert failure == "s3 (a) - InjectedFault: injected error fault at step 's3', attempt 1"
    assert [e.step_id for e in run.trace.of_kind("skipped")] == ["s4"]  # replaced, not run
    assert ("replan1", "planner") in [(s, r) for s, r, _ in run.calls]
    assert (
        run.trace.of_kind("replanned")[0].detail
        == "replan 1 of 2: kept 2 finished step(s), 2 new: r1_s1, r1_s2"
    )


def test_replanning_waits_until_the_plan_can_go_no_further_whatever_the_worker_count():
    wide = Plan(
        [Step(f"x{i}", "a", f"part {i}", duration=1.0 + i) for i in range(4)]
        + [Step("join", "a", "join", ["x0", "x1", "x2", "x3"])]
    )
    runs = []
    for workers in (1, 2, 4):
        planner = ScriptedPlanner(Plan([Step("s1", "a", "join again")]))
        run = run_plan(
            wide,
            {"a": Agent("a", Counting())},
            "t",
            workers=workers,
            recovery=[Replan(planner)],
            faults=[Fault(step="x0")],
        )
        runs.append((run.outputs, planner.requests[0][2]))
    assert runs[0] == runs[1] == runs[2]
    assert set(runs[0][1]) == {"x1", "x2", "x3"}  # every step not waiting on x0 ran before the replan


def test_replans_stop_at_their_bound():
    broken = Plan([Step("s1", "a", "still broken")])
    planner = ScriptedPlanner(broken, broken, broken)
    run = run_plan(
        chain(2),
        {"a": Agent("a", Counting())},
        "t",
        recovery=[Retry(1), Replan(planner, 2)],
        faults=[Fault(step="s2"), Fault(step="r1_s1"), Fault(step="r2_s1")],
    )
    assert run.status == "failed" and len(planner.requests) == 2
    bounds = "Retry(times=1): 1 of 1 retries used; Replan(max_replans=2): 2 of 2 replans used"
    assert run.reason.endswith(f"(recovery exhausted: {bounds})")
    assert run.trace.of_kind("stopped")[0].step_id == "r2_s1"


@pytest.mark.parametrize(
    "error",
    [
        PlanningFailed("no valid plan after 3 attempt(s)", [], [call(100)]),
        ModelError("the API answered 529 (overloaded)", [call(100)]),
    ],
)
def test_a_planner_that_fails_to_replan_ends_the_run_cleanly_with_its_calls_counted(error):
    planner = ScriptedPlanner(error=error)
    run = run_plan(
        chain(), {"a": Agent("a", Counting())}, "t", recovery=[Replan(planner)], faults=[Fault(step="s2")]
    )
    assert run.status == "failed" and run.reason.startswith("replanning failed: ")
    assert str(error) in run.reason and "s2 (a) - InjectedFault" in run.reason
    assert [(s, r) for s, r, _ in run.calls if r == "planner"] == [("replan1", "planner")]
    assert set(run.outputs) == {"s1"} and run.trace.of_kind("stopped")


def test_renaming_and_the_remaining_plan():
    plan = Plan(
        [Step("s1", "a", "x", tool="t", args={"q": "$s1 and $s9"}), Step("s2", "a", "use $s1", ["s1"])]
    )
    r1, r2 = renamed(plan, "r1_")
    assert (r1.id, dict(r1.args), r2.instruction, r2.depends_on) == (
        "r1_s1",
        {"q": "$r1_s1 and $s9"},
        "use $r1_s1",
        ("r1_s1",),
    )
    assert remaining(plan, {"s1"}).steps == (Step("s2", "a", "use $s1", ()),)
    assert remaining(plan, {"s1", "s2"}) is None


def test_bad_policies_are_refused_with_a_reason():
    team = {"a": Agent("a", Counting())}
    with pytest.raises(TypeError, match="a recovery policy is a Retry, Reroute or Replan, got str"):
        run_plan(chain(), team, recovery=["retry"])
    with pytest.raises(ValueError, match=r"Reroute to role\(s\) \['ghost'\], which have no agent"):
        run_plan(chain(), team, recovery=[Reroute({"a": "ghost"})])
    with pytest.raises(ValueError, match="at most one Replan"):
        run_plan(chain(), team, "t", recovery=[Replan(ScriptedPlanner()), Replan(ScriptedPlanner())])
    with pytest.raises(ValueError, match="Replan needs a planner here"):
        run_plan(chain(), team, "t", recovery=[Replan()])
    with pytest.raises(ValueError, match="replanning needs the task"):
        run_plan(chain(), team, recovery=[Replan(ScriptedPlanner())])
    with pytest.raises(TypeError, match="Replan needs a planner with a replan"):
        Replan(stub_planner)
    with pytest.raises(ValueError, match="Retry: times must be a whole number >= 0, got -1"):
        Retry(-1)


# --- on the task world -----------------------------------------------------------------------------------


def backup_agent(llm):
    tools = [ToolFunction(world.TOOLS[n], world.FUNCTIONS[n]) for n in ("lookup", "calculate")]
    system = "You stand in for any role of a team answering questions about the Skerrow Isles."
    return model_agent("backup", system, llm, tools, description="stands in for any role")


def solve(tasks, recovery, workers=1, seed=0):
    """Success count and the runs, with flaky steps (20% of attempts) and wrong tool arguments in plans."""
    llm = SimulatedLLM(seed=seed, error_rate=0.2, error_kinds=["wrong_tool_argument"])
    team = world_team(llm)
    planner = LLMPlanner(llm, team)
    executors = dict(team, backup=backup_agent(llm))
    runs = [
        orchestrate(
            t.question,
            planner,
            executors,
            workers=workers,
            recovery=recovery,
            faults=[Fault(probability=0.2, seed=i)],
        )
        for i, t in enumerate(tasks)
    ]
    return sum(t.check(r.deliverable) for t, r in zip(tasks, runs, strict=True)), runs


def test_replanning_recovers_tasks_that_no_recovery_loses():
    tasks = world.make_tasks(20, seed=1)
    none, _ = solve(tasks, [])
    replan, runs = solve(tasks, [Replan(max_replans=2)])
    both, _ = solve(tasks, [Retry(2), Replan(max_replans=2)])
    assert none <= 5 and replan >= none + 10 and both >= replan
    assert sum(len(r.plans) > 1 for r in runs) >= 10  # recovered by new plans, not by luck


def test_with_recovery_the_outcome_does_not_depend_on_the_worker_count():
    tasks = world.make_tasks(15, seed=2)
    policies = [Retry(1), Reroute({"researcher": "backup", "analyst": "backup"}), Replan(max_replans=2)]
    _, one = solve(tasks, policies, workers=1)
    _, eight = solve(tasks, policies, workers=8)
    assert [(r.status, r.outputs, r.calls, [p.ids for p in r.plans]) for r in one] == [
        (r.status, r.outputs, r.calls, [p.ids for p in r.plans]) for r in eight
    ]


def test_a_replanned_run_draws_as_a_timeline_with_every_attempt():
    import matplotlib

    matplotlib.use("Agg")
    from agentlab.viz import draw_timeline

    planner = ScriptedPlanner(Plan([Step("s1", "a", "again")]))
    run = run_plan(
        chain(3),
        {"a": Agent("a", Counting())},
        "t",
        recovery=[Retry(1), Replan(planner)],
        faults=[Fault(step="s2")],
    )
    ax = draw_timeline(run, by="step")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["s1", "r1_s1", "s2"]  # s2: tried twice, replaced
    assert len([p for p in ax.patches if p.get_gid() == "s2"]) == 2
