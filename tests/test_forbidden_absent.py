"""Forbidden means absent: while the grader grades an exercise that forbids kit helpers (02.critical-path
forbids `Plan.critical_path`), those helpers are not in the sandbox at all, so no route gets them back.

The escape notebook answers 02.critical-path and 02.makespan by fetching the forbidden helper's
original at grading time, inside the answer, by every route in turn (reload, a trap's closure,
`__wrapped__`, `gc`, `sys.modules`, re-executing the module's file, reading its source or its cached
bytecode). Outside the sandbox each route returns a working original (checked below). On the grader
that only trapped the helpers, seven of the eight routes, each in a notebook of its own, earned
credit (all but `__wrapped__`). The instructor's solution, whose other cells call `critical_path`
themselves, still passes every exercise.
"""

import io
import json
import py_compile
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from notebook_code import write_notebook as write

from agentlab import plan, schedule
from agentlab.course.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOLVED_02 = ROOT / "solutions" / "02_plans_are_dags.ipynb"
NAME_02 = "02_plans_are_dags.ipynb"

# Each route defines `original(module, path)`: the helper's working original, or an error.
ANSWERS = """
from agentlab.schedule import makespan

def longest_chain(plan, durations):
    return original("agentlab.plan", "Plan.critical_path")(plan, durations)

def finish_time(plan, durations, workers):
    return makespan(original("agentlab.schedule", "virtual_schedule")(plan, durations, workers))
"""
COMMON = """
import gc, importlib, importlib.util, inspect, marshal, sys, types
from pathlib import Path

def attribute(owner, path):
    for part in path.split("."):
        owner = getattr(owner, part)
    return owner

def from_code(code, module):
    fresh = types.ModuleType(module + "_copy")
    fresh.__file__ = importlib.import_module(module).__file__
    sys.modules[fresh.__name__] = fresh
    exec(code, fresh.__dict__)
    return fresh
"""
ROUTES = {
    "reload": """
def original(module, path):
    return attribute(importlib.reload(importlib.import_module(module)), path)
""",
    "sys.modules": """
def original(module, path):
    for name in [n for n in sys.modules if n == module or n.startswith(module + ".")]:
        del sys.modules[name]
    return attribute(importlib.import_module(module), path)
""",
    "closure": """
def original(module, path):
    helper = attribute(importlib.import_module(module), path)
    while True:
        inner = [c.cell_contents for c in (getattr(helper, "__closure__", None) or ())
                 if callable(c.cell_contents) and getattr(c.cell_contents, "__name__", "") == helper.__name__]
        if not inner:
            return helper
        helper = inner[0]
""",
    "wrapped": """
def original(module, path):
    return inspect.unwrap(attribute(importlib.import_module(module), path))
""",
    "gc": """
def original(module, path):
    name = path.split(".")[-1]
    seen, todo = [], [attribute(importlib.import_module(module), path)]
    while todo and len(seen) < 200:  # what the helper refers to, then what that refers to
        here = todo.pop()
        seen.append(here)
        todo += [r for r in gc.get_referents(here) if not isinstance(r, (str, int, type(None), dict))]
    found = [f for f in [*seen, *gc.get_objects()] if isinstance(f, types.FunctionType)]
    found = [f for f in found if f.__code__.co_name == name]

    def each(*args):  # a function of that name may be another's (a check's): try them all
        for function in found:
            try:
                return function(*args)
            except Exception:
                pass
        raise LookupError(name)
    return each
""",
    "spec": """
def original(module, path):
    spec = importlib.util.spec_from_file_location(module + "_copy", importlib.import_module(module).__file__)
    fresh = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fresh
    spec.loader.exec_module(fresh)
    return attribute(fresh, path)
""",
    "open": """
def original(module, path):
    source = Path(importlib.import_module(module).__file__)
    with open(source, encoding="utf-8") as file:
        return attribute(from_code(compile(file.read(), str(source), "exec"), module), path)
""",
    "bytecode": """
def original(module, path):
    source = Path(importlib.import_module(module).__file__)
    for cached in sorted((source.parent / "__pycache__").glob(source.stem + ".*.pyc")):
        with open(cached, "rb") as file:
            return attribute(from_code(marshal.loads(file.read()[16:]), module), path)
    cached = Path(importlib.util.cache_from_source(str(source)))
    with open(cached, "rb") as file:
        return attribute(from_code(marshal.loads(file.read()[16:]), module), path)
""",
}
TRY_EVERY_ROUTE = """
def original(module, path):
    def first_that_runs(*args):
        tried = []
        for route in ROUTES:  # reload and sys.modules last: see escape_cell
            try:
                return route(module, path)(*args)
            except Exception as error:
                tried.append(f"{route.__name__}: {type(error).__name__}")
        raise LookupError("; ".join(tried))
    return first_that_runs
"""


