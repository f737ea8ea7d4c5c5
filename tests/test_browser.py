"""The plan editor and an exercise in a real browser: JupyterLab, headless, driven by Debian's Chromium.

The kernel-free tests in test_widgets.py check the editor's logic; this one checks
that the widget really renders and reacts in JupyterLab: the front end draws it,
an edit in the page reaches the kernel, and the click on Run comes back as a new
result on screen. It writes its notebook at test time into a temporary root, so no
unexecuted notebook is committed.

Without /usr/bin/chromium it is skipped, unless AGENTLAB_REQUIRE_BROWSER=1 (as in CI),
where a missing browser is a failure. Playwright never downloads a browser here: it
is pointed at Debian's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 30_000  # any single wait in the page
SERVER_START_S = 60

LOCAL = urllib.request.build_opener(
    urllib.request.ProxyHandler({})
)  # talk to 127.0.0.1 directly, whatever proxy is set

EDITOR_CELL = "from agentlab.widgets import PlanEditor\n\neditor = PlanEditor(workers=2)\neditor"
QUIZ_CELL = 'from agentlab.quiz import quiz\n\nquiz("06.crossover")'
KIT = Path(__file__).resolve().parents[1]
EXERCISE = KIT / "exercises" / "06_error_propagation.ipynb"
STUBS = KIT / "exercises" / "01_stub_planner_and_executors.ipynb"  # its answers were once in its check cells
LESSON = KIT / "notebooks" / "00_start_here.ipynb"


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
    if os.environ.get("AGENTLAB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and AGENTLAB_REQUIRE_BROWSER=1 says the browser test must run")
    pytest.skip(reason)


def free_port() -> int:
    """A port free now, for a server that cannot take port 0 and say which it got (Phoenix, in
    test_interop_phoenix): another process could still take it before the server binds it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path, source: str) -> None:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook))


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """One headless JupyterLab on 127.0.0.1 over a temporary root for this module's tests (each
    start costs seconds); yields its URL, then stops it."""
    require_chromium()
    tmp_path = tmp_path_factory.mktemp("lab")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "editor.ipynb", EDITOR_CELL)
    write_notebook(root / "quiz.ipynb", QUIZ_CELL)
    for notebook in (EXERCISE, STUBS, LESSON):
        shutil.copy(notebook, root / notebook.name)  # as a learner gets it from the kit
    settings = tmp_path / "user-settings"
    quiet(settings)
    home = {
        name: tmp_path / name.lower() for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR")
    }
    as_a_learner_has_it(home["JUPYTER_CONFIG_DIR"])
    # The settings galata's configure_jupyter_server makes, as flags: no token, no browser,
    # the app exposed to page scripts as window.jupyterapp, and nothing from the outside world.
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",  # a free port from the OS: it says which in its runtime folder
        "--ServerApp.open_browser=False",
        "--ServerApp.allow_root=True",
        f"--ServerApp.root_dir={root}",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        f"--LabApp.user_settings_dir={settings}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",  # the PyPI one starts node at every start to ask yarn
        # kernels on Unix sockets, as nbval's (kernel_sockets.py), named after their connection
        # files: a runtime folder with a short path keeps them within a socket path's 107 bytes
        "--KernelManager.transport=ipc",
    ]
    runtime = Path(tempfile.mkdtemp(prefix="lab-"))
    env = {
        **os.environ,
        **{k: str(v) for k, v in home.items()},
        "JUPYTER_RUNTIME_DIR": str(runtime),
    }
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = ""
    try:
        url = wait_for_server(server, runtime, tmp_path / "server.log")
        yield url, root, tmp_path / "workspaces"
    finally:
        if url:
            shut_down_kernels(url)
        stop(server)
        log.close()
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium for this module's tests, and the tab that holds JupyterLab once a test
    has loaded it (launching the browser and loading JupyterLab's front end each cost seconds)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield {"browser": browser, "page": None}
        finally:
            browser.close()


# Closes every tab in JupyterLab's main area without asking (a notebook a test edited included);
# true when nothing is left open, no dialog either.
CLOSE_ALL = """() => {
    for (const widget of Array.from(window.jupyterapp.shell.widgets("main"))) widget.dispose();
    return !document.querySelector(".jp-Dialog, .jp-NotebookPanel");
}"""


@pytest.fixture
def lab(lab_server, chromium):
    """The module's JupyterLab in the browser for one test, as if new: no tab open in it. Yields
    the page; afterwards closes what the test opened and stops its kernels. A page that cannot be
    cleared so (a dialog left open by a failed test) is closed, and the next test loads a new one."""
    from playwright.sync_api import expect

    url, _, workspaces = lab_server
    page = chromium["page"]
    if page is None:
        shutil.rmtree(workspaces, ignore_errors=True)  # no tabs restored from an earlier page
        page = chromium["page"] = chromium["browser"].new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{url}/lab")
        page.wait_for_function("window.jupyterapp !== undefined")
        settle(page, "() => window.jupyterapp.restored")
    expect.set_options(timeout=TIMEOUT_MS)
    assert page.evaluate(CLOSE_ALL)  # the launcher a new page opens on
    try:
        yield page
    finally:
        try:
            clean = page.evaluate(CLOSE_ALL)
        except Exception:
            clean = False
        if not clean:
            page.close()
            chromium["page"] = None
        shut_down_kernels(url)


def quiet(settings: Path) -> None:
    """User settings for this server only: no news, no update checks, no toasts over the widget."""
    path = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True}))
    # Render every cell (no windowing), so a long notebook's outputs are all in the page to check.
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text(json.dumps({"windowingMode": "none"}))


