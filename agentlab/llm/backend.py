"""Backend selection: simulated unless the learner asks for Claude.

`AGENTLAB_BACKEND` (simulated | anthropic) wins when set; otherwise a present
`ANTHROPIC_API_KEY` selects Claude. The test suite pins `simulated`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

BACKENDS = ("simulated", "anthropic")


def choose_backend(env: Mapping[str, str] | None = None) -> str:
    """Return the name of the backend the environment asks for."""
    env = os.environ if env is None else env
    asked = env.get("AGENTLAB_BACKEND", "").strip().lower()
    if asked:
        if asked not in BACKENDS:
            raise ValueError(f"AGENTLAB_BACKEND={asked!r} is not one of {BACKENDS}")
        return asked
    return "anthropic" if env.get("ANTHROPIC_API_KEY", "").strip() else "simulated"


def describe_backend(env: Mapping[str, str] | None = None) -> str:
    """One line saying which backend is active and what that means today."""
    if choose_backend(env) == "simulated":
        return "Backend: simulated (offline, deterministic; no key needed)."
    return (
        "Backend: anthropic (asked for by your environment). Notebooks 00-02 use stub agents "
        "either way; the Claude backend arrives with notebook 03."
    )
