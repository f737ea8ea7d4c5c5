"""The model layer. For now: which backend the kit would use, said in one line.

The simulated model and the Claude backend arrive with notebook 03; until then
every notebook runs on stubs, and importing the kit never needs a key.
"""

from agentlab.llm.backend import BACKENDS, choose_backend, describe_backend

__all__ = ["BACKENDS", "choose_backend", "describe_backend"]