def as_a_learner_has_it(config: Path) -> None:
    """No nbgrader in this lab, nor Notebook 7 (which only nbgrader requires): the test venv has them
    (the [nbgrader] extra) but a learner's `make lab` does not, and nbgrader's server extension alone
    takes seconds to import at every start. No build check either: it runs node to say the prebuilt
    front end is up to date."""
    shipped = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d"
    names = [
        name
        for extra in ("nbgrader.json", "notebook.json")
        if (shipped / extra).exists()
        for name in json.loads((shipped / extra).read_text())["ServerApp"]["jpserver_extensions"]
    ]
    (config / "labconfig").mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {name: False for name in names}}})
    )
    off = {"@jupyter/nbgrader": True, "@jupyter-notebook/lab-extension": True}
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": off, "buildCheck": False, "buildAvailable": False})
    )


def wait_for_server(server: subprocess.Popen, runtime: Path, log: Path) -> str:
    """The URL of the Jupyter server `server` once it answers. Started on port 0, it takes a free
    port from the OS and writes its URL to jpserver-<pid>.json in its runtime folder (a port
    picked here and handed over could be taken by another process while it starts)."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited with code {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            url = json.loads(next(runtime.glob("jpserver-*.json")).read_text())["url"].rstrip("/")
            with LOCAL.open(f"{url}/api/status", timeout=2):
                return url
        except (StopIteration, ValueError, KeyError, OSError):  # not written (whole) yet, or not answering
            time.sleep(0.2)
    pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{log.read_text()[-3000:]}")


def shut_down_kernels(url: str) -> None:
    """Kernels run in their own session, so ask the server to stop them before stopping it."""
    try:
        with LOCAL.open(f"{url}/api/kernels", timeout=5) as response:
            kernels = json.load(response)
        for kernel in kernels:
            request = urllib.request.Request(f"{url}/api/kernels/{kernel['id']}", method="DELETE")
            LOCAL.open(request, timeout=10).close()
    except OSError:
        pass  # the server is already gone; stop() still ends its process group


def stop(server: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)  # the group this fixture started, and nothing else
            server.wait(wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def settle(page, script: str, arg: object = None) -> object:
    """Run an async script in the page and return what it resolves to; an error, not a hang, when it
    has not resolved within TIMEOUT_MS (Playwright bounds its waits, not a script's promises)."""
    bounded = f"""async (arg) => {{
        const late = new Promise((_, fail) => setTimeout(() => fail(new Error("no answer")), {TIMEOUT_MS}));
        return await Promise.race([({script})(arg), late]);
    }}"""
    return page.evaluate(bounded, arg)


def open_notebook(page, name: str) -> None:
    """Open a notebook from the lab's root as a double-click in the file browser does, and wait for
    its kernel."""
    settle(
        page, "async (path) => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", name
    )
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
    page.wait_for_function("window.jupyterapp?.shell.currentWidget?.sessionContext?.isReady === true")


def test_the_editor_runs_in_jupyterlab_and_a_browser_edit_changes_the_result(lab):
    from playwright.sync_api import expect

    open_notebook(lab, "editor.ipynb")
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    summary, status = lab.locator(".agentlab-summary"), lab.locator(".agentlab-run-status")
    expect(summary).to_contain_text("makespan on 2 workers: 6 s (one worker: 8 s)")
    expect(status).to_contain_text("Click Run")

    lab.locator(".agentlab-run").click()
    expect(status).to_contain_text("done: 4/4 steps in 6.0 s")
    timeline = lab.locator(".agentlab-timeline")
    expect(timeline).to_be_visible()
    first = status.inner_text()

    message, rows = lab.locator(".agentlab-message"), lab.locator(".agentlab-step")
    s1_after = rows.nth(0).locator(".agentlab-after input")
    s1_after.fill("s4")
    s1_after.press("Enter")  # text fields send their value on Enter (or when left)
    expect(message).to_contain_text("the plan has a cycle")
    s1_after.fill("")
    s1_after.press("Enter")
    expect(message).to_contain_text("valid plan")

    s2_seconds = rows.nth(1).locator(".agentlab-seconds input")
    s2_seconds.fill("10")
    s2_seconds.press("Enter")
    expect(summary).to_contain_text("critical path s2 → s4: 12 s")
    expect(status).to_contain_text("Click Run")
    expect(timeline).to_be_hidden()  # the old timeline belongs to the old plan

    lab.locator(".agentlab-run").click()
    expect(status).to_contain_text("done: 4/4 steps in 12.0 s")
    expect(timeline).to_be_visible()
    assert status.inner_text() != first
    expect(lab.locator(".jp-OutputArea-output[data-mime-type$='stderr']")).to_have_count(0)


def test_a_quiz_is_answered_with_clicks_says_try_again_then_why_and_the_saved_cell_keeps_it(lab, lab_server):
    from playwright.sync_api import expect

    from agentlab.quiz import question

    crossover = question("06.crossover")
    right = next(letter for letter in crossover.choices if crossover.is_right(letter))
    wrong = next(letter for letter in crossover.choices if letter != right)
    open_notebook(lab, "quiz.ipynb")
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    choices, result = lab.locator(".agentlab-quiz-choices"), lab.locator(".agentlab-quiz-result")
    choices.get_by_text(f"({wrong}) {crossover.choices[wrong]}").click()
    lab.locator(".agentlab-quiz-check").click()
    expect(result).to_contain_text(f"✗ not ({wrong}): think again")
    choices.get_by_text(f"({right}) {crossover.choices[right]}").click()
    expect(result).to_have_text("")  # a new choice clears the old verdict
    lab.locator(".agentlab-quiz-check").click()
    expect(result).to_contain_text(f"✓ ({right}) is right: {crossover.explanation()[:20]}")
    cell = "window.jupyterapp.shell.currentWidget.content.model.cells.get(0)"
    stored = f"{cell}.outputs.get(0).data['text/plain']"
    lab.wait_for_function(f"({stored}).includes('✓')")  # the kernel's update of the cell's text arrives
    settle(lab, "async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    saved = json.loads((lab_server[1] / "quiz.ipynb").read_text())["cells"][0]["outputs"]
    assert f"✓ ({right}) is right" in "".join(saved[0]["data"]["text/plain"])  # what `progress` reads


def test_a_learner_runs_an_exercise_top_to_bottom_then_solves_one_and_sees_it_pass(lab):
    """Run All goes past every unwritten exercise (its check cells are tagged raises-exception),
    so each check reports; once the learner writes one function, its check passes on screen."""
    import nbformat
    from playwright.sync_api import expect

    solution = nbformat.read(KIT / "solutions" / EXERCISE.name, as_version=4)
    written = next(c.source for c in solution.cells if "def longest_winning_chain(" in c.source)
    checks = sum("check(" in c.source for c in nbformat.read(EXERCISE, as_version=4).cells)

    open_notebook(lab, EXERCISE.name)
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

    outputs = lab.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text="not written yet")).to_have_count(checks)  # every check ran
    expect(outputs.filter(has_text="NotImplementedError")).to_have_count(checks)

    # The learner writes the first exercise's function, then runs it and its check.
    lab.evaluate(
        """(source) => {
            const notebook = window.jupyterapp.shell.currentWidget.content;
            const i = notebook.widgets.findIndex(
                (cell) => cell.model.sharedModel.getSource().includes("def longest_winning_chain(")
            );
            notebook.widgets[i].model.sharedModel.setSource(source);
            notebook.activeCellIndex = i;
        }""",
        written,
    )
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-cell-and-select-next')")
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-cell')")
    expect(outputs.filter(has_text="All 10 checks passed.")).to_have_count(1)
    expect(outputs.filter(has_text="not written yet")).to_have_count(checks - 1)


