"""agentlab: a teaching kit for the planner-executor pattern of LLM agents.

The modules, in the order the notebooks build them (each one idea):

- 01  plan (what a plan is), agents (who does a step), planners (who writes the
      plan), run (the loop that ties them together), trace (what the loop records)
- 02  schedule (who runs what when), viz (graphs and timelines), widgets (the editor)
- 03  llm/ (one model interface: simulated, Claude, replay, usage and prices),
      world/ (the Skerrow Isles: records, tools, tasks with gold answers)
- 04  monitor (noticing failure), recovery (retry, reroute, replan), budget,
      faults, checkpoint
- 05  hierarchy (managers, leads and workers)
- 06  experiments (the p^n law: algebra, Monte Carlo, measurement)
- 07  react (one agent), compare (topologies side by side), routing, plots
- 08  guardrails (permissions, approvals, audit), hijack (injection experiments)
- and course, checks (exercises and their automatic checks), cli (the `agentlab` command)
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
