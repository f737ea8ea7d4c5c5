"""Grading a whole class, so that nothing one notebook does can cost the others their grades.

Each notebook is graded in a child process of its own, which runs the notebook in its sandbox
(`grading`) and sends its result back as JSON; the batch reads that JSON, nothing else
(`python -m agentlab.course.batch PATH` does the same for one notebook, by hand). A child that
crashes, hangs past its allowance or is killed gives its notebook a "broken" result with a
"not graded" line for each of its exercises, and the batch goes on. Everything a child writes
(the learner's copy, the sandbox's scratch folders) is in one folder the batch removes after it.

Every result is appended to a results file (JSON lines) the moment it is known. A batch that is
stopped, even by SIGKILL, and started again with the same results file grades only what is left:
a notebook whose content is unchanged since its line was written is not graded again.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentlab.course import capstone, intake
from agentlab.course.grading import (
    NOTEBOOKS,
    RERUNS,
    Graded,
    Result,
    clean,
    exercises_of,
    grade,
    not_graded,
    notebook_number,
)
from agentlab.course.intake import Submission

RESULTS = Path(".agentlab") / "grades.jsonl"  # where a batch keeps its results unless told otherwise


def learners(paths: Sequence[str]) -> dict[str, str]:
    """path -> learner, by the learner's folder relative to what all the folders share: `a/alice` and
    `b/alice` are two learners. A notebook not named NN_….ipynb is its own learner (its stem)."""
    folders = {p: Path(os.path.abspath(p)).parent for p in paths}  # a link is named for itself
    parents = [str(f.parent) for f in folders.values()] or ["/"]
    common = Path(os.path.commonpath(parents))
    names = {}
    for path, folder in folders.items():
        own = folder.relative_to(common).as_posix() if folder.is_relative_to(common) else folder.name
        if Path(path).name.startswith(tuple(f"{n}_" for n in (*NOTEBOOKS, capstone.NUMBER))):
            names[path] = own or folder.name
        else:
            stem = Path(path).stem
            names[path] = f"{own}/{stem}" if own and own != folder.name else stem
    return names


def fingerprint(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "missing"


def load(results: Path) -> dict[tuple[str, str], Graded]:
    """(path, fingerprint) -> result, from a results file a batch wrote (a torn last line is skipped)."""
    done = {}
    if results.exists():
        for line in results.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[(row["path"], row["fingerprint"])] = from_json(row["graded"])
            except (ValueError, KeyError, TypeError):
                continue
    return done


def grade_all(
    paths: Sequence[str],
    timeout: float = 300,
    root: str | None = None,
    results: Path | None = RESULTS,
    jobs: int = 1,
    progress: Callable[[Graded, bool], None] | None = None,
    task_seconds: float = capstone.TASK_SECONDS,
) -> list[Graded]:
    """Grade every notebook, each in its own child; resume from `results` (None: keep nothing).
    A path may be an archive of a learner's folder (`intake` unpacks it); a notebook that is a link
    is not graded and gets a line per exercise saying so. A capstone notebook (`12_capstone.ipynb`)
    is graded on the held-out tasks (`capstone`, each at most `task_seconds`), and every capstone
    submission graded is also appended to the capstone log beside `results` (the leaderboard's)."""
    done = load(results) if results else {}
    if results:
        results.parent.mkdir(parents=True, exist_ok=True)

    def one(each: Submission) -> Graded:
        key = (each.key, "" if each.refused else fingerprint(each.file))  # a refused one is never read
        resumed = key in done and not each.refused
        if each.refused:  # a link, or an archive that cannot be unpacked safely: never run
            graded = refused_submission(each)
        else:
            graded = done[key] if resumed else in_child(each.file, timeout, root, task_seconds)
        graded.path, graded.learner = each.path, names[stand_in(each)]
        if not resumed and results and not each.refused:
            row = {"path": key[0], "fingerprint": key[1], "graded": to_json(graded)}
            with open(results, "a", encoding="utf-8") as out:  # one line, flushed as soon as it is known
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()
                os.fsync(out.fileno())
            if isinstance(graded, capstone.CapstoneGraded) and graded.capstone:  # not a grader failure
                log_submission(results, row)
        if progress:
            progress(graded, resumed)
        return graded

    with intake.taken(paths) as submissions, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        names = learners([stand_in(each) for each in submissions])
        return list(pool.map(one, submissions))


def stand_in(each: Submission) -> str:
    """The path that names its learner: an archive's notebooks are in the learner's folder the
    archive stands for (`a/bob.zip`: `a/bob/`), so `a/bob.zip` and `b/bob.zip` are two learners."""
    return os.path.join(each.folder, f"{NOTEBOOKS[0]}_.ipynb") if each.folder else each.path


def refused_submission(each: Submission) -> Graded:
    """A line per exercise its name says it holds, each "not graded" with why (a link, an archive
    that climbs out, ...): no credit, and still counted in the totals."""
    number = notebook_number(each.path.rsplit(":", 1)[-1])
    required = exercises_of(number) if number else []
    return Graded(each.path, "", not_graded(required, each.refused), broken=each.refused)


def in_child(
    path: str, timeout: float, root: str | None, task_seconds: float = capstone.TASK_SECONDS
) -> Graded:
    """Grade one notebook in a child process; whatever happens to the child, a result.

    Children are forked from a server that has imported the grader and every notebook's checks once
    (multiprocessing's forkserver), so a child starts in milliseconds, not seconds."""
    required = exercises_of(number) if (number := notebook_number(path)) else []
    allowance = (RERUNS + 2 + len(required)) * timeout + 300  # runs of the cells, restarts, then the cases
    if capstone.is_capstone(path):  # its cells, then its tasks, each at most `timeout`
        required, allowance = [capstone.EXERCISE], 2 * timeout + task_seconds + 300
    folder = tempfile.mkdtemp(prefix="agentlab-grade-")
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(
        target=_child, args=(path, timeout, root, sender, folder, task_seconds), daemon=True
    )
    child.start()
    sender.close()
    try:
        if receiver.poll(allowance):
            return from_json(json.loads(receiver.recv()))
        why = f"its grading did not finish within {allowance:g} s"
    except (EOFError, OSError, ValueError, KeyError, TypeError):
        child.join(timeout=10)
        why = f"its grading stopped (exit code {child.exitcode})"
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
    return Graded(path, "", not_graded(required, why), broken=why)


def _child(path: str, timeout: float, root: str | None, sender, folder: str, task_seconds: float) -> None:
    _die_with_parent()
    tempfile.tempdir = folder  # the learner's copy and the scratch folders: removed by the batch
    if capstone.is_capstone(path):
        graded = capstone.grade(path, timeout=timeout, task_seconds=task_seconds)
    else:
        graded = grade(path, timeout=timeout, root=root)
    sender.send(json.dumps(to_json(graded), ensure_ascii=False))
    sender.close()


_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(
    ["agentlab.course.batch", *(f"agentlab.course.checks.nb{n}" for n in NOTEBOOKS)]
)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no message"


def _die_with_parent() -> None:
    """The child ends with the batch (Linux's parent-death signal), so a killed batch leaves nothing."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def to_json(graded: Graded) -> dict:
    data = {
        "path": graded.path,
        "learner": graded.learner,
        "broken": clean(graded.broken),
        "results": [[r.exercise, r.status, r.detail] for r in graded.results],
    }
    if isinstance(graded, capstone.CapstoneGraded):
        data["capstone"] = graded.capstone  # the grader's own numbers, for the leaderboard
    return data


def from_json(data: dict) -> Graded:
    results = [Result(str(e), str(s), str(d)) for e, s, d in data["results"]]
    fields = (str(data["path"]), str(data["learner"]), results, clean(str(data["broken"])))
    if isinstance(data.get("capstone"), dict):
        return capstone.CapstoneGraded(*fields, capstone=data["capstone"])
    return Graded(*fields)


def capstone_log(results: Path) -> Path:
    """Where every graded capstone submission is kept, beside the results file: never rewritten,
    never removed by --fresh, so the leaderboard counts every submission."""
    return results.with_name("capstone.jsonl")


def log_submission(results: Path, row: dict) -> None:
    """Append one graded capstone submission to the capstone log (one flushed line)."""
    with open(capstone_log(results), "a", encoding="utf-8") as out:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())


def main(argv: list[str]) -> int:
    """The child: grade one notebook, print its result as one JSON line."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agentlab.course.batch")
    parser.add_argument("path")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--root")
    args = parser.parse_args(argv)
    graded = grade(args.path, timeout=args.timeout, root=args.root)  # never raises: a line per exercise
    print(json.dumps(to_json(graded), ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
