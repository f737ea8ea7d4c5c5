"""The grader cannot be fooled by what a notebook does: every attack issue 21 found, graded in the
sandbox in one batch beside honest notebooks (0 wrong credits, every honest result kept), a batch
killed with SIGKILL that resumes, the reports, plain data on the wire, and the learners' release.

Each attack notebook is small: the kit's exercise 02 answers (`longest_chain`, `finish_time`,
`longest_chain_first`), a wrong or missing answer, and the attack. On the grader before issue 21
(which graded from records the learner's kernel wrote) every one of them earned credit.
"""

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from notebook_code import write_notebook

import agentlab
from agentlab.course import codec, release, sandbox
from agentlab.course.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOLVED_02 = ROOT / "solutions" / "02_plans_are_dags.ipynb"
NAME_02 = "02_plans_are_dags.ipynb"
WRONG = """def longest_chain(plan, durations):
    last = plan.topological_order()[-1]
    return [last.id if hasattr(last, "id") else last], 1.0"""
STUB = 'def longest_chain(plan, durations):\n    raise NotImplementedError("Exercise: write this part.")'
IMPORTS = "from agentlab.course.checks import check\nfrom agentlab.course import checks"
CHECK_ALL = """for key, name in (("02.critical-path", "longest_chain"), ("02.makespan", "finish_time"),
                  ("02.longest-first", "longest_chain_first")):
    if name in globals():
        try:
            check(key, globals()[name])
        except Exception:
            pass"""
SWALLOW = 'try:\n    check("02.critical-path", longest_chain)\nexcept Exception:\n    pass'

ATTACKS = {
    # "passed" records appended to the grader's log, after a real failure
    "log": [
        WRONG,
        SWALLOW,
        """import json, os
path = os.environ.get("AGENTLAB_CHECK_LOG") or "checks.jsonl"
for ex in ("02.critical-path", "02.makespan", "02.longest-first"):
    with open(path, "a") as log:
        log.write(json.dumps({"exercise": ex, "event": "start"}) + "\\n")
        end = {"exercise": ex, "event": "end", "status": "passed", "passed": 9, "failed": 0}
        log.write(json.dumps(end) + "\\n")""",
    ],
    # an exercise's cases replaced in the registry
    "registry": [
        WRONG,
        """from agentlab.course.checks import Case, Exercise
for key in ("02.critical-path", "02.makespan", "02.longest-first"):
    old = checks.find(key)
    checks.REGISTRY[key] = Exercise(key, old.title, old.hint, lambda answer: iter([Case("anything", True)]))
    check(key, None)""",
    ],
    # the function that writes records wrapped to say "passed"
    "record": [
        """original = checks._record
def lying(exercise, event, **facts):
    if event == "end":
        facts.update(status="passed", failed=0)
    original(exercise, event, **facts)
checks._record = lying""",
        WRONG,
        SWALLOW,
    ],
    # the reference helper the check compares against patched to agree with the wrong answer
    "reference": [
        """import agentlab.course.checks.nb02 as module
module._span = lambda plan, workers: 1.0
finish_time = lambda plan, durations, workers: 1.0""",
        CHECK_ALL,
    ],
    # check called again with a lambda that uses the helper the exercise forbids
    "lambda": [STUB, 'check("02.critical-path", lambda plan, durations: plan.critical_path(durations))'],
    # the forbidden helpers as the answers themselves, one captured before any cell of the learner's ran
    "forbidden": [
        """from agentlab.plan import Plan
from agentlab.schedule import makespan, virtual_schedule
kept = Plan.critical_path
longest_chain = lambda plan, durations: kept(plan, durations)
finish_time = lambda plan, durations, workers: makespan(virtual_schedule(plan, durations, workers))""",
        CHECK_ALL,
    ],
    # the instructor's solutions, found next to the installed kit
    "solutions": [
        """import json, agentlab
from pathlib import Path
found = Path(agentlab.__file__).resolve().parents[1] / "solutions" / "02_plans_are_dags.ipynb"
for cell in json.loads(found.read_text())["cells"]:
    if cell["cell_type"] == "code" and "check(" not in "".join(cell["source"]):
        try:
            exec("".join(cell["source"]))
        except Exception:
            pass""",
        CHECK_ALL,
    ],
    # a classmate's notebook, one folder up
    "classmate": [
        """import json
from pathlib import Path
found = Path.cwd().parent / "alice" / "02_plans_are_dags.ipynb"
for cell in json.loads(found.read_text())["cells"]:
    if cell["cell_type"] == "code" and "check(" not in "".join(cell["source"]):
        try:
            exec("".join(cell["source"]))
        except Exception:
            pass""",
        CHECK_ALL,
    ],
    # a check module rewritten on disk, so the next learner's wrong answer passes
    "rewrite": [
        """from pathlib import Path
import agentlab.course.checks.nb02 as module
source = Path(module.__file__)
head = "def critical_path(longest_chain: Callable) -> Iterator[Case]:\\n"
try:
    source.write_text(source.read_text().replace(head, head + "    yield Case('ok', True)\\n    return\\n"))
except OSError as error:
    print(error)""",
        WRONG,
    ],
    # the grader's process killed: the kernel's parent and every ancestor above it (never a scan of all
    # processes: should the sandbox ever fail open, this kills the test run, not the machine)
    "kill": [
        """import os, signal
pid, ancestors = os.getppid(), []
while pid > 1:
    ancestors.append(pid)
    with open(f"/proc/{pid}/stat") as stat:
        pid = int(stat.read().rsplit(")", 1)[1].split()[1])
for pid in ancestors + [1]:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass""",
        WRONG,
    ],
    # a number whose arithmetic and == always agree, and strings that equal every answer
    "subclass": [
        """class Anything(float):
    def __eq__(self, other): return True
    def __sub__(self, other): return Anything(0.0)
    def __rsub__(self, other): return Anything(0.0)
    def __abs__(self): return 0.0
    __hash__ = float.__hash__
def finish_time(plan, durations, workers):
    return Anything(1.0)
class Path(list):
    def __eq__(self, other): return True
def longest_chain(plan, durations):
    return Path(["nowhere"]), Anything(0.0)""",
        CHECK_ALL,
    ],
}


