"""Helpers an exercise asks the learner not to call, and the trap that makes them raise.

An exercise that teaches how `Plan.critical_path` works asks the learner to write it, not to call
it; its text says so, and `FORBIDDEN` lists such helpers by exercise ("module:attribute"). While the
learner's function for that exercise runs, and only then, each helper raises `ForbiddenHelper`
with `refusal`'s words; a check or the kit may still call it. The same list serves twice: the
learner's `check()` traps the helpers in the notebook's own process (`forbidding`), and the
grader's sandbox kernel traps them there (`kernel.Kernel.forbid`), so the feedback and the grade
agree.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Helpers an exercise asks the learner not to call (its text says so): module:attribute.
FORBIDDEN = {
    "02.critical-path": ["agentlab.plan:Plan.critical_path"],
    "02.makespan": ["agentlab.schedule:virtual_schedule", "agentlab.run:run_plan"],
    "04.retry-then-reroute": ["agentlab.run:run_plan"],  # "does this for you; write it once yourself"
    "05.team-calls": ["agentlab.hierarchy:Hierarchy.solve"],  # "without running anything"
    "05.rollup": ["agentlab.hierarchy:rollup", "agentlab.hierarchy:Node.own_calls"],
    "06.crossover": ["agentlab.experiments:longest_winning_chain"],
    "07.router-share": ["agentlab.routing:random_router", "agentlab.routing:perfect_router"],
    "11.cache-bill": ["agentlab.llm.usage:cost", "agentlab.llm.usage:usage_report"],
    "11.first-step": [
        "agentlab.plan:Plan.critical_path",
        "agentlab.schedule:virtual_schedule",
        "agentlab.run:run_plan",
    ],
}


class ForbiddenHelper(RuntimeError):
    """The learner's answer called a helper its exercise asks them not to use (its text says so)."""


def refusal(exercise_id: str, path: str) -> str:
    return f"{exercise_id} asks you not to call {path}: write it yourself"


@contextmanager
def forbidding(exercise_id: str, answer: Any) -> Iterator[Any]:
    """While a check runs: the helpers its exercise forbids (`FORBIDDEN`) raise when the
    learner's function calls them, as they do in the grader's sandbox, and only then (a check may call
    them itself). Yields the answer to check: the learner's function, wrapped to say when it runs."""
    helpers = FORBIDDEN.get(exercise_id, [])
    if not helpers or not callable(answer):
        yield answer
        return
    running = [0]

    @functools.wraps(answer)
    def answering(*args: Any, **kwargs: Any) -> Any:
        running[0] += 1
        try:
            return answer(*args, **kwargs)
        finally:
            running[0] -= 1

    undo: list[tuple[Any, str, Any]] = []
    for helper in helpers:
        module_name, path = helper.split(":")
        owner: Any = importlib.import_module(module_name)
        *parents, attribute = path.split(".")
        for part in parents:
            owner = getattr(owner, part)
        original = getattr(owner, attribute)

        def trap(*args: Any, _original: Any = original, _path: str = path, **kwargs: Any) -> Any:
            if running[0]:
                raise ForbiddenHelper(refusal(exercise_id, _path))
            return _original(*args, **kwargs)

        spaces = [vars(m) for name, m in list(sys.modules.items()) if name.startswith("agentlab") and m]
        spaces.append(getattr(answer, "__globals__", {}))  # the learner's own import of it
        undo.append((owner, attribute, original))
        setattr(owner, attribute, trap)
        for space in spaces:
            for key, value in list(space.items()):
                if value is original:
                    undo.append((space, key, original))
                    space[key] = trap
    try:
        yield answering
    finally:
        for where, key, original in reversed(undo):
            if isinstance(where, dict):
                where[key] = original
            else:
                setattr(where, key, original)
