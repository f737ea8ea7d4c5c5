"""Bridges from the kit to the interfaces practitioners use, off the learner's path.

Each module here needs an optional extra and says which when it is imported without it:

- `otel`: a `Run` as OpenTelemetry spans in the GenAI conventions, sent over OTLP/HTTP to any
  tracing UI (`pip install -e '.[trace]'` in the kit's folder);
- `mcp`: the task world's tools as an MCP server, and MCP tools as an executor's tools
  (`pip install -e '.[mcp]'`); `mcp_pins`: a permission policy from MCP's tool annotations, and
  the pinned tool list that keeps a server from changing its claims after review.

`import agentlab` never imports this package; the offline course never needs it.
"""

from __future__ import annotations

import importlib.util


def require(module: str, extra: str) -> None:
    """Raise a one-line ImportError naming the extra to install when `module` is missing."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        found = False
    if not found:
        install = f"pip install -e '.[{extra}]' in the kit's folder (or make setup-test)"
        raise ImportError(f"this needs {module!r}: {install}")
