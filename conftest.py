"""Every test, and every notebook kernel nbval starts, runs on the simulated backend; those kernels
listen on Unix sockets, not TCP ports (tests/kernel_sockets.py says why), and are forked from a
process that has imported what they all import (tests/kernel_fork.py)."""

import os
import socket

import pytest

os.environ["AGENTLAB_BACKEND"] = "simulated"
os.environ.pop("ANTHROPIC_API_KEY", None)


def pytest_configure(config):
    # nbval builds each notebook's kernel manager from this name: give it one on Unix sockets,
    # whose kernels are forked
    import nbval.kernel
    from kernel_sockets import ForkedKernelManager

    nbval.kernel.KernelManager = ForkedKernelManager


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a real socket fails the test (for tests of the real SDK, offline)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# `make test` hands whole files to its workers (--dist loadfile), in the order collected. Files
# that take longest go first, so that no long file starts last and runs on alone while the other
# workers idle. Measured worker-seconds decide the order (`pytest --durations=0`); a file not named
# here keeps its place after them, so a stale list costs a little time, never a test.
LONGEST_FIRST = (
    "tests/test_notebooks_claude.py",
    "tests/test_browser.py",
    "tests/test_course.py",
    "notebooks/08_migration_and_handoffs.ipynb",
    "tests/test_plan_properties.py",
    "tests/test_interop_mcp.py",
    "notebooks/07_one_agent_or_a_team.ipynb",
    "tests/test_nbgrader_export.py",
    "notebooks/05_hierarchical_teams.ipynb",
    "notebooks/10_across_machines.ipynb",
    "tests/test_cluster.py",
    "tests/test_grading_sandbox.py",
    "tests/test_checks.py",
    "tests/test_serve.py",
    "notebooks/06_error_propagation.ipynb",
    "notebooks/09_guardrails.ipynb",
    "notebooks/04_monitor_and_replan.ipynb",
    "tests/test_evidence.py",
    "tests/test_checks_nb09.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    # sort is stable: a file's own tests, and the files not named, keep their order
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