def write(path: Path, *sources: str) -> Path:
    return write_notebook(path, IMPORTS, *sources)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """One batch as an instructor runs it: two honest learners with the same folder name in two
    sections, every attack, a wrong answer graded after the rewrite attack, and three reports."""
    sandbox.bwrap()  # no bubblewrap, no grading: the test fails here with the reason
    tmp = tmp_path_factory.mktemp("class")
    paths = {}
    for section in ("a", "b"):
        paths[f"{section}/alice"] = tmp / section / "alice" / NAME_02
        paths[f"{section}/alice"].parent.mkdir(parents=True)
        shutil.copy(SOLVED_02, paths[f"{section}/alice"])
    for name, cells in ATTACKS.items():
        paths[f"a/{name}"] = write(tmp / "a" / name / NAME_02, *cells)
    paths["a/trent"] = write(tmp / "a" / "trent" / NAME_02, WRONG, CHECK_ALL)  # graded after the rewrite
    misfiled = tmp / "a" / "misfiled" / NAME_02  # the kit's exercise 06, saved under 02's name
    misfiled.parent.mkdir()
    shutil.copy(ROOT / "exercises" / "06_error_propagation.ipynb", misfiled)
    paths["a/misfiled"] = misfiled
    paths["a/old"] = write(tmp / "a" / "old" / NAME_02, "from agentlab.planning import Planner", WRONG)
    checks_02 = Path(agentlab.__file__).parent / "course" / "checks" / "nb02.py"
    before = digest(checks_02)
    ordered = [str(p) for p in paths.values()]
    out = io.StringIO()
    started = time.monotonic()
    args = ["course", "grade", *ordered, "--timeout", "30", "--jobs", "2", "--results", str(tmp / "r.jsonl")]
    args += ["--json", "-"]
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        code = main(args)
    seconds = time.monotonic() - started
    report = json.loads(out.getvalue())
    by_learner = {n["learner"]: n for n in report["notebooks"]}
    return {
        "code": code,
        "report": report,
        "by": by_learner,
        "before": before,
        "after": digest(checks_02),
        "seconds": seconds,
    }


def statuses(graded_class, learner):
    return {r["exercise"]: r["status"] for r in graded_class["by"][learner]["results"]}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_earns_no_credit(graded_class, attack):
    assert "passed" not in statuses(graded_class, f"a/{attack}").values()


def test_the_batch_gives_no_wrong_credit_and_keeps_every_honest_result(graded_class):
    honest = {"a/alice", "b/alice"}
    for learner, notebook in graded_class["by"].items():
        passed = {r["exercise"] for r in notebook["results"] if r["status"] == "passed"}
        if learner in honest:
            assert passed == {"02.critical-path", "02.makespan", "02.longest-first"}, notebook
            assert not notebook["broken"]
        else:
            assert not passed, notebook
    assert graded_class["code"] == 1
    assert graded_class["seconds"] < 120, graded_class["seconds"]
    print(f"{len(graded_class['by'])} notebooks graded in {graded_class['seconds']:.1f} s")


def test_what_the_attacks_ran_into(graded_class):
    by = graded_class["by"]
    detail = {r["exercise"]: r["detail"] for r in by["a/forbidden"]["results"]}
    assert "asks you not to call Plan.critical_path" in detail["02.critical-path"]
    assert "asks you not to call virtual_schedule" in detail["02.makespan"]
    assert statuses(graded_class, "a/lambda")["02.critical-path"] == "not done"  # its own function: the stub
    assert "FileNotFoundError" in json.dumps(by["a/solutions"]) and "FileNotFoundError" in json.dumps(
        by["a/classmate"]
    )
    assert graded_class["after"] == graded_class["before"]  # the kit is read-only in the sandbox
    assert statuses(graded_class, "a/trent")["02.critical-path"] == "failed"  # the rewrite never happened
    assert statuses(graded_class, "a/kill")["02.critical-path"] == "failed"  # it saw only its own sandbox
    odd = statuses(graded_class, "a/subclass")
    assert (odd["02.critical-path"], odd["02.makespan"]) == ("failed", "failed")  # compared as plain numbers


