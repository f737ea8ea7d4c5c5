"""Grading a class: each learner's exercise notebook runs in a sandbox; the verdict is the grader's.

Nothing the notebook's own kernel says decides a grade. For each notebook the grader:

1. runs its code cells, in order, in a fresh kernel inside a bubblewrap sandbox (`sandbox`,
   `kernel`): it sees the kit read-only without the grading cases, a copy of the learner's own
   folder, nothing else; `check(...)` does nothing there;
2. takes out what the learner defined for each exercise, by the name the kit's exercise notebook
   gives it (`longest_chain` for `02.critical-path`, read by `cells`), whatever the learner's check
   cell now says;
3. runs the exercise's cases, and the instructor's extra grading cases (`course/hidden/`), in the
   grader's own process, with the kit unpatched. The learner's function is called in the sandbox
   and its answer comes back as plain data (`wire`): the grader compares values, never objects of
   the learner's making. A helper the exercise forbids (`plan.critical_path` in 02.critical-path,
   listed in `forbidden`) is absent while that exercise is graded: an answer that passes is graded
   again in a sandbox of its own, the notebook run there with a kit whose helper only raises.

An exercise's status:

- `passed` or `failed` from the cases (a failed one says how many, and the first that failed);
- `not done` when the function is still the stub, or the name is not defined and no cell of its
  part of the notebook raised; `error` with the *first* error of its part when one did (a
  `SyntaxError` in a function shows as itself, not as the `NameError` that follows);
- a notebook that cannot be read, whose kernel dies, sends what is not data, or is still running
  after `timeout` seconds is **broken**, with the reason; it is run again without the cell where it
  stopped (RERUNS times at most), so one bad cell costs only what depends on it; exercises past a
  cell it still stops at are `not done`, "not reached";
- `not graded`, with why, when the grader itself could not finish (its child crashed or ran out of
  time): every exercise the notebook must have still has its line and counts in the totals.

A learner's words (an exception's name and message, a value) reach a report only through `clean`:
control characters and escape sequences shown escaped, never obeyed, and cut to DETAIL_CHARS.

Each notebook is graded against the exercises its number must have (`06_….ipynb`: the checks
registered for 06); a notebook that holds another number's exercises says so.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlab.course import wire
from agentlab.course.cells import Cell, answer_names, named, read_cells
from agentlab.course.checks import (
    CASE_SECONDS,
    MOVED,
    NAMES,
    NOTEBOOKS,
    STUB_MESSAGE,
    Case,
    exercises_of,
    find,
    is_stub,
    unwritten,
)
from agentlab.course.forbidden import FORBIDDEN
from agentlab.valid import cut

STATUSES = ("passed", "failed", "not done", "error", "not graded")
NUMBER = re.compile(r"(?<!\d)(\d\d)_")
IPYTHON_FILE = re.compile(r"\((?:<ipython-input-[^>]*>|\d+\.py), line (\d+)\)")  # noise in a SyntaxError
RERUNS = 2  # cells skipped at most, each after it stopped the notebook, before the rest is "not reached"
DETAIL_CHARS = 400  # a result's detail, and a notebook's reason for being broken
BIG_FILE = 20 * 2**20  # files in a learner's folder larger than this stay out of the sandbox's copy


@dataclass(frozen=True)
class Result:
    """One exercise of one notebook: its status (one of STATUSES) and what the instructor should see
    (cleaned: a detail may quote the learner)."""

    exercise: str
    status: str
    detail: str = ""

    def __post_init__(self):
        object.__setattr__(self, "detail", clean(self.detail))


def clean(text: str, limit: int = DETAIL_CHARS) -> str:
    """`text` fit for a report: every character that is not printable (a newline, an ANSI escape, a
    right-to-left mark) written as its escape (`\\x1b`), and cut to about `limit` characters."""
    text = str(text)[: 4 * limit]
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else cut(text, limit - 25)  # its start, end and length: < limit


@dataclass
class Graded:
    """One learner's notebook: a result per exercise it must have, and why it broke, if it did."""

    path: str
    learner: str
    results: list[Result] = field(default_factory=list)
    broken: str = ""

    @property
    def passed(self) -> int:
        return sum(r.status == "passed" for r in self.results)


