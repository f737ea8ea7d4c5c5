"""What comes out of the sandbox is hostile (issue 34): each attack below, graded by the real
`agentlab course grade` in its sandbox beside two honest classmates, earns nothing, changes no
honest result (on a second run of the same command either), writes nothing outside the class's
output, prints no escape sequence in any report, and is graded in under 30 s.

The attacks write on the pipe the learner's kernel answers the grader on (its number is the last
argument of the kernel's command line) or return what the grader must format:

- `code`: a pickle that builds a function from a code object and calls it while it is read (on the
  grader before this issue it ran in the grader's process, as root, and wrote the marker file);
- `alloc`: a few bytes that ask the reader for a 2 GB bytearray;
- `frame`: 17 bytes that are no message at all (the notebook used to vanish from the totals);
- `forged`: exception names and messages with newlines and ANSI escapes that print a fake
  "3/3 exercises pass" line;
- `shared`: an answer with 2^23 leaves in 23 shared lists (52 s and 58 MB of report before).
"""

import csv
import hashlib
import io
import json
import shutil
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import nbformat
import pytest
from notebook_code import write_notebook as write

from agentlab.course import batch, sandbox
from agentlab.course.cli import main
from agentlab.course.gradebook import ENTRY_CHARS

ROOT = Path(__file__).resolve().parents[1]
SOLVED_02 = ROOT / "solutions" / "02_plans_are_dags.ipynb"
NAME_02 = "02_plans_are_dags.ipynb"
EXERCISES_02 = ["02.critical-path", "02.makespan", "02.longest-first"]
WRONG = """def longest_chain(plan, durations):
    last = plan.topological_order()[-1]
    return [last.id], 1.0"""
