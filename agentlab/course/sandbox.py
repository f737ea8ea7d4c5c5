"""The box a learner's notebook runs in while it is graded: bubblewrap (`bwrap`).

What the learner's code sees inside: the operating system's files read-only (/usr, /etc), this
Python and its packages read-only, the kit (`agentlab/`) read-only without the instructor's grading
cases (`agentlab/course/hidden/`), a private /tmp, and a copy of their own submission folder as the
working directory. Nothing else: not the kit's `solutions/`, not other learners' folders, not the
grader's results. It runs in its own mount, pid, network, ipc and uts namespaces (no network but its
own loopback; it cannot see, let alone signal, any process outside), in a new session (no terminal
to type into), and dies with its parent. Run by root, it also gets its own user namespace
(uid 65534, no capabilities).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import agentlab

HIDDEN = "hidden"  # agentlab/course/hidden: the instructor's grading cases, never inside the box
NOBODY = 65534


class SandboxUnavailable(RuntimeError):
    """bubblewrap is not installed, so notebooks cannot be graded safely."""


def bwrap() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable(
            "grading needs bubblewrap to run each notebook in a sandbox: install it (apt-get install "
            "bubblewrap) and grade again"
        )
    return found


def kit_folder() -> Path:
    return Path(agentlab.__file__).resolve().parent


def python_folders() -> list[Path]:
    """This Python and its packages (the venv and the installation it was made from)."""
    folders = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.exec_prefix).resolve()}
    return sorted(folders)


def command(argv: list[str], workdir: Path, scratch: list[Path] = (), kit: Path | None = None) -> list[str]:
    """The bwrap command line that runs `argv` in the box, in `workdir` (writable, the learner's
    copy), with `scratch` folders shared with the grader (writable, for files a check hands over).
    `kit`: a folder seen in the kit's place (`forbidden.kit_without`'s copy, which lacks helpers)."""
    args = [bwrap(), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        args += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    for system in ("/usr", "/etc"):
        args += ["--ro-bind", system, system]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        target = Path(link)
        if target.is_symlink():
            args += ["--symlink", os.readlink(link), link]
        elif target.exists():
            args += ["--ro-bind", link, link]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for folder in python_folders():
        if not str(folder).startswith(("/usr", "/etc")):
            args += ["--ro-bind", str(folder), str(folder)]
    where = kit_folder()
    args += ["--ro-bind", str(kit or where), str(where), "--tmpfs", str(where / "course" / HIDDEN)]
    for folder in scratch:
        args += ["--bind", str(folder), str(folder)]
    args += ["--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "AGENTLAB_BACKEND": "simulated",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
    }
    args += ["--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--", *argv]