def test_reports_keep_learners_apart_say_what_a_misfiled_notebook_holds_and_show_the_first_error(
    graded_class,
):
    report = graded_class["report"]
    assert report["learners"]["a/alice"] == {"passed": 3, "exercises": 3}
    assert report["learners"]["b/alice"] == {"passed": 3, "exercises": 3}
    assert graded_class["by"]["a/misfiled"]["broken"] == (
        "this file holds notebook 06's exercises, saved under 02: rename it 06_….ipynb"
    )
    details = {
        r["detail"] for r in graded_class["by"]["a/old"]["results"] if r["exercise"] != "02.critical-path"
    }
    assert details == {
        "the notebook's first error: ModuleNotFoundError: No module named 'agentlab.planning' (cell 2)"
    }


# --- a batch killed with SIGKILL resumes -----------------------------------------------------------


def test_a_batch_killed_midway_resumes_without_regrading_what_is_done(tmp_path):
    sandbox.bwrap()
    paths = [str(write(tmp_path / name / NAME_02, WRONG)) for name in ("ann", "ben", "cat")]
    results = tmp_path / "results.jsonl"
    argv = [sys.executable, "-m", "agentlab.course.cli", "course", "grade", *paths, "--results", str(results)]
    child = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 1):
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    done_before = results.read_text().count("\n")
    assert 1 <= done_before < 3  # killed midway, with what was finished kept

    err = io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        assert main(["course", "grade", *paths, "--results", str(results)]) == 1
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(Path(r["path"]).parent.name for r in rows) == ["ann", "ben", "cat"]  # each graded once
    assert f"{done_before} notebook(s) already graded" in err.getvalue()
    assert err.getvalue().count("graded /") == 3 - done_before


# --- what crosses from the sandbox ---------------------------------------------------------------


def back(value):
    """`value` as the grader receives it from the sandbox."""
    data = codec.encode(value, lambda obj: ("L", 1, type(obj).__name__))
    return codec.decode(data, lambda tag, n, kind: ("learner's", kind))


def test_answers_cross_as_plain_data_so_odd_objects_gain_nothing():
    class Anything(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    class Yes(str):
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    class Sneaky(dict):
        def __eq__(self, other):
            return True

    got = back({"n": Anything(2.5), "s": Yes("flat"), "d": Sneaky(a=1), "t": (1, [2, {3}])})
    assert got == {"n": 2.5, "s": "flat", "d": {"a": 1}, "t": (1, [2, {3}])}
    assert type(got["n"]) is float and type(got["s"]) is str and type(got["d"]) is dict
    assert got["n"] != 1.0 and got["s"] != "hierarchy"
    assert back(lambda: 1) == ("learner's", "function")  # behaviour stays in the sandbox
    np = pytest.importorskip("numpy")
    assert type(back(np.float64(0.5))) is float and back(np.arange(3)) == [0, 1, 2]


def test_an_answer_template_left_as_shipped_crosses_as_itself_and_is_not_done():
    from agentlab.course.grading import verdict

    template = back({"p": "flat", "q": ..., "r": ..., "s": ...})
    assert template == {"p": "flat", "q": ..., "r": ..., "s": ...}
    assert verdict("01.when-hierarchy", template).status == "not done"  # not "failed": never written


def test_the_grader_refuses_anything_but_plain_data_and_the_kits_classes():
    import pickle

    evil = pickle.dumps(os.system)  # a function by reference: never built on the grader's side
    with pytest.raises(codec.CodecError):
        codec.decode(evil, None)
    from agentlab.plan import Step

    assert back(Step("s1", "writer", "Write.")) == Step("s1", "writer", "Write.")


# --- the learners' release -------------------------------------------------------------------------


def test_the_release_holds_no_solutions_grading_cases_or_keys(tmp_path):
    target = tmp_path / "release"
    assert main(["course", "release", str(target), "--root", str(ROOT)]) == 0
    files = [p.relative_to(target) for p in target.rglob("*") if p.is_file()]
    assert any(p.parts[0] == "exercises" for p in files) and any(p.parts[0] == "notebooks" for p in files)
    assert not [p for p in files if {"solutions", "hidden", "tests"} & set(p.parts)]
    for path in target.rglob("*.ipynb"):
        assert "BEGIN SOLUTION" not in path.read_text()
    from agentlab.course.hidden import nb01, nb07  # the multiple-choice keys: in no shipped file

    keys = [repr(nb01.SYMPTOMS), repr(nb01.WHEN), repr(nb07.SHAPES), "SYMPTOMS", "GIVEN_UP", "_WHEN"]
    for path in target.rglob("*.py"):
        text = path.read_text()
        assert not [k for k in keys if k in text], path
    with pytest.raises(release.ReleaseError, match="not empty"):
        release.build(ROOT, target)
