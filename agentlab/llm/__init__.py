"""The model layer: one interface (`base`), and which backend is active (`backend`).

Importing the kit never needs a key: the Claude backend builds its SDK client on
its first call.
"""

from agentlab.llm.anthropic import AnthropicLLM
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
from agentlab.llm.usage import PRICES, Price, UsageReport, cost, usage_report

__all__ = [
    "BACKENDS",
    "LLM",
    "AnthropicLLM",
    "Completion",
    "Message",
    "PRICES",
    "Price",
    "ModelError",
    "Tool",
    "ToolCall",
    "Usage",
    "UsageReport",
    "assistant_message",
    "choose_backend",
    "cost",
    "describe_backend",
    "tool_results_message",
    "usage_report",
]
