"""Backend selection: simulated unless the learner asks for Claude or a replay.

The environment decides, so the same notebook runs offline in class and on Claude at home:

- `AGENTLAB_BACKEND` = simulated | anthropic | replay wins when set;
- otherwise a present `ANTHROPIC_API_KEY` selects Claude, and no key the simulator.

With Claude: `AGENTLAB_PLANNER_MODEL` / `AGENTLAB_EXECUTOR_MODEL` choose the models and
`ANTHROPIC_BASE_URL` points at another Anthropic-compatible server (e.g. a local Ollama).
`AGENTLAB_RECORD=calls.jsonl` records every call of the chosen backend to that file;
`AGENTLAB_BACKEND=replay` with `AGENTLAB_REPLAY=calls.jsonl` answers from it, offline. Both paths
are relative to the folder the command was typed in, not the kernel's (replay.typed_path).
The test suite pins `simulated`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agentlab.llm.anthropic import AnthropicLLM, configured_models
from agentlab.llm.base import LLM, redact
from agentlab.llm.replay import ReplayLLM, recording_from_env, replay_from_env, typed_path

BACKENDS = ("simulated", "anthropic", "replay")


def choose_backend(env: Mapping[str, str] | None = None) -> str:
    """Return the name of the backend the environment asks for."""
    env = os.environ if env is None else env
    asked = env.get("AGENTLAB_BACKEND", "").strip().lower()
    if asked:
        if asked not in BACKENDS:
            raise ValueError(f"AGENTLAB_BACKEND={asked!r} is not one of {BACKENDS}")
        return asked
    return "anthropic" if env.get("ANTHROPIC_API_KEY", "").strip() else "simulated"


def make_llm(backend: str | None = None, *, env: Mapping[str, str] | None = None, **options: Any) -> LLM:
    """Build the backend `backend` names (default: the one the environment asks for).

    `options` go to its constructor: e.g. `seed=` and `error_rate=` for the simulator,
    `planner_model=` or `base_url=` for Claude, `path=` for a replay.
    """
    env = os.environ if env is None else env
    name = choose_backend(env) if backend is None else backend.strip().lower()
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    if name == "replay":
        path = options.pop("path", None)
        return ReplayLLM(path, **options) if path else replay_from_env(env)
    if name == "simulated":
        from agentlab.llm.simulated import SimulatedLLM  # imported only when asked for

        llm: LLM = SimulatedLLM(**options)
    else:
        planner, executor = configured_models(env)
        options.setdefault("planner_model", planner)
        options.setdefault("executor_model", executor)
        llm = AnthropicLLM(**options)
    return recording_from_env(llm, env)


def describe_backend(env: Mapping[str, str] | None = None) -> str:
    """One line saying which backend is active and with which models; never shows a key (nor a
    password inside ANTHROPIC_BASE_URL)."""
    env = os.environ if env is None else env
    name = choose_backend(env)
    if name == "simulated":
        line = "Backend: simulated (offline, deterministic; no key needed)."
    elif name == "anthropic":
        planner, executor = configured_models(env)
        line = f"Backend: anthropic (Claude via the official SDK): planner {planner}, executor {executor}"
        server = env.get("ANTHROPIC_BASE_URL", "").strip()
        if server:
            line += f", server {server}"
        elif not env.get("ANTHROPIC_API_KEY", "").strip():
            line += "; no ANTHROPIC_API_KEY is set, so calls will fail"
        line += "."
    else:
        path = env.get("AGENTLAB_REPLAY", "").strip()
        if not path:
            line = "Backend: replay, but AGENTLAB_REPLAY names no recording."
        elif not typed_path(path, env).exists():
            line = f"Backend: replay of {typed_path(path, env)}, which does not exist."
        else:
            path = typed_path(path, env)
            line = (
                f"Backend: replay of {path} (offline; {len(ReplayLLM(path))} recorded calls; no key needed)."
            )
    record = env.get("AGENTLAB_RECORD", "").strip()
    if record and name != "replay":
        line += f" Recording every call to {typed_path(record, env)}."
    return redact(line)
