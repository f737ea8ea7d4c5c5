"""`agentlab gateway check-models`: which of the class's model ids the upstream no longer lists.

A retired model id breaks every notebook that names it at once. The class's ids are the kit's
planner and executor models (as configured: `llm.anthropic.configured_models`) and every model
a learner is allowed; each one the upstream's `GET /v1/models` does not list is named with the
nearest id it does list, so the instructor can fix the class before the lab, not during it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from agentlab.gateway.upstream import Upstream, UpstreamError
from agentlab.llm.anthropic import configured_models

MAX_PAGES = 20  # of 1000 models each: a bound on following `has_more`


@dataclass(frozen=True)
class Gone:
    """A configured model id the upstream does not list, and the nearest one it does ("" if none)."""

    model: str
    nearest: str


def listed_models(upstream: Upstream) -> list[str]:
    """Every model id the upstream lists (following its pages). ValueError says why not."""
    ids: list[str] = []
    after = ""
    for _ in range(MAX_PAGES):
        try:
            answer = upstream.send("GET", f"/v1/models?limit=1000{after}", None, {})
            data = answer.read()
            upstream.finished(answer, whole=True)
        except (UpstreamError, OSError) as e:
            raise ValueError(f"cannot list the upstream's models: {e}") from None
        try:
            page = json.loads(data) if answer.status == 200 else None
            ids += [m["id"] for m in page["data"]]
        except (ValueError, TypeError, KeyError):
            raise ValueError(f"the upstream's model list was not one (status {answer.status})") from None
        if not page.get("has_more") or not page.get("last_id"):
            return ids
        after = f"&after_id={page['last_id']}"
    return ids


def class_models(allowed: Iterable[tuple[str, ...]]) -> list[str]:
    """The kit's configured models and every learner's allowed ones, each once, in order."""
    return list(dict.fromkeys([*configured_models(), *(m for models in allowed for m in models)]))


def gone(configured: Iterable[str], listed: list[str]) -> list[Gone]:
    """The configured ids not in `listed`, each with its nearest listed id."""
    out = []
    for model in configured:
        if model not in listed:
            close = difflib.get_close_matches(model, listed, n=1, cutoff=0.0)
            out.append(Gone(model, close[0] if close else ""))
    return out
