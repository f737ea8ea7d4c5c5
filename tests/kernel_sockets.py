"""Kernel managers for the tests: each kernel talks over Unix sockets in a path of its own, not TCP.

jupyter_client gives a kernel its five TCP ports by binding port 0 and letting each go; the kernel
binds them a moment later. Any process that binds port 0 in between (another worker's kernel, a
Dask worker, a server a test starts) can take one, and the kernel dies before it replies ("Kernel
died before replying to kernel_info", jupyter/jupyter_client#487). That killed a kernel in about
one `make test` in twenty. Three processes starting 25 kernels each while a fourth bound ports:
5 of 75 died on TCP, 0 of 75 on Unix sockets. conftest.py hands nbval the last manager here,
whose kernels are also forked from a warm process (kernel_fork.py).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from typing import Any

from jupyter_client import AsyncKernelManager, KernelManager
from kernel_fork import launch
from traitlets import HasTraits, default

_FOLDER: list[str] = []  # made on first use, removed when the process ends


def socket_folder() -> str:
    """The folder where this process's kernels keep their sockets."""
    if not _FOLDER:
        _FOLDER.append(tempfile.mkdtemp(prefix="kernels-"))
        atexit.register(shutil.rmtree, _FOLDER[0], True)
    return _FOLDER[0]


class _OnUnixSockets(HasTraits):
    @default("transport")
    def _unix_sockets(self) -> str:
        return "ipc"

    @default("ip")
    def _socket_path(self) -> str:
        """The kernel's sockets are this path with -1 to -5 after it. jupyter_client's own default,
        "kernel-ipc", is relative: kernels started from one folder would share their sockets."""
        if self.transport != "ipc":
            return super()._ip_default()
        return os.path.join(socket_folder(), uuid.uuid4().hex[:12])


class UnixSocketKernelManager(_OnUnixSockets, KernelManager):
    """A `KernelManager` whose kernel listens on no TCP port."""


class AsyncUnixSocketKernelManager(_OnUnixSockets, AsyncKernelManager):
    """An `AsyncKernelManager` whose kernel listens on no TCP port."""


class ForkedKernelManager(UnixSocketKernelManager):
    """nbval's kernel manager: a kernel forked from the zygote where it can be, else started as usual."""

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        streams = [kw.get(name) for name in ("stdin", "stdout", "stderr")]
        kernel = launch(kernel_cmd, kw["env"], kw.get("cwd"), streams)
        if kernel is None:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        provisioner = self.provisioner
        provisioner.process, provisioner.pid, provisioner.pgid = kernel, kernel.pid, kernel.pid
        provisioner.cwd = kw.get("cwd") or os.getcwd()
        self._reconcile_connection_info(provisioner.connection_info)


def start_kernel(manager_class: type[KernelManager] = UnixSocketKernelManager, **kw: Any):
    """A kernel of `manager_class` and its client, ready (jupyter_client's start_new_kernel, which
    takes no manager class); `kw` goes to `start_kernel` (cwd, env, ...)."""
    manager = manager_class(kernel_name="python3")
    manager.start_kernel(**kw)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
    except RuntimeError:
        stop_kernel(manager, client)
        raise
    return manager, client


def stop_kernel(manager: KernelManager, client) -> None:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