def escape_cell() -> str:
    """One cell that defines a function per route and `original`, which tries them all in turn."""
    # reload and sys.modules last: each leaves the kernel's kit modules in two versions, after which the
    # kernel cannot read the grader's next plan (its Step is another class), a failure of its own
    order = sorted(ROUTES, key=lambda name: {"reload": 1, "sys.modules": 2}.get(name, 0))
    defs = [ROUTES[name].replace("def original(", f"def via_{name.replace('.', '_')}(") for name in order]
    listed = ", ".join("via_" + name.replace(".", "_") for name in order)
    return "\n".join([COMMON, *defs, f"ROUTES = [{listed}]", TRY_EVERY_ROUTE])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One batch: a notebook that tries every escape route, and the instructor's solution."""
    if shutil.which("bwrap") is None:
        pytest.fail("grading needs bubblewrap (bwrap)")
    tmp = tmp_path_factory.mktemp("escapes")
    for module in (plan, schedule):  # their bytecode cached, as any run that may write it leaves it
        py_compile.compile(module.__file__, doraise=True)
    escape = write(tmp / "escape" / NAME_02, escape_cell(), ANSWERS)
    honest = tmp / "honest" / NAME_02
    honest.parent.mkdir()
    shutil.copy(SOLVED_02, honest)
    out = io.StringIO()
    args = ["course", "grade", str(escape), str(honest), "--timeout", "60", "--jobs", "2"]
    with redirect_stdout(out):
        main([*args, "--results", str(tmp / "r.jsonl"), "--json", "-"])
    report = json.loads(out.getvalue())
    return {
        Path(n["path"]).parent.name: {r["exercise"]: (r["status"], r["detail"]) for r in n["results"]}
        for n in report["notebooks"]
    }


def test_no_route_gets_a_forbidden_helper_back(graded):
    """Each answer tried every route in turn and found none that runs: LookupError, raised only then."""
    for exercise in ("02.critical-path", "02.makespan"):
        status, detail = graded["escape"][exercise]
        assert status == "failed" and "raised LookupError: " in detail, (exercise, status, detail)
        for route in ("reload", "closure", "wrapped", "spec", "open", "sys_modules"):
            assert f"via_{route}: ForbiddenHelper" in detail  # found: the helper, whose body only raises
        assert "via_gc: LookupError" in detail  # no function of the helper's name that runs
        assert "via_bytecode: FileNotFoundError" in detail  # no cached bytecode in the sandbox's kit


def test_the_solution_still_passes_though_its_other_cells_call_the_helpers(graded):
    assert {e: s for e, (s, _) in graded["honest"].items()} == {
        "02.critical-path": "passed",
        "02.makespan": "passed",
        "02.longest-first": "passed",
    }


def test_every_route_gets_the_original_back_where_the_helper_is_present():
    """The routes are real: in a process whose kit has the helpers, each returns a working original."""
    import subprocess
    import sys

    from agentlab import STUB_TEAM, stub_planner

    for module in (plan, schedule):
        py_compile.compile(module.__file__, doraise=True)
    script = (
        escape_cell()
        + """
import json
from agentlab import STUB_TEAM, stub_planner
from agentlab.schedule import makespan, step_durations
p = stub_planner("Write a short report.")
d = step_durations(p, STUB_TEAM)
print(json.dumps({route.__name__: [route("agentlab.plan", "Plan.critical_path")(p, d),
                  makespan(route("agentlab.schedule", "virtual_schedule")(p, d, 2))] for route in ROUTES}))
"""
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    p = stub_planner("Write a short report.")
    d = schedule.step_durations(p, STUB_TEAM)
    right = [list(p.critical_path(d)), schedule.makespan(schedule.virtual_schedule(p, d, 2))]
    assert json.loads(done.stdout) == {f"via_{name.replace('.', '_')}": right for name in ROUTES}, done.stderr
