"""How far a guard may trust what an MCP server says about its tools: effects from annotations, and pins.

A server lists each tool with annotations (readOnlyHint, destructiveHint, openWorldHint...), and
`annotation_effects(listed)` turns them into the declared effects a `guardrails.Guard` reads. But
annotations are *claims by the server*: a server can call a tool that deletes "read-only", or change
a tool after the plan was made. So `pin(listed)` keeps the tool list someone reviewed when the plan
was made (each tool's fingerprint, and the effects declared then), and `pinned_effects(pin, now)`
marks undeclared any tool that is new or whose definition changed since, so a policy refuses it.
Lesson 09 (section 8) shows a server that lies, and the pin that stops it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentlab.guardrails import UNDECLARED
from agentlab.interop.mcp import Listed


def annotation_effects(listed: Sequence[Listed]) -> dict[str, tuple[str, ...]]:
    """The guard's declared effects from MCP annotations: a read-only tool has none; any other
    "write"s, or "delete"s if destructive (MCP's default when not read-only), and "send"s too if it
    reaches an open world (also MCP's default). A tool without annotations is undeclared."""
    effects = {}
    for tool in listed:
        hints = tool.annotations
        if hints is None:
            effects[tool.spec.name] = (UNDECLARED,)
        elif hints.get("readOnlyHint", False):
            effects[tool.spec.name] = ()
        else:
            change = "delete" if hints.get("destructiveHint", True) else "write"
            effects[tool.spec.name] = (change, "send") if hints.get("openWorldHint", True) else (change,)
    return effects


@dataclass(frozen=True)
class Pin:
    """The tool list a plan was made with (after someone reviewed it): each tool's fingerprint."""

    fingerprints: Mapping[str, str] = field(default_factory=dict)
    effects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def changed(self, listed: Sequence[Listed]) -> dict[str, str]:
        """Tools now listed that the pin does not hold as they are: name -> what is wrong."""
        wrong = {}
        for tool in listed:
            pinned = self.fingerprints.get(tool.spec.name)
            if pinned is None:
                wrong[tool.spec.name] = "not in the pinned tool list"
            elif pinned != tool.fingerprint():
                wrong[tool.spec.name] = "its definition changed since the plan was made"
        return wrong


def pin(listed: Sequence[Listed]) -> Pin:
    """Pin `listed`: their fingerprints, and the effects their annotations declared then."""
    return Pin({t.spec.name: t.fingerprint() for t in listed}, annotation_effects(listed))


def pinned_effects(pinned: Pin, listed: Sequence[Listed]) -> dict[str, tuple[str, ...]]:
    """Declared effects for the tools a server lists now: the pinned ones as pinned; any tool
    that is new or changed is undeclared, so a policy never trusts what it claims now."""
    changed = pinned.changed(listed)
    return {t.spec.name: (UNDECLARED,) if t.spec.name in changed else tuple(pinned.effects[t.spec.name])
            for t in listed}
