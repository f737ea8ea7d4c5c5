"""Grading the capstone: a learner's team on the instructor's held-out tasks, with the grader's model.

The learner's capstone notebook (`12_capstone.ipynb`) defines `my_team(task, setup)`. The grader:

1. runs the notebook's cells in the grading sandbox (`session`), as it runs an exercise notebook,
   with a kit whose simulator, solver and gold answers only raise (`forbidden.kit_without`, the
   helpers in HELPERS) and a guard the notebook cannot take out (a Python audit hook, first cell);
2. calls `my_team` on each held-out task (`hidden/capstone.py`), sent without its answer, with a
   `Setup` whose model is the grader's (`GraderModel`): every call crosses back to the grader,
   which answers it with its own simulator and meters it. Cost, tokens, calls and model seconds
   are the meter's, never what the team reports; a call that would take a task past
   BUDGET_PER_TASK is refused (the team sees a `ModelError`) and the next one ends the task;
3. runs the reference team in its own process on the same tasks with the same model, and compares
   (`agentlab.evidence`): accuracy with its Wilson interval, the paired accuracy difference and
   non-inferiority at MARGIN, and the paired cost and model seconds per task.

A submission that breaks a rule gets a named status (STATUSES) and no rank; grading stops at the
first break. Every text that can come from the learner goes through `grading.clean`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlab.budget import spent
from agentlab.capstone import MARGIN  # the notebook's margin is the grade's
from agentlab.course import sandbox, wire
from agentlab.course.forbidden import _emptied, kit_without
from agentlab.course.grading import Graded, Result, clean, learner_copy, learner_of
from agentlab.course.session import LearnerRef, Session
from agentlab.llm.base import Completion, ModelError, PaidError, Tool

NUMBER = "12"
EXERCISE = "12.capstone"  # its one line in the gradebook
TASK_SECONDS = 30.0  # wall clock for one held-out task, the grader's model calls included
HELPERS = [  # absent in the capstone's sandbox: they would answer without the grader's model
    "agentlab.llm.simulated:SimulatedLLM.complete",
    "agentlab.world.solver:turn_reply",
    "agentlab.world.plans:plan_reply",
    "agentlab.world.tasks:gold_answer",
    "agentlab.world.capstone:gold",  # the capstone family's gold answers, where the kit has them
    "agentlab.world.capstone_model:answer",
    "agentlab.world.capstone_model:plan",
]
REACHED_HIDDEN, REACHED_HELPER = 86, 87  # the guard's exit codes
STATUSES = {
    "ranked": "graded on every held-out task: on the leaderboard",
    "reads hidden": "it reached for the held-out set, the grader's seeds or files outside its folder",
    "own model": "it called the kit's simulator, solver or gold answers itself on a held-out task",
    "hard-coded": "it answered a held-out task without one call to the grader's model",
    "over budget": "it asked for more than the budget per task",
    "too slow": "it ran past the time limit",
    "crashed": "its notebook or its kernel broke",
    "no my_team": "its notebook defines no function my_team(task, setup)",
    "another set": "graded on another held-out set than the board's latest entries",
}
ANSWER_NAME = "agentlab_capstone_answer"
ANSWER_CHARS = 2000  # of an answer, checked against the gold one (a longer one is cut here)


def is_capstone(path: Path | str) -> bool:
    """Whether a file is a capstone notebook: `12_capstone.ipynb`, also `alice_12_capstone.ipynb`."""
    return re.search(r"(?<!\d)12_capstone", Path(path).name) is not None


@dataclass
class CapstoneGraded(Graded):
    """A capstone submission: its gradebook line, and what the leaderboard reads (`capstone`)."""

    capstone: dict = field(default_factory=dict)


# --- the grader's model, metered ------------------------------------------------------------------


class TaskEnded(BaseException):
    """A task the grader ended (a call after its budget was refused): the sandbox is stopped."""


class GraderModel:
    """The grader's model as the learner's team sees it: `complete` and `backend`, nothing else (a
    handle's holder may read any attribute not starting with "_"). Each call is made here, with the
    grader's simulator, and metered for the task being graded (`begin`)."""

    def __init__(self, llm: Any, budget: float):
        self._llm, self._budget = llm, budget
        self.backend = str(getattr(llm, "backend", "simulated"))
        self._paid: list[Completion] = []
        self._refused = ""

    def _begin(self) -> None:
        self._paid, self._refused = [], ""

    def complete(
        self,
        *,
        system: str,
        messages: Any,
        tools: Any = (),
        schema: Any = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        if self._refused:
            raise TaskEnded(self._refused)
        request = {"system": system, "messages": messages, "tools": tuple(tools), "schema": schema}
        if not _plain(request) or not (model is None or type(model) is str) or type(max_tokens) is not int:
            raise ValueError(
                "a request to the grader's model must be plain data: text, numbers, lists, dicts and Tools"
            )
        try:
            reply = self._llm.complete(**request, model=model, max_tokens=max_tokens)
        except PaidError as error:
            self._charge(error.calls)
            raise
        self._charge([reply])
        return reply

    def _charge(self, replies: Any) -> None:
        dollars = spent([("", "", c) for c in [*self._paid, *replies]]).cost
        if dollars > self._budget:
            self._refused = f"budget of ${self._budget:g} per task reached"
            raise ModelError(f"refused: this call would take the task past its {self._refused}")
        self._paid += replies

    def __reduce__(self) -> tuple:
        raise TypeError("the grader's model cannot be copied")

    def __repr__(self) -> str:
        return "<the grader's model>"


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is plain data (and Tools): nothing of the learner's that could run here."""
    if depth > 50:
        return False
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is Tool:
        return _plain(value.input_schema, depth + 1)
    if type(value) in (list, tuple):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False


# --- the sandbox ----------------------------------------------------------------------------------


def present(helpers: list[str]) -> list[str]:
    """The helpers of `helpers` this kit has (a module of the capstone family may not be there yet)."""
    found = []
    for helper in helpers:
        module, path = helper.split(":")
        source = sandbox.kit_folder().joinpath(*module.split(".")[1:]).with_suffix(".py")
        try:
            _emptied(source.read_text(encoding="utf-8"), path, EXERCISE)
        except (OSError, LookupError):
            continue
        found.append(helper)
    return found


class CapstoneSession(Session):
    """A grading sandbox whose kit lacks HELPERS and records a reach for them (see GUARD)."""

    def make_kit(self, into: Path) -> Path:
        kit = kit_without(self.forbidden, sandbox.kit_folder(), into)
        for helper in self.forbidden[EXERCISE]:
            module = helper.split(":")[0].split(".")[1:]
            source = kit.joinpath(*module).with_suffix(".py")
            text = source.read_text(encoding="utf-8")
            said = re.sub(
                r"^(\s*)(raise ForbiddenHelper\(refusal\('12\.capstone', ('[^']*')\)\))$",
                r'\1__import__("sys").audit("agentlab.capstone.reach", \3)\n\1\2',
                text,
                flags=re.M,
            )
            source.write_text(said, encoding="utf-8")
        return kit


# The first cell the grader runs: an audit hook (Python offers no way to remove one) that ends the
# kernel, with an exit code the grader reads, when the notebook imports the instructor's hidden
# modules, opens a file outside the folders the sandbox shows it (or beside its own folder, in the
# grader's temporary folder that holds it), or, once the held-out tasks have
# begun, calls a helper of HELPERS.
GUARD = """def _agentlab_guard(roots, hidden, fenced, own):
    import os, sys
    tasks = []
    def inside(path, folder):
        return path == folder or path.startswith(folder.rstrip("/") + "/")
    def hook(event, args):
        if event == "agentlab.capstone.task":
            tasks.append(1)
        elif event == "agentlab.capstone.reach" and tasks:
            os._exit({helper})
        elif event == "import" and args and str(args[0]).startswith("agentlab.course.hidden"):
            os._exit({hidden})
        elif event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            try:
                path = os.path.realpath(os.fsdecode(os.fspath(args[0])))
            except Exception:
                return
            elsewhere = any(inside(path, f) for f in fenced) and not any(inside(path, r) for r in own)
            if inside(path, hidden) or elsewhere or not any(inside(path, root) for root in roots):
                os._exit({hidden})
    sys.addaudithook(hook)
_agentlab_guard({roots!r}, {kit_hidden!r}, {fenced!r}, {own!r})
del _agentlab_guard
"""

# The last cell: the one name the grader calls. It builds the setup around the grader's model and
# sends back only the answer (a str or None), whatever `my_team` returns.
ANSWER = f"""def {ANSWER_NAME}(task, llm):
    import sys
    sys.audit("agentlab.capstone.task")
    from agentlab.capstone import capstone_setup
    result = my_team(task, capstone_setup(llm))
    if result is None or isinstance(result, str):
        return result
    answer = getattr(result, "answer", None)
    return answer if answer is None or isinstance(answer, str) else str(answer)
"""


def guard_cell(workdir: Path, scratch: Path) -> str:
    """GUARD for a sandbox whose working folder is `workdir`: the folders it may open files in."""
    kit = sandbox.kit_folder()
    own = [os.path.realpath(p) for p in (workdir, scratch)]
    kits = [*sandbox.python_folders(), kit]
    roots = [*own, "/tmp", "/usr", "/etc", "/proc", "/sys", "/dev", "/lib", "/lib64", "/bin", "/sbin"]
    roots += [str(p) for p in kits]
    top = Path(*Path(own[0]).parts[:3])  # the grader's temporary folder around the learner's copy
    fenced = [str(top)] if top != Path(own[0]) and not any(p.is_relative_to(top) for p in kits) else []
    hidden = str(kit / "course" / sandbox.HIDDEN)
    said = {"roots": roots, "kit_hidden": hidden, "fenced": fenced, "own": own}
    return GUARD.format(helper=REACHED_HELPER, hidden=REACHED_HIDDEN, **said)


# --- grading one submission -----------------------------------------------------------------------


def grade(path: Path | str, timeout: float = 300, task_seconds: float = TASK_SECONDS) -> CapstoneGraded:
    """Grade one capstone notebook: its cells at most `timeout` seconds, then each held-out task at
    most `task_seconds`, all the tasks together at most `timeout`. Never raises."""
    from agentlab.course.cells import read_cells

    graded = CapstoneGraded(str(path), learner_of(path))
    try:
        nb = read_cells(Path(path))
    except Exception as error:  # not a file, not JSON, not a notebook
        return finish(graded, {"status": "crashed", "detail": f"not a notebook: {type(error).__name__}"})
    try:
        with tempfile.TemporaryDirectory(prefix="agentlab-capstone-") as copy:
            workdir = learner_copy(Path(path), Path(copy))
            found = run_submission([c.source for c in nb if c.kind == "code"], workdir, timeout, task_seconds)
    except Exception as error:  # the grader's own failure: said, and not the learner's status
        graded.broken = clean(f"the grader could not grade it: {type(error).__name__}: {error}")
        graded.results = [Result(EXERCISE, "not graded", graded.broken)]
        return graded
    return finish(graded, found)


def finish(graded: CapstoneGraded, found: dict) -> CapstoneGraded:
    """The gradebook line (status "passed" for a ranked submission) and the leaderboard's data."""
    found["detail"] = clean(found.get("detail", ""))
    graded.capstone = found
    status = "passed" if found["status"] == "ranked" else found["status"]
    graded.results = [Result(EXERCISE, status, found["detail"])]
    if found["status"] in ("crashed",):
        graded.broken = found["detail"]
    return graded


def run_submission(code: list[str], workdir: Path, timeout: float, task_seconds: float) -> dict:
    """Run the notebook's `code` cells in a sandbox, then its team on every held-out task."""
    from agentlab.capstone import BUDGET_PER_TASK
    from agentlab.course.hidden import capstone as hidden

    tasks = hidden.held_out()
    reference = reference_run(tasks)
    session = CapstoneSession(["", *code, ANSWER], workdir, {EXERCISE: present(HELPERS)})
    session.cells[0] = guard_cell(workdir, session.scratch)
    try:
        ran = session.run(timeout, numbers=[0, *range(len(code)), len(code)])
        if ran.broken:
            status = _exit_status(session, ran.broken)
            return {"status": status, "detail": f"{STATUSES[status]}: {ran.broken}", "reference": reference}
        try:
            team = session.get("my_team")
            answer = session.get(ANSWER_NAME)
        except NameError:
            return {"status": "no my_team", "detail": STATUSES["no my_team"], "reference": reference}
        except Exception as error:  # the kernel ended after its cells (a thread of the learner's, say)
            session.close(grace=2.0)
            status = _exit_status(session, "")
            return {"status": status, "detail": clean(f"{STATUSES[status]}: {error}"), "reference": reference}
        if type(team) is not LearnerRef or type(answer) is not LearnerRef:
            return {"status": "no my_team", "detail": "my_team is not a function", "reference": reference}
        model = GraderModel(hidden.grader_llm(), BUDGET_PER_TASK)
        found = run_tasks(session, answer, model, tasks, timeout, task_seconds)
    finally:
        session.cleanup()
    found["reference"] = reference
    if found["status"] == "ranked":
        found["detail"] = summary(found)
    return found


def public(task: Any) -> Any:
    """The task as the team gets it: the same question, no answer."""
    return dataclasses.replace(task, answer="")


def run_tasks(
    session: Session, answer: LearnerRef, model: GraderModel, tasks: list, timeout: float, task_seconds: float
) -> dict:
    """Call the team on each task in turn; stop at the first broken rule."""
    found: dict[str, Any] = {"status": "ranked", "detail": "", "tasks": len(tasks), "errors": 0}
    columns = {name: [] for name in ("right", "calls", "tokens", "cost", "seconds", "wall")}
    started = time.monotonic()
    for task in tasks:
        if time.monotonic() - started > timeout:
            found |= {
                "status": "too slow",
                "detail": f"the held-out tasks took more than {timeout:g} s in all",
            }
            break
        model._begin()
        stopped = threading.Event()
        timer = threading.Timer(task_seconds, _stop, (session, stopped))
        began = time.monotonic()
        timer.start()
        given = None
        try:
            value, _ = session.peer.ask(
                ("answer", answer.number, (public(task), model), {}), task_seconds + 10
            )
            given = value[:ANSWER_CHARS] if type(value) is str else None
        except TaskEnded:
            found |= {
                "status": "over budget",
                "detail": f"task {task.id}: it called again after the {model._refused}",
            }
        except wire.CodecError as error:
            found |= {"status": "crashed", "detail": f"task {task.id}: it sent what is not data ({error})"}
        except (wire.WireError, OSError, EOFError) as error:  # the kernel ended, or the timer ended it
            said = f"task {task.id} took more than {task_seconds:g} s"
            status = "too slow" if stopped.is_set() or isinstance(error, TimeoutError) else None
            session.close(grace=2.0)
            status = status or _exit_status(session, "")
            found |= {
                "status": status,
                "detail": said if status == "too slow" else _exit_said(status, task.id),
            }
        except Exception:  # the team's own exception: this task is wrong, the next goes on
            found["errors"] += 1
        finally:
            timer.cancel()
        if found["status"] == "ranked" and model._refused:
            found |= {
                "status": "over budget",
                "detail": f"task {task.id}: {model._refused}, and more was asked",
            }
        if found["status"] != "ranked":
            break
        calls = list(model._paid)
        if given and given.strip() and not calls:
            found |= {
                "status": "hard-coded",
                "detail": f"task {task.id} was answered with no call to the model",
            }
            break
        used = spent([("", "", c) for c in calls])
        columns["right"].append(bool(task.check(given)))
        columns["calls"].append(len(calls))
        columns["tokens"].append(used.tokens)
        columns["cost"].append(round(used.cost, 9))
        columns["seconds"].append(round(sum(c.latency for c in calls), 6))
        columns["wall"].append(round(time.monotonic() - began, 3))
    return found | columns


def _stop(session: Session, stopped: threading.Event) -> None:
    """A task's time is up: end its sandbox (the grader, reading, sees the conversation end)."""
    stopped.set()
    try:
        os.killpg(session.process.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _exit_status(session: Session, broken: str) -> str:
    """The status a kernel that ended says, by its exit code (the guard's), or how the run broke."""
    code = session.process.returncode if session.process is not None else None
    if code == REACHED_HIDDEN:
        return "reads hidden"
    if code == REACHED_HELPER:
        return "own model"
    return "too slow" if broken.startswith("still running") else "crashed"


def _exit_said(status: str, task_id: str) -> str:
    return (
        f"task {task_id}: {STATUSES[status]}" if status != "crashed" else f"its kernel died on task {task_id}"
    )


# --- the reference and the comparison -------------------------------------------------------------


def reference_run(tasks: list) -> dict:
    """The reference team on the held-out tasks, in this process, with the grader's model, metered
    the same way (a fresh model, so nothing a submission asked changes it)."""
    from agentlab.capstone import BUDGET_PER_TASK, capstone_setup, reference_team
    from agentlab.course.hidden import capstone as hidden

    model = GraderModel(hidden.grader_llm(), BUDGET_PER_TASK)
    columns = {name: [] for name in ("right", "calls", "tokens", "cost", "seconds")}
    for task in tasks:
        model._begin()
        try:
            outcome = reference_team(public(task), capstone_setup(model))
            given = outcome if isinstance(outcome, str) else outcome.answer
        except (Exception, TaskEnded):
            given = None
        used = spent([("", "", c) for c in model._paid])
        columns["right"].append(bool(task.check(given)))
        columns["calls"].append(len(model._paid))
        columns["tokens"].append(used.tokens)
        columns["cost"].append(round(used.cost, 9))
        columns["seconds"].append(round(sum(c.latency for c in model._paid), 6))
    return columns


def comparison(found: dict) -> dict:
    """A ranked submission against the reference, task by task: the paired tests' results."""
    from agentlab.evidence import paired_accuracy, paired_cost
    from agentlab.intervals import wilson
    from agentlab.verdicts import non_inferior

    ref = found["reference"]
    right, n = found["right"], len(found["right"])
    accuracy = paired_accuracy(right, ref["right"], ("team", "reference"))
    low, high = wilson(sum(right), n)
    return {
        "accuracy": accuracy,
        "interval": (float(low), float(high)),
        "kept": non_inferior(accuracy, MARGIN),
        "cost": paired_cost(found["cost"], ref["cost"], ("team", "reference")),
        "seconds": paired_cost(found["seconds"], ref["seconds"], ("team", "reference"), unit="s"),
    }


def summary(found: dict) -> str:
    """One line for the gradebook (it fits the 110 characters a console line shows): accuracy with
    its interval, whether it is within MARGIN of the reference, cost and model seconds per task."""
    seen = comparison(found)
    low, high = seen["interval"]
    acc, cost, seconds = seen["accuracy"], seen["cost"], seen["seconds"]
    level = "within" if seen["kept"].kept else "not shown within"
    return (
        f"{acc.a_right}/{acc.tasks} right [{100 * low:.0f}-{100 * high:.0f}%], reference {acc.b_right}, "
        f"{level} {100 * MARGIN:.0f} pts; ${cost.mean_a:.5f} vs ${cost.mean_b:.5f}, "
        f"{seconds.mean_a:.1f} vs {seconds.mean_b:.1f} model s a task"
    )
