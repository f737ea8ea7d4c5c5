"""The kernels nbval starts talk over Unix sockets, so no other process can take a port from them
before they bind it (tests/kernel_sockets.py says how that killed a kernel now and then)."""

import os
import stat
from pathlib import Path

from nbval.kernel import KernelManager, RunningKernel


def listening_tcp_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on: its sockets, found in the kernel's tables of them."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def test_a_kernel_nbval_starts_talks_over_unix_sockets_and_runs_code(tmp_path):
    kernel = RunningKernel("python3", cwd=str(tmp_path))
    channels = [Path(f"{kernel.km.ip}-{n}") for n in range(1, 6)]
    try:
        assert all(stat.S_ISSOCK(path.stat().st_mode) for path in channels)
        # on TCP it listened on six ports; the one left is ipykernel's pipe for output from forked
        # processes, a port zmq binds itself (trying another if it is taken), with no gap to lose it in
        assert len(listening_tcp_ports(kernel.km.provisioner.process.pid)) <= 1
        reply = kernel.kc.execute_interactive("answer = 6 * 7", timeout=60)
        assert reply["content"]["status"] == "ok"
    finally:
        kernel.stop()
    assert not any(path.exists() for path in channels), "the kernel's sockets outlived it"


def test_two_kernels_started_from_one_folder_get_sockets_of_their_own(tmp_path, monkeypatch):
    # jupyter_client's own default on Unix sockets is the relative path "kernel-ipc": two workers
    # starting kernels in one folder would bind the same files (9 of 75 kernels never answered)
    monkeypatch.chdir(tmp_path)
    first, second = KernelManager(kernel_name="python3"), KernelManager(kernel_name="python3")
    assert first.transport == second.transport == "ipc"
    assert first.ip != second.ip and os.path.isabs(first.ip)
    assert len(f"{first.ip}-5") < 100  # a Unix socket's path holds at most 107 bytes
