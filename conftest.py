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


@pytest.fixture
def local_without_proxy(monkeypatch):
    """127.0.0.1 is reached directly, whatever proxy the environment names (as in some CI): for the
    modules that talk HTTP to a local server (they mark themselves with it)."""
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, ",".join(filter(None, ("127.0.0.1", os.environ.get(name)))))


# `make test` hands whole files to its workers (--dist loadfile), in the order collected. Files
# that take longest go first, so that no long file starts last and runs on alone while the other
# workers idle. Measured worker-seconds decide the order (`pytest --durations=0`); a file not named
# here keeps its place after them, so a stale list costs a little time, never a test.
LONGEST_FIRST = (  # worker-seconds under `make test` on 2 cores, measured 2026-11-29
    "tests/test_notebooks_claude.py",  # 62
    "tests/test_browser.py",  # 45
    "tests/test_capstone_grade.py",  # 25
    "tests/test_docs_commands.py",  # 24
    "tests/test_check_keys.py",  # 23
    "notebooks/08_migration_and_handoffs.ipynb",  # 22
    "tests/test_grading_attacks.py",  # 22
    "tests/test_course.py",  # 20
    "notebooks/07_one_agent_or_a_team.ipynb",  # 19
    "tests/test_checks.py",  # 18
    "notebooks/10_across_machines.ipynb",  # 18
    "tests/test_interop_mcp.py",  # 17
    "tests/test_wrong_answers_nb04_05.py",  # 16
    "tests/test_grading_sandbox.py",  # 16
    "tests/test_grading_files.py",  # 14
    "notebooks/05_hierarchical_teams.ipynb",  # 13
    "tests/test_kernel_fork.py",  # 13
    "tests/test_cluster.py",  # 11
    "tests/test_nbgrader_export.py",  # 11
    "tests/test_widgets.py",  # 10
    "tests/test_gateway.py",  # 10
    "tests/test_serve.py",  # 10
    "notebooks/04_monitor_and_replan.ipynb",  # 9
    "tests/test_checks_nb07.py",  # 9
    "notebooks/09_guardrails.ipynb",  # 8
    "tests/test_serve_load.py",  # 8
    "tests/test_intervals.py",  # 8
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    # sort is stable: a file's own tests, and the files not named, keep their order
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