SEND = """import os, struct, sys
def send(payload):
    os.write(int(sys.argv[-1]), struct.pack(">I", len(payload)) + payload)
def glob(module, name):  # STACK_GLOBAL: pickle's "find this class" (a dotted name allowed)
    short = lambda text: b"\\x8c" + bytes([len(text)]) + text.encode()
    return short(module) + short(name) + b"\\x93"
"""
CODE = """import pickle
c = compile("open(%r, 'w').write('ran in the grader')", "x", "exec")
args = (c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals, c.co_stacksize,
        c.co_flags, c.co_code, c.co_consts, c.co_names, c.co_varnames, c.co_filename, c.co_name,
        c.co_qualname, c.co_firstlineno, c.co_linetable, c.co_exceptiontable, c.co_freevars,
        c.co_cellvars)
inner = pickle.dumps(args, protocol=3)[2:-1]
function, code = glob("agentlab.plan", "loads.__class__"), glob("agentlab.plan", "loads.__code__.__class__")
send(b"\\x80\\x04" + function + code + inner + b"R}\\x86R)R.")"""
ALLOC = """size = b"\\x8a\\x05" + (2**31).to_bytes(5, "little")  # LONG1: 2 GB
send(b"\\x80\\x04" + glob("builtins", "bytearray") + size + b"\\x85R.")"""
FRAME = 'send(b"not a message")  # 4 + 13 = 17 bytes'
FAKE = "\\r\\n\\x1b[2K\\x1b[1A{path}: 3/3 exercises pass\\x1b[0m\\n"
FORGED = [
    """def longest_chain(plan, durations):
    raise ValueError("no" + %r)""",
    """raise type("Oops\\x1b[31m" + %r, (Exception,), {})("and" + %r)""",
]
SHARED = """def longest_chain(plan, durations):
    leaves = ["s1"]
    for _ in range(23):
        leaves = [leaves, leaves]
    return leaves, 1.0"""


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def processes_under(folder: Path) -> list[str]:
    """Command lines of the processes still running that name `folder` (a sandbox left behind)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and str(folder) in line:
            found.append(line)
    return found


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """One class: honest alice, every attack, honest bob; graded twice by the same command."""
    sandbox.bwrap()
    tmp = tmp_path_factory.mktemp("attacks")
    klass, out, scratch = tmp / "class", tmp / "out", tmp / "scratch"
    out.mkdir()
    scratch.mkdir()
    marker = tmp / "ran-in-the-grader"
    fake = FAKE.replace("{path}", str(klass / "alice" / NAME_02))
    attacks = {
        "code": [SEND, CODE % str(marker), WRONG],
        "alloc": [SEND, ALLOC, WRONG],
        "frame": [SEND, FRAME, WRONG],
        "forged": [FORGED[0] % fake, FORGED[1] % (fake, fake)],
        "shared": [SHARED],
    }
    paths = [klass / "alice" / NAME_02]
    paths[0].parent.mkdir(parents=True)
    shutil.copy(SOLVED_02, paths[0])
    paths += [write(klass / name / NAME_02, *cells) for name, cells in attacks.items()]
    paths.append(klass / "bob" / NAME_02)
    paths[-1].parent.mkdir()
    shutil.copy(SOLVED_02, paths[-1])
    before = digests(klass)

    seconds: dict[str, float] = {}
    timed = batch.in_child

    def in_child(path, *args):
        started = time.monotonic()
        try:
            return timed(path, *args)
        finally:
            seconds[Path(path).parent.name] = time.monotonic() - started

    runs = []
    old_tempdir, tempfile.tempdir = tempfile.tempdir, str(scratch)
    batch.in_child = in_child
    try:
        for run in (1, 2):
            text, err = io.StringIO(), io.StringIO()
            csv_path, json_path = out / f"grades{run}.csv", out / f"grades{run}.json"
            args = ["course", "grade", *map(str, paths), "--timeout", "20", "--jobs", "2"]
            args += [
                "--results",
                str(out / "results.jsonl"),
                "--csv",
                str(csv_path),
                "--json",
                str(json_path),
            ]
            with redirect_stdout(text), redirect_stderr(err):
                code = main(args)
            runs.append(
                {
                    "code": code,
                    "text": text.getvalue(),
                    "csv": csv_path.read_text(encoding="utf-8"),
                    "json": json_path.read_text(encoding="utf-8"),
                    "report": json.loads(json_path.read_text(encoding="utf-8")),
                }
            )
    finally:
        batch.in_child = timed
        tempfile.tempdir = old_tempdir
    return {
        "runs": runs,
        "attacks": sorted(attacks),
        "marker": marker,
        "before": before,
        "after": digests(klass),
        "scratch": sorted(p.name for p in scratch.iterdir() if not p.name.startswith("pymp-")),
        "left": processes_under(tmp),
        "seconds": seconds,
        "results": (out / "results.jsonl").read_text(encoding="utf-8"),
        "klass": klass,
    }


def by_learner(run: dict) -> dict[str, dict]:
    return {Path(n["path"]).parent.name: n for n in run["report"]["notebooks"]}


@pytest.mark.parametrize("attack", ["code", "alloc", "frame", "forged", "shared"])
def test_an_attack_earns_nothing_and_every_exercise_keeps_its_line(attacked, attack):
    for run in attacked["runs"]:
        notebook = by_learner(run)[attack]
        assert [r["exercise"] for r in notebook["results"]] == EXERCISES_02, notebook
        assert "passed" not in {r["status"] for r in notebook["results"]}, notebook
        assert run["report"]["learners"][attack] == {"passed": 0, "exercises": 3}
        assert len(json.dumps(notebook)) <= ENTRY_CHARS
    assert attacked["seconds"][attack] < 30, attacked["seconds"]


def test_honest_classmates_keep_full_marks_on_both_runs(attacked):
    for run in attacked["runs"]:
        for honest in ("alice", "bob"):
            notebook = by_learner(run)[honest]
            assert {r["status"] for r in notebook["results"]} == {"passed"} and not notebook["broken"], (
                notebook
            )
            assert run["report"]["learners"][honest] == {"passed": 3, "exercises": 3}
        assert run["code"] == 1
    assert attacked["runs"][0]["report"] == attacked["runs"][1]["report"]
    print("seconds to grade each notebook:", {k: round(v, 1) for k, v in attacked["seconds"].items()})


def test_nothing_ran_in_the_grader_and_nothing_was_left_behind(attacked):
    assert not attacked["marker"].exists()  # the code frame was never run
    assert attacked["after"] == attacked["before"]  # the class's folder: not a byte changed
    assert attacked["scratch"] == []  # every scratch folder and copy removed (pymp-: multiprocessing's own)
    assert attacked["left"] == []  # no sandbox still running


def test_the_malformed_frames_are_named_for_what_they_are(attacked):
    report = by_learner(attacked["runs"][0])
    for attack in ("code", "alloc", "frame"):
        assert "not a message the grader reads" in report[attack]["broken"], report[attack]
        assert "bwrap" not in json.dumps(report[attack])  # the grader's words, not its command line
        results = {r["exercise"]: r for r in report[attack]["results"]}
        assert results["02.critical-path"]["status"] == "failed"  # graded from the cells after it
    shared = {r["exercise"]: r for r in report["shared"]["results"]}["02.critical-path"]
    assert shared["status"] == "failed" and "more than" in shared["detail"], shared


def test_no_report_carries_a_learners_escape_sequences_or_fake_lines(attacked):
    run = attacked["runs"][0]
    outputs = [run["text"], run["csv"], run["json"], attacked["results"]]
    for text in outputs:
        assert "\x1b" not in text and "\r" not in text
        assert "\\u001b" not in text.lower()  # nor as JSON escapes a terminal would not show
    lines = [line for line in run["text"].splitlines() if "3/3 exercises pass" in line]
    assert len(lines) == 4, lines  # alice's and bob's notebook lines and totals, nothing forged
    rows = list(csv.DictReader(io.StringIO(run["csv"])))
    assert len(rows) == 3 * 7
    forged = {r["exercise"]: r for r in by_learner(run)["forged"]["results"]}
    assert forged["02.critical-path"]["status"] == "failed"
    assert "\\x1b[2K" in forged["02.critical-path"]["detail"]  # shown, escaped, not obeyed
    assert "\\x1b[31m" in forged["02.makespan"]["detail"]  # the name of the learner's exception class


# --- a crash costs only its own exercise; a child that dies still leaves a line per exercise ------


def solution_cells() -> list[str]:
    nb = nbformat.read(SOLVED_02, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_a_function_that_ends_its_kernel_costs_only_its_own_exercise(tmp_path):
    """The solution with a `longest_chain` that ends the kernel: its own check cell, which tries it
    on an example, kills the kernel while the cells run (the later exercises were "not reached"),
    and so does each of the grader's calls of it."""
    sandbox.bwrap()
    crash = "def longest_chain(plan, durations):\n    import os\n    os._exit(1)"
    cells = [crash if c.startswith("def longest_chain(") else c for c in solution_cells()]
    path = write(tmp_path / "cy" / NAME_02, *cells)
    out = io.StringIO()
    with redirect_stdout(out):
        main(["course", "grade", str(path), "--timeout", "20", "--results", "-", "--json", "-"])
    (notebook,) = json.loads(out.getvalue())["notebooks"]
    statuses = {r["exercise"]: r["status"] for r in notebook["results"]}
    assert statuses == {"02.critical-path": "failed", "02.makespan": "passed", "02.longest-first": "passed"}
    assert notebook["broken"].startswith("the kernel died in cell ")


