"""The plan's own language: `$s1` in a step's instruction or arguments stands for step s1's output.

A planner writes `$id` where a step needs an earlier step's result (LLMCompiler's notation); the
orchestrator fills it in before the step runs. One walker (`walk`) finds, fills in and renames
references, in text or in the mappings and lists a tool's arguments are made of. `agentlab.plan`
hands these on, so `from agentlab.plan import fill_in` is where the kit imports them from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

REFERENCE = re.compile(r"\$([A-Za-z]\w*)")  # "$s1": the output of step s1, LLMCompiler-style


def walk(value: Any, replace: Callable[[re.Match], str]) -> Any:
    """`value` (text, or mappings and lists holding text) with each `$id` match replaced by
    `replace(match)`. Mappings come back as dicts, tuples as lists, anything else as it was."""
    if isinstance(value, str):
        return REFERENCE.sub(replace, value)
    if isinstance(value, Mapping):
        return {k: walk(v, replace) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [walk(v, replace) for v in value]
    return value


def references(value: Any) -> set[str]:
    """The step ids that `value` (text, or args holding text) refers to as `$id`."""
    found: set[str] = set()
    walk(value, lambda m: found.add(m.group(1)) or m.group(0))  # note each id, change nothing
    return found


def resolve(value: Any, context: Mapping[str, str], step_id: str = "?") -> Any:
    """Replace each `$id` in `value` with the output of step `id`, which must be in `context`."""

    def output(match: re.Match) -> str:
        if match[1] in context:
            return context[match[1]]
        have = ", ".join(context) or "none"
        raise ValueError(f"step {step_id!r} refers to {match[0]}, which is not one of its inputs ({have})")

    return walk(value, output)


def fill_in(text: str, outputs: Mapping[str, str]) -> str:
    """`text` with each `$id` replaced by that step's output; unknown references stay as they are."""
    return walk(text, lambda m: outputs.get(m.group(1), m.group(0)))
