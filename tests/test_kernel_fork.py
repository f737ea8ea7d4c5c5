"""nbval's kernels are forked from a zygote that has imported matplotlib, ipykernel and the rest once
(tests/kernel_fork.py). These tests hold it to its promise: a forked kernel is a kernel like any
other, one a learner's notebook could not tell from a fresh one, and nothing outlives its run."""

import ctypes
import json
import os
import signal
import sys
import time
from pathlib import Path

import kernel_fork
import pytest
from kernel_sockets import ForkedKernelManager, UnixSocketKernelManager, start_kernel, stop_kernel

PR_SET_CHILD_SUBREAPER = 36
NOTEBOOKS = str(Path(__file__).parent.parent / "notebooks")

# what a notebook could see of how its kernel started, printed as JSON
PROBE = r"""
import json, os, sys
import matplotlib.pyplot as plt
backend = plt.get_backend()
get_ipython().run_line_magic("matplotlib", "inline")  # a PNG to compare, whatever backend the shell chose
plt.plot([1, 3, 2])
plt.show()
print(json.dumps({
    "cwd": os.getcwd(), "path": sys.path, "env": dict(os.environ), "argv0": sys.argv[0],
    "own session": os.getsid(0) == os.getpid() == os.getpgid(0),
    "backend": backend,
    "kit modules": sorted(name for name in sys.modules if name.startswith("agentlab")),
    "hooks": [f.__qualname__ for f in get_ipython().events.callbacks["post_execute"]],
}))
"""


DRAW = "import random, numpy; print(random.random(), numpy.random.random())"


@pytest.fixture(autouse=True)
def zygote_on(monkeypatch):
    """These tests are about forked kernels: the switch off, and a zygote for this environment. One
    an earlier test left in another environment (a variable set and not put back) would have these
    kernels start the usual way; the tests then get a zygote of their own."""
    monkeypatch.delenv("AGENTLAB_NO_ZYGOTE", raising=False)
    monkeypatch.setattr(kernel_fork, "_GAVE_UP", [])
    ours = kernel_fork.steady_part(kernel_fork.launch_env(dict(os.environ)))
    if any(zygote.env != ours for zygote in kernel_fork._ZYGOTE):
        monkeypatch.setattr(kernel_fork, "_ZYGOTE", [])


def run(client, code: str, timeout: float = 60) -> tuple[dict, list[dict]]:
    outputs = []
    reply = client.execute_interactive(code, timeout=timeout, output_hook=lambda m: outputs.append(m))
    return reply["content"], [m["content"] for m in outputs if m["msg_type"] in ("stream", "display_data")]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone(pid: int, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_forked_kernel_shows_a_notebook_what_a_fresh_one_does():
    seen = {}
    for name, manager_class in (("forked", ForkedKernelManager), ("fresh", UnixSocketKernelManager)):
        manager, client = start_kernel(manager_class, cwd=NOTEBOOKS)
        try:
            pid = manager.provisioner.process.pid
            seen[name] = {"parent": parent_of(pid)}
            reply, outputs = run(client, PROBE)
            assert reply["status"] == "ok", reply
            figures = [out["data"]["image/png"] for out in outputs if "image/png" in out.get("data", {})]
            text = "".join(out["text"] for out in outputs if "text" in out)
            seen[name].update(json.loads(text), figures=figures)
        finally:
            stop_kernel(manager, client)
    forked, fresh = seen["forked"], seen["fresh"]
    assert fresh["parent"] == os.getpid() != forked["parent"], "the kernel was not forked from the zygote"
    for env in (forked["env"], fresh["env"]):  # the one variable that names the connection file's kernel
        env.pop("JPY_SESSION_NAME", None)
    for key in ("cwd", "path", "env", "argv0", "own session", "backend", "kit modules", "hooks", "figures"):
        assert forked[key] == fresh[key], f"a forked kernel differs from a fresh one in {key}"
    assert forked["own session"] and len(forked["figures"]) == 1


def test_forked_kernels_draw_their_own_random_numbers_and_stop_when_told():
    kernels = [start_kernel(ForkedKernelManager, cwd=NOTEBOOKS) for _ in range(2)]
    draws = []
    try:
        for _, client in kernels:
            reply, outputs = run(client, DRAW)
            draws.append(outputs[0]["text"])
        assert draws[0] != draws[1], "two kernels forked from one process share their random state"

        manager, client = kernels[0]
        client.execute("import time\ntime.sleep(30)")  # a cell a learner interrupts
        time.sleep(0.5)
        began = time.monotonic()
        manager.interrupt_kernel()
        reply = client.get_shell_msg(timeout=10)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - began < 5
    finally:
        pids = [manager.provisioner.process.pid for manager, _ in kernels]
        for manager, client in kernels:
            stop_kernel(manager, client)
    assert all(gone(pid) for pid in pids), "a forked kernel outlived its shutdown"


def test_a_kernel_in_another_environment_starts_the_usual_way():
    other = dict(os.environ, SOMETHING_ELSE="1")
    kernels = [start_kernel(ForkedKernelManager, cwd=NOTEBOOKS),
               start_kernel(ForkedKernelManager, cwd=NOTEBOOKS, env=other)]
    try:
        forked, usual = (parent_of(manager.provisioner.process.pid) for manager, _ in kernels)
        assert forked != os.getpid() == usual
        reply, outputs = run(kernels[1][1], "import os\nprint(os.environ['SOMETHING_ELSE'])")
        assert outputs[0]["text"] == "1\n"
    finally:
        for manager, client in kernels:
            stop_kernel(manager, client)


def test_a_zygote_that_cannot_start_leaves_kernels_to_start_fresh(tmp_path, monkeypatch):
    # the first module the zygote preloads after ipykernel: it fails before importing numpy and the rest
    (tmp_path / "matplotlib.py").write_text("raise ImportError('a broken install')\n")
    monkeypatch.setattr(kernel_fork, "_ZYGOTE", [])
    monkeypatch.setattr(kernel_fork, "_GAVE_UP", [])
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", str(tmp_path / "kernel.json")]
    with pytest.warns(UserWarning, match="notebook kernels start fresh: the kernel zygote ended"):
        assert kernel_fork.launch(cmd, env, NOTEBOOKS, [None, None, None]) is None
    assert kernel_fork.launch(cmd, os.environ.copy(), NOTEBOOKS, [None, None, None]) is None  # no retry


@pytest.fixture
def adopting():
    """This process adopts the orphans of its descendants, as a CI runner or a container's first
    process may: ipykernel's own check for a parent gone (adopted by pid 1) then never fires."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0)


def test_kernels_end_with_their_zygote(adopting):
    # a zygote of its own, not the one this process's other tests share
    zygote = kernel_fork.Zygote(kernel_fork.launch_env(dict(os.environ)))
    manager = UnixSocketKernelManager(kernel_name="python3")
    manager.write_connection_file()
    try:
        with open(os.devnull, "rb") as nothing:
            streams = [nothing.fileno(), 1, 2]
            kernel = zygote.fork(["-f", manager.connection_file], zygote.env, NOTEBOOKS, streams)
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        client.stop_channels()
        assert kernel.poll() is None
    finally:
        zygote.close()  # as when pytest ends, however it ends: the zygote reads end of file
        manager.cleanup_resources()
    assert zygote.process.poll() is not None
    try:
        assert kernel.wait(10) == 0, "a kernel outlived its zygote"
    finally:
        try:
            os.kill(kernel.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(kernel.pid, 0)  # adopted here once the zygote ended