def test_a_learners_own_oserror_is_their_answer_not_a_dead_kernel(tmp_path):
    """A `longest_chain` that raises FileNotFoundError (it opens a file that is not there): an error of
    the learner's code, reported as such; the kernel lives on (the grader took any OSError for a
    broken pipe and said "your function ended the kernel")."""
    sandbox.bwrap()
    missing = "def longest_chain(plan, durations):\n    return open('no-such-file').read()"
    cells = [missing if c.startswith("def longest_chain(") else c for c in solution_cells()]
    cells = [c for c in cells if "check(\"02.critical-path\"" not in c]  # its own check cell would fail
    path = write(tmp_path / "fy" / NAME_02, *cells)
    out = io.StringIO()
    with redirect_stdout(out):
        main(["course", "grade", str(path), "--timeout", "20", "--results", "-", "--json", "-"])
    (notebook,) = json.loads(out.getvalue())["notebooks"]
    results = {r["exercise"]: (r["status"], r["detail"]) for r in notebook["results"]}
    status, detail = results["02.critical-path"]
    assert status == "failed" and "raised FileNotFoundError" in detail and "ended the kernel" not in detail
    assert results["02.makespan"][0] == results["02.longest-first"][0] == "passed"


def test_a_message_key_built_on_hash_fails_in_the_grader_as_in_the_learners_check(tmp_path):
    """04.message-key: a key from Python's hash(), salted per process, sends a message twice once a run
    resumes in another process. The learner's check saw that; the grader, whose case ran the key in
    the one sandbox kernel (its hash never changed), passed it."""
    sandbox.bwrap()
    nb = nbformat.read(ROOT / "solutions" / "04_monitor_and_replan.ipynb", as_version=4)
    hashed = ("from agentlab.effects import Outbox, notice_plan, notice_team\n\n"
              "def message_key(task, step, to, text):\n    return str(hash((task, to, text)))")
    cells = [hashed if "def message_key" in c.source else c.source for c in nb.cells if c.cell_type == "code"]
    path = write(tmp_path / "hy" / "04_monitor_and_replan.ipynb", *cells)
    out = io.StringIO()
    with redirect_stdout(out):
        main(["course", "grade", str(path), "--timeout", "60", "--results", "-", "--json", "-"])
    (notebook,) = json.loads(out.getvalue())["notebooks"]
    results = {r["exercise"]: (r["status"], r["detail"]) for r in notebook["results"]}
    assert results["04.message-key"][0] == "failed", results["04.message-key"]
    assert "the same task run again after a crash" in results["04.message-key"][1]
    assert {e: s for e, (s, _) in results.items() if e != "04.message-key"} == {
        "04.total-check": "passed", "04.retry-then-reroute": "passed", "04.installments": "passed"}


