"""The model layer: one interface, three backends, and what the calls cost.

- `base`: the interface every model answers (`LLM.complete` -> `Completion`), and `redact`,
  which hides keys and URL passwords in anything the kit prints or saves;
- `simulated`: the offline, deterministic stand-in every notebook runs on (`SimulatedLLM`);
- `anthropic`: real Claude through the official SDK (`AnthropicLLM`);
- `replay`: record any model's calls to a file and replay them offline;
- `usage`: a dated price table and usage roll-ups per role and model;
- `backend`: which model the environment asks for (`make_llm`, `describe_backend`).

Importing the kit never needs a key: the Claude backend builds its SDK client on
its first call.
"""

from agentlab.llm.anthropic import AnthropicLLM
from agentlab.llm.backend import BACKENDS, choose_backend, describe_backend, make_llm
from agentlab.llm.base import (
    LLM,
    Completion,
    Message,
    ModelError,
    Tool,
    ToolCall,
    Usage,
    assistant_message,
    redact,
    tool_results_message,
)
from agentlab.llm.replay import RecordingLLM, ReplayLLM
from agentlab.llm.simulated import SimulatedLLM
from agentlab.llm.usage import PRICES, Price, UsageReport, cost, usage_report

__all__ = [
    "BACKENDS",
    "LLM",
    "PRICES",
    "AnthropicLLM",
    "Completion",
    "Message",
    "ModelError",
    "Price",
    "RecordingLLM",
    "ReplayLLM",
    "SimulatedLLM",
    "Tool",
    "ToolCall",
    "Usage",
    "UsageReport",
    "assistant_message",
    "choose_backend",
    "cost",
    "describe_backend",
    "make_llm",
    "redact",
    "tool_results_message",
    "usage_report",
]