RENAMED = {"08_guardrails": "09_guardrails", "09_across_machines": "10_across_machines"}  # old name -> new


def notebook_number(path: Path | str) -> str | None:
    """The exercise notebook a file is, from its name: "06" for `06_error_propagation.ipynb` (also
    `alice_06_error_propagation.ipynb`), or None. A name from before the renumbering
    (`08_guardrails.ipynb`) gives the notebook's new number."""
    for old, new in RENAMED.items():
        if old in Path(path).name:
            return new[:2]
    for number in NUMBER.findall(Path(path).name):
        if number in NOTEBOOKS:
            return number
    return None


def learner_of(path: Path | str) -> str:
    """Who a notebook belongs to: its folder for `alice/06_….ipynb`, else the file's own name."""
    path = Path(path)
    if path.name.startswith(tuple(f"{n}_" for n in (*NOTEBOOKS, "12"))):  # 12: the capstone
        return path.resolve().parent.name or path.stem
    return path.stem


def grade(path: Path | str, timeout: float = 300, root: Path | str | None = None) -> Graded:
    """Run one learner's exercise notebook in a sandbox (its cells at most `timeout` seconds) and
    grade each exercise from the grader's own cases."""
    graded = Graded(str(path), learner_of(path))
    number = notebook_number(path)
    if number is None:
        graded.broken = "cannot tell which exercises it holds: keep the exercise notebook's name (06_….ipynb)"
        return graded
    required = exercises_of(number)
    nb: list[Cell] = []
    try:
        nb = read_cells(Path(path))
    except FileNotFoundError:
        graded.broken = "no such file"
    except (UnicodeDecodeError, json.JSONDecodeError):
        graded.broken = "not a notebook: the file is not valid JSON"
    except (OSError, ValueError) as error:
        graded.broken = clean(f"not a notebook: {(str(error).splitlines() or [''])[0]}", 120)
    except Exception as error:  # a JSON file whose cells are not what a notebook's are
        graded.broken = clean(f"not a notebook: {type(error).__name__}: {error}", 120)
    if not graded.broken and (why := old_numbering(path, nb)):
        graded.results = [Result(e, "not done", "not run: old numbering") for e in required]
        graded.broken = why
        return graded
    if not graded.broken and (other := holds_another(nb, number)):
        graded.broken = (
            f"this file holds notebook {other}'s exercises, saved under {number}: rename it {other}_….ipynb"
        )
    if graded.broken:
        graded.results = [Result(e, "not done", "not run") for e in required]
        return graded
    try:
        names = answer_names(number, root, nb)
        with tempfile.TemporaryDirectory(prefix="agentlab-grade-") as copy:
            workdir = learner_copy(Path(path), Path(copy))
            graded.broken, graded.results = _grade_notebook(nb, workdir, required, names, timeout)
    except Exception as error:  # the grader's own failure (no sandbox, say): each exercise says so
        graded.broken = clean(f"the grader could not grade it: {type(error).__name__}: {error}")
        graded.results = not_graded(required, graded.broken)
    return graded


def not_graded(exercises: list[str], why: str) -> list[Result]:
    """A line for each exercise of a notebook the grader could not finish, saying why."""
    return [Result(e, "not graded", why) for e in exercises]


def old_numbering(path: Path | str, nb: list[Cell]) -> str:
    """Why `nb` is an exercise notebook saved before the course was renumbered, naming where its
    exercises are now; "" if it is not one. Grading it as the new notebook of its number would mark
    every exercise not done without saying why."""
    name = Path(path).name
    for old, new in RENAMED.items():
        if old in name:
            return (
                f"{old} is from before the course was renumbered: it is now exercises/{new}.ipynb; "
                "copy your answers there"
            )
    old_ids = sorted(i for i in named(nb) if i in MOVED)
    if not old_ids:
        return ""
    where = sorted({f"exercises/{NAMES[MOVED[i][:2]]}.ipynb" for i in old_ids})
    now = ", ".join(f"{i} is now {MOVED[i]}" for i in old_ids)
    return f"from before the course was renumbered ({now}): copy those answers into {' and '.join(where)}"


