"""Every course notebook on the Claude path, as a class runs it: `AGENTLAB_BACKEND=anthropic`, with
`ANTHROPIC_BASE_URL` at an `agentlab gateway` in front of an `agentlab serve` started here and
`ANTHROPIC_API_KEY` a learner's gateway token, so every `make_llm()` call goes through the real
`anthropic` SDK over real HTTP on 127.0.0.1, and is billed to the learner in the gateway's ledger.

The backend is read in one place only: `agentlab.llm.backend` (`make_llm`, `choose_backend`,
`describe_backend`), called by no module of the kit but the command line. So a notebook whose code
calls `make_llm` runs here; one that calls none of them, or only `describe_backend` to print its
line, runs exactly what nbval already runs on the simulator, and is checked for that instead of
being run a second time (the tests below say so, and fail if that stops being true).

For the same reason only the slice of a notebook that the backend can affect runs here
(`backend_slice` in notebook_code.py, which says why that is sound): the cells that reach a model
or read what one left, and the earlier cells they need. The others run exactly as on the
simulator, where nbval runs them (in 07 and 09 only the last cell reaches a model).

A notebook fails here if a cell of its slice raises; outputs are not compared (they differ from
the simulator's stored ones, which nbval checks). Cells that build `SimulatedLLM(...)` themselves
stay on the simulator, so the server counts the calls that really went over HTTP, and the
test for a notebook that calls `make_llm()` checks that some of its own did.

Through the gateway, each notebook's calls that the server answered must all be in the ledger,
billed to the learner, none refused. Notebook 03 runs whole, every cell, which is also the
gateway's test of a notebook end to end (the rest of the gateway is tests/test_gateway*.py's): one
run of 03 for both claims: a second run of it cost about 10 CPU-seconds, where the gateway in
front of every notebook and 03's other cells add about 4.

To keep the suite's time down, one kernel (notebook_code.SharedKernel) runs the notebooks one
after another through one gateway and server; each notebook starts from an empty namespace
(`%reset -f`), as in a fresh kernel but without importing the SDK again (about 3 CPU-seconds a
kernel). No notebook sets a module's attributes or the environment, and nbval runs each in a
kernel of its own. (Two kernels side by side, with the slices this short, cost ~4 CPU-s more and
did not finish sooner on a busy machine.)
"""

from __future__ import annotations

import ast
import functools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from notebook_code import SharedKernel, backend_slice, code_cells
from test_gateway import KEY, rows

from agentlab.gateway.server import GatewayServer
from agentlab.gateway.store import Ledger
from agentlab.gateway.upstream import Upstream
from agentlab.llm import describe_backend
from agentlab.llm.serve import start_server

KIT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((KIT / "notebooks").glob("*.ipynb"))
# How code reaches the active backend: a call that builds a model, or the command line, which does.
REACHES_A_MODEL = re.compile(r"\bmake_llm\(|\bchoose_backend\(|AnthropicLLM\(|^\s*!\s*agentlab\b", re.M)
# Where a notebook's slice starts: those, and the line that names the backend.
READS_THE_BACKEND = re.compile(rf"{REACHES_A_MODEL.pattern}|\bdescribe_backend\(", re.M)
CELL_SECONDS = 120  # the longest any one cell may take
WHOLE = {"03_llm_planner.ipynb"}  # run every cell, not only the slice: see test_notebook_03_...
LEARNER = "learner-01"  # the gateway's learner whose token the kernel has
COLOURS = re.compile(r"\x1b\[[0-9;]*m")  # in a traceback IPython sends


def claude_environment(url: str) -> dict[str, str]:
    """This process's environment, pointed at the local server and cleared of anything that
    would send the kernel elsewhere (a recording, a replay, other models, a proxy)."""
    drop = ("AGENTLAB_RECORD", "AGENTLAB_REPLAY", "AGENTLAB_PLANNER_MODEL", "AGENTLAB_EXECUTOR_MODEL")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, ("127.0.0.1", env.get(name))))
    return {
        **env,
        "AGENTLAB_BACKEND": "anthropic",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "test-key",
    }


@dataclass
class Ran:
    """What one notebook's run on the Claude path did."""

    error: str  # "" if every cell ran, else the error (CellExecutionError shows which cell)
    calls: int  # the model calls the server answered for it
    seconds: float
    billed: dict[str, float]  # what the gateway's ledger added for the learner: calls, dollars, refusals
    outputs: list  # the outputs its cells left


