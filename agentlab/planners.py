"""Planners turn a task into a `Plan`.

The stub planner below has no model: it recognises a multi-part task by its
wording and returns a fixed decomposition, and gives anything else to a single
agent. It is the shape a real planner has (task in, validated plan out) with
the judgement taken out, so the orchestration around it can be studied alone.
"""

from __future__ import annotations

import re

from agentlab.plan import Plan, Step

MULTI_PART = re.compile(r"\b(report|brief|overview|review)\b", re.IGNORECASE)


def stub_planner(task: str) -> Plan:
    """Decompose a report-like task into four roles; give any other task to one writer."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    if not MULTI_PART.search(task):
        return Plan([Step("s1", "writer", task.strip())])
    return Plan(
        [
            Step("s1", "researcher", "Collect three facts the report needs."),
            Step("s2", "coder", "Sketch the core loop in one line of code."),
            Step("s3", "critic", "Name the biggest risk in the facts.", depends_on=("s1",)),
            Step(
                "s4",
                "writer",
                "Combine the facts, the sketch and the risk into the report.",
                depends_on=("s1", "s2", "s3"),
            ),
        ]
    )
