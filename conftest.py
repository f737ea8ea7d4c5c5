"""Every test, and every notebook kernel nbval starts, runs on the simulated backend."""

import os
import socket

import pytest

os.environ["AGENTLAB_BACKEND"] = "simulated"
os.environ.pop("ANTHROPIC_API_KEY", None)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a real socket fails the test (for tests of the real SDK, offline)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