def execute(paths: list[Path], ledger: Ledger) -> dict[str, Ran]:
    """Run notebooks one after another in one kernel, through one gateway in front of one server,
    each from an empty namespace (the backend's slice of each, or every cell of those in WHOLE).
    The kernel's environment is what a learner of a class exports: the gateway's address and
    their token. By name, what each run did."""
    results: dict[str, Ran] = {}
    token = ledger.add_learner(LEARNER, dollars_per_day=50.0)  # a budget, as a class sets, never reached
    billed = ("calls", "dollars", "refusals")

    def bill() -> dict[str, float]:
        deadline = time.monotonic() + 10  # a stream is billed as it ends, just after its last event
        while gateway.gate.running(ledger.find(token)) and time.monotonic() < deadline:
            time.sleep(0.02)
        row = rows(ledger).get(LEARNER, {})
        return {name: row.get(name, 0) for name in billed}

    with start_server(api_key=KEY) as server, GatewayServer(ledger, Upstream(server.url, KEY)) as gateway:
        env = {**claude_environment(gateway.url), "ANTHROPIC_API_KEY": token}
        kernel = SharedKernel(env=env, timeout=CELL_SECONDS)
        try:
            for path in paths:
                started, answered, before = time.perf_counter(), server.counts["answered"], bill()
                notebook = nbformat.read(path, as_version=4)
                cells = None if path.name in WHOLE else backend_cells(path)
                try:
                    kernel.run(notebook, path.parent, cells)
                    error = ""
                except Exception as e:  # a cell raised (CellExecutionError shows which), or the kernel died
                    error = COLOURS.sub("", f"{type(e).__name__}: {e}")
                calls, seconds = server.counts["answered"] - answered, time.perf_counter() - started
                after = bill()
                outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])]
                spent = {name: after[name] - before[name] for name in billed}
                results[path.name] = Ran(error, calls, seconds, spent, outputs)
        finally:
            kernel.close()
    return results


def code(path: Path) -> str:
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def reaches_a_model(path: Path) -> bool:
    return bool(REACHES_A_MODEL.search(code(path)))


@functools.cache
def backend_cells(path: Path) -> list[int]:
    """Which of the notebook's code cells run here: the slice the backend can affect."""
    return backend_slice(code_cells(path), READS_THE_BACKEND)


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict[str, Ran]:
    reaching = [p for p in NOTEBOOKS if reaches_a_model(p)]
    ledger = Ledger(tmp_path_factory.mktemp("gateway") / "class.db")
    try:
        results = execute(reaching, ledger)
    finally:
        ledger.close()
    for name, ran in results.items():  # shown with -s: the figures for a report
        path = KIT / "notebooks" / name
        ran_cells = len(code_cells(path)) if name in WHOLE else len(backend_cells(path))
        cells = f"{ran_cells}/{len(code_cells(path))} cells"
        state = "ERROR" if ran.error else "ok"
        print(f"{name:<32} {state:<5} {cells:>10} {ran.calls:>4} calls over HTTP {ran.seconds:5.1f} s")
    return results


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_runs_to_the_end_on_the_claude_backend(request, path):
    if not reaches_a_model(path):
        # nothing in it can reach the backend but the line describe_backend() prints
        assert "make_llm" not in code(path) and "AnthropicLLM" not in code(path)
        line = describe_backend(claude_environment("http://127.0.0.1:9"))
        assert line.startswith("Backend: anthropic") and "server http://127.0.0.1:9" in line
        return
    ran = request.getfixturevalue("executed")[path.name]
    assert not ran.error, f"{path.name} failed on the Claude path (through the gateway):\n{ran.error}"
    if "make_llm(" in code(path):
        assert ran.calls > 0, f"{path.name} builds the active backend, yet no model call reached the server"
    assert ran.billed["calls"] == ran.calls and ran.billed["refusals"] == 0, (ran.billed, ran.calls)