def test_run_all_on_an_untouched_exercise_gives_every_check_a_verdict_and_one_error_line(lab):
    """Every check cell says "not written yet" (none stops before its check), and the error under
    it is one line, not the checker's traceback."""
    import nbformat
    from playwright.sync_api import expect

    cells = nbformat.read(STUBS, as_version=4).cells
    checks = sum("check(" in c.source for c in cells if c.cell_type == "code")
    open_notebook(lab, STUBS.name)
    lab.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    outputs = lab.locator(".jp-OutputArea-output")
    expect(outputs.filter(has_text="not written yet")).to_have_count(checks)
    lab.wait_for_function(
        "!window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
        " || window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
    )
    errors = lab.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [t for t in errors.all_inner_texts() if "Error" in t]
    assert len(texts) >= checks
    long = [t for t in texts if len(t.strip().splitlines()) > 3]
    assert not long, f"tracebacks longer than three lines: {long[0][:600]}"


# Resolves once the kernel's info and spec replies have arrived and JupyterLab has written them into
# the notebook's metadata (it awaits the same two promises, then sets the metadata, in microtasks that
# all run before the next macrotask).
KERNEL_INFO_APPLIED = """async () => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    await kernel.info;
    await kernel.spec;
    await new Promise((done) => setTimeout(done, 0));
}"""


def test_opening_and_closing_a_lesson_leaves_it_unmodified(lab, lab_server):
    """The stored kernelspec is what the installed kernel writes, so the lesson is not marked
    modified when its kernel starts, closing it asks nothing, and the file on disk is unchanged."""
    from playwright.sync_api import expect

    path = lab_server[1] / LESSON.name  # the copy the lab serves
    open_notebook(lab, LESSON.name)
    settle(lab, KERNEL_INFO_APPLIED)
    dirty = lab.evaluate("window.jupyterapp.shell.currentWidget.context.model.dirty")
    assert dirty is False, "JupyterLab marked the lesson modified just by opening it"
    lab.evaluate("window.jupyterapp.shell.currentWidget.close()")  # as the tab's x does
    # Closing ends in one of two ways: a "save your changes?" dialog, or the panel gone.
    lab.wait_for_function(
        "document.querySelector('.jp-Dialog') || !document.querySelector('.jp-NotebookPanel')"
    )
    expect(lab.locator(".jp-Dialog")).to_have_count(0)  # no "save your changes?" prompt
    expect(lab.locator(".jp-NotebookPanel")).to_have_count(0)
    assert path.read_bytes() == LESSON.read_bytes()
