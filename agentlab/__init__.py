"""agentlab: a teaching kit for the planner-executor pattern of LLM agents.

The modules, in the order the notebooks build them (each one idea; read run.py first):

- 01  run (the loop: orchestrate, run_plan), plan (what a plan is, and its `$id`
      language), agents (who does a step), attempt (one try at a step), threads (the
      thread it runs on), planners (who writes the plan), trace (what a run leaves
      behind: the trace and `Run`)
- 02  schedule (who runs what when, on which clock), viz (graphs and timelines),
      widgets (the editor)
- 03  llm/ (one model interface: simulated, Claude, replay, usage and prices),
      prompts (every phrase that is written and read back), world/ (the Skerrow
      Isles: records, tools, tasks with gold answers, and the simulator's knowledge
      of them: solver, plans, mistakes)
- 04  monitor (noticing failure, auditing outputs), recovery (retry, reroute,
      replan), budget, faults, checkpoint, valid (what a valid number is), mast
      (a run's failures named in MAST's taxonomy)
- 05  hierarchy (managers, leads and workers), meter (one budget for many runs)
- 06  experiments (the p^n law: algebra, Monte Carlo, measurement)
- 07  react (one agent), compare (topologies side by side), evidence (paired tests: is
      one setup better on the same tasks?), intervals (95% that means 95%), verdicts
      (several tests at once; "not much worse"), routing, plots
- 08  handoffs (one agent at a time), routing by size, context isolation
- 09  guardrails (permissions, approvals, audit), hijack (injection experiments)
- 10  cluster (steps and whole tasks on a Dask cluster: local_cluster, run_tasks)
- 11  llm/cache (prompt caching: what a request reads and writes), streaming (a planner
      that streams its plan into the running loop)
- 12  capstone (your own team against a reference: the trade desk's tasks, `evaluate`),
      world/capstone (its questions and the convert tool), world/capstone_model (the
      simulator on them)
- and course/, off the learner's path: building, checking and grading exercises,
  the checks per notebook, the `agentlab` command
"""

from agentlab.agents import STUB_TEAM, Agent, Work
from agentlab.llm import describe_backend
from agentlab.plan import Plan, PlanError, Step
from agentlab.planners import stub_planner
from agentlab.run import Run, orchestrate, run_plan
from agentlab.trace import Event, Trace

__version__ = "0.1.0"

__all__ = [
    "STUB_TEAM",
    "Agent",
    "Event",
    "Plan",
    "PlanError",
    "Run",
    "Step",
    "Trace",
    "Work",
    "describe_backend",
    "orchestrate",
    "run_plan",
    "stub_planner",
]
