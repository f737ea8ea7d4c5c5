"""Notebook kernels for the tests, forked from a process that has already imported what they all import.

A fresh kernel spends about 0.4 CPU-s starting ipykernel, then 0.7 importing matplotlib before a
notebook's first figure: notebook 02's kernel used 2.9 CPU-s in all, a forked one 1.9. `make test`
starts 23 such kernels (every notebook and solution, under nbval) on two cores. So each pytest
worker starts one *zygote* (1.2 CPU-s) that imports those modules once and then waits; each kernel
is a fork of it that runs `ipykernel_launcher` as `python -m` would, with the kernel spec's
arguments, in the folder, environment and session a launch would give it.

What a forked kernel shares with a fresh one, and what it does not:
- the same code: ipykernel's own entry point, with the kernel spec's arguments and connection file;
- its own process, session and process group (signals, interrupts and shutdown as usual), its own
  environment, folder, `sys.argv` and `sys.path` (`random` and numpy reseed themselves at a fork);
- third-party modules already in `sys.modules`. Nothing of the kit is preloaded, so a notebook that
  relies on an `agentlab` module it never imported still fails; a notebook that uses, say,
  `matplotlib.pyplot` after importing only `matplotlib` would pass here and fail for a learner.

Any kernel this cannot start exactly so (another interpreter, another command, an environment that
differs from the zygote's) starts the usual way. tests/test_kernel_fork.py checks the above.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import warnings
from typing import Any

# what every kernel imports to start, then what the notebooks import (as a cell would, once the
# kernel has set up its environment)
KERNEL = ("ipykernel.kernelapp", "ipykernel.ipkernel")
PRELOAD = ("matplotlib.pyplot", "numpy", "ipywidgets", "networkx", "jsonschema")
# the backend ipykernel sets before a notebook imports matplotlib
INLINE = "module://matplotlib_inline.backend_inline"
_LAUNCHER = ["-m", "ipykernel_launcher"]
# set by pytest for each test, so it differs at each launch; nothing preloaded reads it on import
VOLATILE = ("PYTEST_CURRENT_TEST",)


class ForkedKernel:
    """What `subprocess.Popen` offers jupyter_client, for a kernel that is not this process's child."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None
        try:
            self._exited = os.pidfd_open(pid)  # readable once the process has ended
        except ProcessLookupError:
            self._exited, self.returncode = None, 0

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._exited], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            os.close(self._exited)
            self.returncode = 0  # the zygote reaps it: how it ended is not known here
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Zygote:
    """One per pytest process, started at the first kernel it can serve, ended with the process."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, __file__, str(theirs.fileno())], pass_fds=[theirs.fileno()], env=env,
            stdin=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.channel, self.lock = ours, threading.Lock()
        atexit.register(self.close)
        try:
            self._reply(timeout=120)  # "ready" once the preloads are imported
        except RuntimeError:
            self.close()
            raise

    def fork(self, argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> ForkedKernel:
        with self.lock:
            request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
            socket.send_fds(self.channel, [request], fds)
            return ForkedKernel(self._reply(timeout=30)["pid"])

    def _reply(self, timeout: float) -> dict[str, Any]:
        if not select.select([self.channel], [], [], timeout)[0]:
            raise RuntimeError(f"the kernel zygote did not answer within {timeout} s")
        reply = self.channel.recv(1 << 16)
        if not reply:
            raise RuntimeError(f"the kernel zygote ended (exit code {self.process.poll()})")
        return json.loads(reply)

    def close(self) -> None:
        self.channel.close()  # the zygote ends at end of file, and its kernels with it
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


_ZYGOTE: list[Zygote] = []
_GAVE_UP: list[str] = []  # why a zygote could not start, if one could not: then no more tries


def launch_env(env: dict[str, str]) -> dict[str, str]:
    """A kernel's environment as jupyter_client's launch gives it: with this process's pid added."""
    return dict(env, JPY_PARENT_PID=str(os.getpid()))