def holds_another(nb: list[Cell], number: str) -> str | None:
    """The number of the exercise notebook this one really is, when its check cells all name
    another notebook's exercises (an 05 saved as 06_….ipynb), else None."""
    numbers = {e.split(".")[0] for e in named(nb)} & set(NOTEBOOKS)
    return min(numbers) if numbers and number not in numbers else None


def learner_copy(notebook: Path, into: Path) -> Path:
    """A copy of the learner's own folder for the sandbox: their notebook and their other files, but
    no other notebook (a classmate's, in a shared folder) and no file larger than BIG_FILE."""
    folder = notebook.resolve().parent
    workdir = into / "work"

    def skip(where: str, names: list[str]) -> set[str]:
        out = set()
        for name in names:
            full = Path(where) / name
            if full.is_file() and (
                full.stat().st_size > BIG_FILE or (name.endswith(".ipynb") and full != notebook.resolve())
            ):
                out.add(name)
            elif full.is_symlink():
                out.add(name)
        return out

    try:
        shutil.copytree(folder, workdir, ignore=skip, symlinks=True)
    except (OSError, shutil.Error):
        workdir.mkdir(exist_ok=True)
    shutil.copy(notebook, workdir / notebook.name)
    return workdir


def _grade_notebook(nb, workdir: Path, required: list[str], names: dict[str, str], timeout: float):
    from agentlab.course.session import Session

    code = [(i, c.source) for i, c in enumerate(nb) if c.kind == "code"]
    check_cells: dict[str, int] = {}
    for i, cell in enumerate(nb):
        for exercise in cell.checks:
            check_cells.setdefault(exercise, i)
    sources = [source for _, source in code]
    sessions: list[Session] = []
    skipped: dict[int, str] = {}  # a cell that stopped the notebook -> why; run again without it
    skip: set[int] = set()

    def fresh(forbidding: str | None = None) -> tuple[Session, Any]:
        """A new session of the notebook, without the cells in `skip`; `forbidding`: an exercise whose
        forbidden helpers are absent from that session's kit."""
        session = Session(sources, workdir, {forbidding: FORBIDDEN[forbidding]} if forbidding else {})
        sessions.append(session)
        return session, session.run(timeout, skip, [i for i, _ in code])

    def numbered(ran: Any) -> dict[int, tuple[str, str]]:  # each failed cell by its number in the notebook
        return {code[i][0]: (n, IPYTHON_FILE.sub(r"(line \1)", text)) for i, (n, text) in ran.errors.items()}

    try:
        session, ran = fresh()
        broken = ran.broken
        for _ in range(RERUNS):
            if not ran.broken or ran.stopped_at in skip or ran.stopped_at >= len(code):
                break
            skipped[ran.stopped_at] = ran.broken
            skip.add(ran.stopped_at)
            session, ran = fresh()
        if (
            ran.broken and code
        ):  # grade what comes before the cell where it still stops, from the cells before it
            skip.update(range(ran.stopped_at, len(code)))
            session, _ = fresh()
        errors = numbered(ran)
        errors |= {code[i][0]: ("skipped by the grader", why) for i, why in skipped.items()}
        stopped = code[ran.stopped_at][0] if ran.broken and ran.stopped_at < len(code) else None
        restarts, results = 0, []
        for exercise in required:
            if stopped is not None and check_cells.get(exercise, -1) >= stopped:
                results.append(Result(exercise, "not done", "not reached"))
                continue
            if not session.alive and restarts < len(required):  # a crash costs only its own exercise
                session.close()
                session, _ = fresh()
                restarts += 1
            result = _grade_exercise(session, exercise, names.get(exercise), errors, check_cells)
            if session.refused:
                result = Result(exercise, "error", session.refused)
            elif exercise in FORBIDDEN and result.status == "passed":  # again, where its helpers are absent
                alone, again = fresh(exercise)
                errors_alone = errors | numbered(again)
                result = _grade_exercise(alone, exercise, names.get(exercise), errors_alone, check_cells)
                if alone.refused:
                    result = Result(exercise, "error", alone.refused)
                alone.close()
            results.append(result)
    finally:
        for each in sessions:
            each.cleanup()
    first = min(errors.items(), default=None)
    if first:  # an answer never defined, and nothing in its part to blame: say where the notebook broke
        index, (name, value) = first
        said = f"the notebook's first error: {name}: {value} (cell {index + 1})"
        results = [Result(r.exercise, r.status, said) if r.detail in _SILENT else r for r in results]
    return clean(broken), results


