"""agentlab: a teaching kit for the planner-executor pattern of LLM agents.

Read the modules in this order: plan (what a plan is), agents (who does a step),
planners (who writes the plan), run (the loop that ties them together), trace
(what the loop records).
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
