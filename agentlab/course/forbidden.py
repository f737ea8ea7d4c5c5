"""Helpers an exercise asks the learner not to call: trapped for the feedback, absent for the grade.

An exercise that teaches how `Plan.critical_path` works asks the learner to write it, not to call
it; its text says so, and `FORBIDDEN` lists such helpers by exercise ("module:attribute"). Calling
one raises `ForbiddenHelper` with `refusal`'s words. The same list serves twice:

- the learner's `check()`, in the notebook's own process, traps the helpers while their function
  runs (`forbidding`): feedback only, and a check or the kit may still call them;
- the grader grades such an exercise in a sandbox of its own whose kit lacks them (`kit_without`):
  a copy of the kit in which each helper's body only raises, bound over the kit. A trap can be
  undone (a reload, the trap's closure, `gc`, the module's file read again); code that was never
  loaded cannot be found.
"""

from __future__ import annotations

import ast
import functools
import importlib
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
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


def kit_without(forbidden: dict[str, list[str]], kit: Path, into: Path) -> Path:
    """A copy of the kit folder `kit` inside `into` in which every helper `forbidden` lists
    ({exercise: ["module:attribute", ...]}) keeps its name, signature and docstring, and its body
    only raises `ForbiddenHelper` with its exercise's refusal. Without caches
    (`__pycache__` would hold the original's bytecode) and without the grading cases (`hidden/`
    stays an empty folder, the sandbox's mount point). Returns the copy's folder."""
    copy = Path(into) / kit.name
    shutil.copytree(kit, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "hidden"))
    (copy / "course" / "hidden").mkdir(exist_ok=True)
    for exercise_id, helpers in forbidden.items():
        for helper in helpers:
            module_name, path = helper.split(":")
            parts = module_name.split(".")[1:]
            package = copy.joinpath(*parts)
            source = package / "__init__.py" if package.is_dir() else package.with_suffix(".py")
            emptied = _emptied(source.read_text(encoding="utf-8"), path, exercise_id)
            source.write_text(emptied, encoding="utf-8")
    return copy


def _emptied(source: str, path: str, exercise_id: str) -> str:
    """`source` with the body of the function at `path` ("Plan.critical_path") replaced by a raise."""
    scope: Any = ast.parse(source)
    for name in path.split("."):
        found = [n for n in scope.body if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == name]
        if not found:
            raise LookupError(f"no {path} to forbid in the kit's source")
        scope = found[-1]
    if not isinstance(scope, ast.FunctionDef):
        raise LookupError(f"{path} is not a function: only a function's body can be left out")
    first = scope.body[0]
    kept = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)  # the docstring
    if first.lineno == scope.lineno:
        raise LookupError(f"{path} is written on one line: put its body on lines of its own")
    lines = source.splitlines(keepends=True)
    start = first.end_lineno if kept else first.lineno - 1  # the first line that goes
    indent = " " * first.col_offset
    raising = (
        f"{indent}from agentlab.course.forbidden import ForbiddenHelper, refusal\n"
        f"{indent}raise ForbiddenHelper(refusal({exercise_id!r}, {path!r}))\n"
    )
    return "".join(lines[:start] + [raising] + lines[scope.end_lineno :])
