"""Every test, and every notebook kernel nbval starts, runs on the simulated backend."""

import os

os.environ["AGENTLAB_BACKEND"] = "simulated"
os.environ.pop("ANTHROPIC_API_KEY", None)
