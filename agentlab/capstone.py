"""The capstone: design your own planner-executor team and measure it (placeholder interface).

This file fixes the names the capstone notebook, its grader and the leaderboard share; the
task family and the reference team behind them are being written.

- `capstone_tasks(count, seed)`: tasks of the capstone's family (a `Task` with its gold answer);
- `dev_tasks(count)`: the learner's development set (a public seed);
- `capstone_setup(llm)`: the `Setup` a team is run with;
- `reference_team(task, setup)`: the team every submission is compared with;
- a learner's team is a function `my_team(task, setup) -> Outcome` (or the answer as a string);
- `BUDGET_PER_TASK`: dollars a team may spend on one task; the grader stops it there.
"""

from __future__ import annotations

from agentlab.compare import Outcome, Setup, plan_execute
from agentlab.llm.base import LLM
from agentlab.world import Task, make_tasks

BUDGET_PER_TASK = 0.25  # USD
DEV_SEED = 12


def capstone_tasks(count: int, seed: int) -> list[Task]:
    """`count` tasks of the capstone family, the same for the same (count, seed)."""
    return make_tasks(count, seed=1000 + seed)


def dev_tasks(count: int = 40) -> list[Task]:
    """The development set the notebook measures on."""
    return capstone_tasks(count, DEV_SEED)


def capstone_setup(llm: LLM) -> Setup:
    """The setup a capstone team runs with: the simulator's tiers, tool time, workers."""
    return Setup(llm=llm)


def reference_team(task: Task, setup: Setup) -> Outcome:
    """The reference: plan, then run the steps in order."""
    return plan_execute(task, setup)