_SILENT = ("no check cell for it", "its check never ran", "not defined")


def _grade_exercise(session, exercise: str, name: str | None, errors: dict, check_cells: dict) -> Result:
    """One exercise: the learner's answer, taken out of the sandbox, against the grader's cases."""
    if not session.alive:
        return Result(exercise, "error", "the notebook's kernel stopped before this exercise")
    if name is None:
        return Result(exercise, "error", "the kit's exercise notebook names no answer for it")
    try:
        answer = session.get(name)
    except NameError:
        return _unchecked(exercise, errors, check_cells)
    except Exception as error:
        return Result(exercise, "error", f"could not take {name} out of the notebook: {_name(error)}")
    old = tempfile.tempdir
    tempfile.tempdir = str(session.scratch)
    try:
        return verdict(exercise, answer)
    finally:
        tempfile.tempdir = old


SLACK = 3  # a case's time limit, times this: every call of the learner's crosses into the sandbox and back


def verdict(exercise: str, answer: Any) -> Result:
    """Run the exercise's cases and the instructor's grading cases on `answer`, in this process."""
    from agentlab.course import checks, hidden

    original = checks.time_limit
    checks.time_limit = _slower(original)  # for these cases only: put back below
    try:
        return _run_cases(exercise, answer, hidden.cases_for(exercise))
    finally:
        checks.time_limit = original


def _run_cases(exercise: str, answer: Any, extras: list) -> Result:
    ex = find(exercise)
    if unwritten(answer):  # an answer template still holding its `...`
        return Result(exercise, "not done", "still the template's ...")
    passed = failed = 0
    first = ""
    cases = itertools.chain(ex.cases(answer), *(extra(answer) for extra in extras))
    try:
        for case in cases:
            right = isinstance(case, Case) and _true(case.passed)
            passed, failed = passed + right, failed + (not right)
            if not right and not first:
                first = case.what + (f": {case.detail}" if case.detail else "")
    except NotImplementedError as error:
        if not is_stub(error):
            return Result(exercise, "error", _name(error))
        if passed + failed == 0:
            return Result(exercise, "not done", "still the stub")
        failed += 1
        first = first or f"the next case stopped at a part still left as the stub ({error})"
    except Exception as error:  # the check broke on what came back, or the learner's code escaped it
        return Result(exercise, "error", _name(error))
    if failed:
        return Result(exercise, "failed", f"{failed} of {passed + failed} cases failed: {first}")
    return Result(exercise, "passed", "")


def _slower(time_limit: Any) -> Any:
    """The checks' time limit with SLACK: `attempt` looks `time_limit` up each time it runs a case."""

    def slower(seconds: float | None = CASE_SECONDS) -> Any:
        return time_limit(None if seconds is None else seconds * SLACK)

    return slower


def _true(value: Any) -> bool:
    """A case passed only if the check said so with plain data (never an object of the learner's)."""
    return value is True or (type(value) in wire.PLAIN and bool(value))


def _name(error: BaseException) -> str:
    said = clean(str(error))
    return f"{type(error).__name__}: {said}" if said else type(error).__name__


def _unchecked(exercise: str, errors: dict[int, tuple[str, str]], check_cells: dict[str, int]) -> Result:
    """An exercise whose answer is not defined: the first error in its part of the notebook, if any."""
    end = check_cells.get(exercise)
    if end is None:
        return Result(exercise, "not done", "no check cell for it")
    start = max((i for i in check_cells.values() if i < end), default=-1) + 1
    for index in range(start, end + 1):
        if index in errors:
            name, value = errors[index]
            if name == "NotImplementedError" and value.startswith(STUB_MESSAGE[:9]):
                return Result(exercise, "not done", "still the stub")
            return Result(exercise, "error", f"{name}: {value} (cell {index + 1})")
    return Result(exercise, "not done", "not defined")
