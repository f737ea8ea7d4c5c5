"""The model layer: one interface (`base`), and which backend is active (`backend`).

The simulated model and the Claude backend arrive with notebook 03; until then
every notebook runs on stubs. Importing the kit never needs a key.
"""

from agentlab.llm.backend import BACKENDS, choose_backend, describe_backend
from agentlab.llm.base import (
    LLM,
    Completion,
    Message,
    ModelError,
    Tool,
    ToolCall,
    Usage,
    assistant_message,
    tool_results_message,
)

__all__ = [
    "BACKENDS",
    "LLM",
    "Completion",
    "Message",
    "ModelError",
    "Tool",
    "ToolCall",
    "Usage",
    "assistant_message",
    "choose_backend",
    "describe_backend",
    "tool_results_message",
]