def steady_part(env: dict[str, str]) -> dict[str, str]:
    """What of a kernel's environment must be the zygote's for it to be forked from there."""
    return {key: value for key, value in env.items() if key not in VOLATILE}


def launch(cmd: list[str], env: dict[str, str], cwd: str | None, streams: list[Any]) -> ForkedKernel | None:
    """A kernel forked from this process's zygote, or None where it must be started the usual way.
    `streams`: the launch's stdin, stdout and stderr, as Popen takes them (None: stdin closed, the
    others this process's)."""
    if os.environ.get("AGENTLAB_NO_ZYGOTE") or _GAVE_UP:
        return None  # the switch starts every kernel fresh, as does a zygote that failed to start
    if sys.platform != "linux" or not hasattr(os, "pidfd_open"):
        return None  # it relies on Linux's pidfd and prctl
    if cmd[:1] != [sys.executable] or cmd[1:3] != _LAUNCHER:
        return None
    if any(stream is not None and not hasattr(stream, "fileno") for stream in streams):
        return None  # a pipe or a bare number: the usual launch handles those
    if os.path.exists(os.path.join(cwd or ".", "matplotlibrc")):
        return None  # matplotlib reads it on import, from the folder it is imported in
    env = launch_env(env)
    steady = steady_part(env)
    if not _ZYGOTE or _ZYGOTE[0].process.poll() is not None:
        try:
            _ZYGOTE[:] = [Zygote(steady)]
        except (OSError, RuntimeError) as error:  # slower without it, never wrong: start kernels as usual
            warnings.warn(f"notebook kernels start fresh: {error}", stacklevel=2)
            _GAVE_UP.append(str(error))
            return None
    if steady != _ZYGOTE[0].env:
        return None
    with open(os.devnull, "rb") as nothing:
        defaults = (nothing, sys.__stdout__, sys.__stderr__)
        fds = [(stream or default).fileno() for stream, default in zip(streams, defaults, strict=True)]
        return _ZYGOTE[0].fork(cmd[3:], env, cwd or os.getcwd(), fds)


# ---- the zygote's side --------------------------------------------------------------------------

def serve(channel: socket.socket) -> None:
    """Import the preloads, then fork a kernel for each request until the channel closes."""
    for name in KERNEL:
        importlib.import_module(name)
    # the environment a cell sees (TERM, PAGER, ... and the backend, as ipykernel decides it), so
    # that the notebooks' modules read at import what they would read in a kernel; each forked
    # kernel then takes the launch's environment, and its ipykernel sets these again
    from ipykernel.zmqshell import ZMQInteractiveShell
    ZMQInteractiveShell.init_environment(None)
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = INLINE
    for name in PRELOAD:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kernels are reaped as they end
    channel.send(b'{"ready": true}')
    while True:
        message, fds, _, _ = socket.recv_fds(channel, 1 << 20, 3)
        if not message:
            return
        zygote, pid = os.getpid(), os.fork()
        if pid == 0:
            channel.close()
            become_kernel(json.loads(message), fds, zygote)
        for fd in fds:
            os.close(fd)
        channel.send(json.dumps({"pid": pid}).encode())


def become_kernel(request: dict[str, Any], fds: list[int], zygote: int) -> None:
    """In the forked child: take the launch's session, streams, folder and environment, run ipykernel."""
    code = 1
    try:
        os.setsid()
        # PR_SET_PDEATHSIG: end with the zygote. ipykernel's own watch would only see it if the
        # kernel were adopted by pid 1, not by a runner's or a container's adopting process.
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        if os.getppid() != zygote:
            raise SystemExit(1)  # the zygote ended before that took hold
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv, sys.path[0] = [sys.argv[0], *request["argv"]], os.getcwd()  # as `python -m` sets them
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # not this folder (tests/): each kernel puts its own folder here
    serve(socket.socket(fileno=int(sys.argv[1])))