def test_notebook_03_runs_end_to_end_through_the_gateway_and_its_spend_is_recorded(executed):
    """The whole notebook, every cell, in a kernel whose environment is what a learner exports: the
    gateway's address and their token (the kit's Claude backend, over the real SDK). Every call the
    server answered is in the ledger, billed to the learner, and none was refused."""
    ran = executed["03_llm_planner.ipynb"]
    assert not ran.error, ran.error
    errors = [o for o in ran.outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert not errors, errors[:2]
    assert any("Backend: anthropic" in o.get("text", "") for o in ran.outputs)
    assert ran.billed["calls"] == ran.calls > 0 and ran.billed["dollars"] > 0 and ran.billed["refusals"] == 0
    # 25 s on this 2-core machine when quiet (533 calls), 62 s at a load average of 8: bounded, not timed
    assert ran.seconds < 150, f"notebook 03 took {ran.seconds:.0f} s through the gateway"
    print(f"notebook 03 through the gateway: {ran.calls} calls, ${ran.billed['dollars']:.4f}")


def test_no_module_of_the_kit_reaches_the_backend_but_the_command_line():
    """What lets a notebook that calls none of the backend functions skip the Claude run above."""

    def calls_the_backend(path: Path) -> bool:
        text, names = path.read_text(encoding="utf-8"), {"make_llm", "choose_backend"}
        if not any(name in text for name in names):  # a call by name has the name in it: no need to parse
            return False
        tree = ast.parse(text)
        return any(
            isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names
            for node in ast.walk(tree)
        )

    reaching = {str(p.relative_to(KIT)) for p in (KIT / "agentlab").rglob("*.py") if calls_the_backend(p)}
    assert reaching == {"agentlab/llm/backend.py", "agentlab/course/cli.py", "agentlab/course/doctor.py"}


# --- notebook 10's cluster cells, with model calls on the workers --------------------------------

CLUSTER_CELLS = (  # notebook 10's cells that start the cluster and put model calls on its workers
    "from agentlab.cluster import local_cluster",  # the setup
    "local_cluster(workers=2)",
    "def solve(",
    "the researcher found",
    "on_cluster = solve(",
    "def write_or_die(",
    "runs = run_tasks(tasks, solve",
    "on the cluster, none did",
    "stack.close()",
)


def sdk_in_the_fork_server() -> None:
    """Dask forks the workers from one server process (agentlab.cluster): have it import the SDK
    once, so the two workers and the one restarted after the kill do not each import it (3 CPU-s
    apiece) before their first call. Dask's own list is "distributed" and what it imports; a
    server already running in this process (an earlier cluster's) keeps what it has."""
    import dask
    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context().set_forkserver_preload(["distributed", "anthropic"])  # after Dask's own


def test_notebook_10s_cluster_cells_run_on_the_claude_path_with_calls_on_the_workers(monkeypatch):
    """Notebook 10 builds `SimulatedLLM(...)` itself (so its stored outputs reproduce), so none of
    its calls go over HTTP in the whole-notebook runs above. Here its own cluster cells run
    with that name bound to `make_llm()`: the Claude backend, through the SDK to `agentlab serve`,
    from Dask worker processes that find the server and the key in their own environment (the
    server refuses any other key, and a model object travels without one). The batch of 20 tasks
    is cut to 4 to keep the time down. On this path a call's latency is measured, so the trace's
    times and the calls' latencies differ between runs; outputs and usage must not."""
    import contextlib
    import io

    from agentlab.llm import make_llm

    sdk_in_the_fork_server()
    cells = code_cells(KIT / "notebooks" / "10_across_machines.ipynb")
    chosen = [next(c for c in cells if marker in c) for marker in CLUSTER_CELLS]
    chosen = [c.replace("make_tasks(20, seed=4)", "make_tasks(4, seed=4)") for c in chosen]
    started, shown, namespace = time.perf_counter(), [], {}
    with start_server(seed=7, api_key="test-key") as server:
        for name, value in claude_environment(server.url).items():
            monkeypatch.setenv(name, value)  # before the cluster starts: its workers inherit them
        try:
            for n, source in enumerate(chosen):
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(source, "10_across_machines.ipynb", "exec"), namespace)
                shown.append(out.getvalue())
                if n == 0:  # the setup cell imported it; from here on it is the active backend
                    namespace["SimulatedLLM"] = lambda **options: make_llm()
        finally:
            if "stack" in namespace:  # the cluster, closed even if a cell failed
                namespace["stack"].close()
        answered = server.counts["answered"]
    seconds = time.perf_counter() - started
    said = "".join(shown)
    assert shown[0].startswith("Backend: anthropic"), shown[0]
    assert "2 worker processes, threads each: [1, 1]" in said
    assert "outputs equal: True" in said and "usage equal:   True" in said  # threads and cluster agree
    assert "the gold answer is '1724': right = True" in said
    assert "status done; attempts at each step {'s1': 1, 's2': 1, 's3': 2}" in said  # a worker killed
    assert "outputs as without the kill: True" in said
    runs, one_by_one = namespace["runs"], namespace["one_by_one"]
    assert [r.outputs for r in runs] == [r.outputs for r in one_by_one] and len(runs) == 4
    assert "on the cluster, none did:        True" in said and "cluster closed: closed" in said
    assert answered > 40, answered  # every one of them over HTTP
    assert seconds < 120, f"notebook 10's cluster cells took {seconds:.0f} s on the Claude path"