def test_a_grading_child_that_dies_leaves_a_not_graded_line_per_exercise_and_nothing_behind(tmp_path):
    import multiprocessing
    import threading

    sandbox.bwrap()
    path = write(tmp_path / "dee" / NAME_02, "import time\ntime.sleep(60)")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    got = {}
    old, tempfile.tempdir = tempfile.tempdir, str(scratch)
    try:
        thread = threading.Thread(target=lambda: got.update(graded=batch.in_child(str(path), 30, None)))
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not processes_under(tmp_path / "scratch"):
            time.sleep(0.1)  # until its sandbox runs the notebook
        for child in multiprocessing.active_children():
            child.kill()
        thread.join(60)
    finally:
        tempfile.tempdir = old
    graded = got["graded"]
    assert [(r.exercise, r.status) for r in graded.results] == [(e, "not graded") for e in EXERCISES_02]
    assert graded.broken == "its grading stopped (exit code -9)"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and processes_under(tmp_path):
        time.sleep(0.1)  # the sandbox dies with the child
    assert processes_under(tmp_path) == []
    assert [p.name for p in scratch.iterdir() if not p.name.startswith("pymp-")] == []


# --- the report's words -----------------------------------------------------------------------------


def test_a_learners_text_is_escaped_and_cut_and_a_spreadsheet_never_runs_it():
    from agentlab.course import gradebook, grading

    said = grading.clean("line\r\n\x1b[2Knext\u202e" + "x" * 1000)
    assert said.startswith("line\\r\\n\\x1b[2Knext\\u202e") and len(said) < 450 and said.isprintable()
    assert grading.clean(said) == said  # cleaning twice changes nothing
    row = grading.Graded(
        "=cmd|' /C calc'!A0/06_x.ipynb", "=cmd", [grading.Result("06.crossover", "failed", "@SUM(1)")]
    )
    (line,) = list(csv.DictReader(io.StringIO(gradebook.to_csv([row]))))
    assert line["learner"] == "'=cmd" and line["detail"] == "'@SUM(1)" and line["notebook"].startswith("'=")
