"""The capstone's held-out set and the grader's model: the instructor's, never the learner's.

This folder never ships (`agentlab course release` leaves `hidden/` out) and is an empty folder
inside the grading sandbox. Change the seeds before a class (and keep them to yourself): the same
seeds give the same held-out tasks and the same simulated model, so every submission, and the
reference team, is measured on the same tasks with the same model.
"""

from __future__ import annotations

from agentlab.capstone import capstone_tasks
from agentlab.llm.base import LLM
from agentlab.world import Task

HELD_OUT_SEED = 90417  # the tasks: never the dev set's seed (agentlab.capstone.DEV_SEED)
HELD_OUT_COUNT = 50  # enough for a paired comparison at the leaderboard's margin
SIMULATOR_SEED = 52711  # the grader's simulated model
ERROR_RATE = 0.15  # its mistakes per call, as the capstone notebook's simulator makes them


def held_out() -> list[Task]:
    """The tasks every capstone submission is graded on, with their gold answers."""
    return capstone_tasks(HELD_OUT_COUNT, HELD_OUT_SEED)


def grader_llm() -> LLM:
    """A fresh copy of the grader's model: the capstone's own simulator (`capstone_llm`) when the kit
    names one, else the simulator at ERROR_RATE."""
    import agentlab.capstone as capstone

    if hasattr(capstone, "capstone_llm"):
        return capstone.capstone_llm(SIMULATOR_SEED)
    from agentlab.llm.simulated import SimulatedLLM

    return SimulatedLLM(seed=SIMULATOR_SEED, error_rate=ERROR_RATE)
