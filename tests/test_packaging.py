"""The two commands and the two dependency lists stay honest."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from test_browser import wait_for_server
from tornado import ioloop, websocket

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)\s*([<>=!~].*)?$")


def parse(requirement: str) -> tuple[str, str]:
    requirement = requirement.split(";")[0].strip()
    name, bound = REQUIREMENT.match(requirement).groups()
    return name.lower().replace("_", "-"), (bound or "").replace(" ", "")


def pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    found = [parse(r) for r in project["dependencies"] + extras]
    return {name: bound for name, bound in found if name != "tomli"}  # tomli is only for Python 3.10


def conda_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    found = [parse(d) for d in env["dependencies"] if isinstance(d, str)]
    return {name: bound for name, bound in found if name not in ("python", "pip")}


def test_environment_yml_lists_the_same_packages_with_the_same_bounds_as_pyproject():
    assert conda_requirements() == pyproject_requirements()


def test_dependencies_have_lower_bounds_only():
    for name, bound in pyproject_requirements().items():
        assert bound.startswith(">="), f"{name}{bound}: use a lower bound (>=), never a pin or a cap"


def test_environment_yml_installs_the_kit_itself_and_the_right_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python>=3.10" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip_section


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / "README.md").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


needs_make = pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / ".venv" / ".installed").exists(),
    reason="needs make and a set-up .venv (run through `make test`)",
)


@needs_make
def test_setup_is_idempotent_nothing_to_redo_once_installed():
    # `make -q` exits 0 only when the target is already up to date.
    assert subprocess.run(["make", "-q", "setup"], cwd=ROOT).returncode == 0


@pytest.mark.skipif(not (ROOT / ".venv" / ".installed-test").exists(), reason="needs `make test` to have run")
def test_the_test_tools_are_not_reinstalled_either_once_installed():
    assert subprocess.run(["make", "-q", "setup-test"], cwd=ROOT).returncode == 0


def planned(target: str) -> str:
    """The commands `make` would run for `target` from scratch (-B: all of them; -n: print, do not run)."""
    made = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True)
    return made.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_lab_installs_the_kit_alone_and_the_tests_add_their_tools():
    lab, tests = planned("setup"), planned("test")
    assert "pip install --quiet -e '.[trace,mcp]'" in lab and "test," not in lab  # Playwright alone is 165 MB
    assert "pip install --quiet -e '.[test,trace,mcp,nbgrader]'" in tests
    # Phoenix (850 MB, a venv of its own) is built by `make test-phoenix`, not by the everyday setup
    assert "arize-phoenix" not in lab and "arize-phoenix" not in tests
    assert "pip install --quiet 'arize-phoenix" in planned("test-phoenix")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_installs_go_through_uv_and_fall_back_to_pip_without_it():
    for target in ("setup", "test", "test-phoenix"):
        made = planned(target)
        assert "-m pip install --quiet uv" in made or target == "test-phoenix"  # pip brings uv, once
        for line in (line for line in made.splitlines() if "uv pip install" in line):
            assert "-m uv --version" in line and "else" in line and "-m pip install --quiet" in line, line
        assert "uv pip install" in made, target


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_both_venvs_go_without_the_iri_grammar_that_slows_every_jsonschema_import():
    for target in ("setup", "test"):
        assert "uninstall" in planned(target) and "rfc3987-syntax" in planned(target), target
    venv_python = ROOT / ".venv" / "bin" / "python"
    if (ROOT / ".venv" / ".installed-test").exists():
        probe = "import sys, jsonschema; print('rfc3987_syntax' in sys.modules)"
        imported = subprocess.run([venv_python, "-c", probe], capture_output=True, text=True, check=True)
        assert imported.stdout.strip() == "False"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_recipes_let_python_keep_its_bytecode_whatever_the_shell_says():
    # a shell with PYTHONDONTWRITEBYTECODE=1 would have every kernel recompile its imports
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    shown = subprocess.run(
        ["make", "-s", "--eval", "show-env: ; @echo \"[$$PYTHONDONTWRITEBYTECODE]\"", "show-env"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    assert shown.stdout.strip() == "[]"


def test_import_agentlab_needs_none_of_the_optional_extras():
    # a fresh interpreter in which importing any extra's package fails, as if it were not installed
    blocked = ("opentelemetry", "mcp", "mcp_types", "nbgrader")
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {blocked!r}: raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import agentlab, agentlab.run, agentlab.guardrails, agentlab.course.cli\n"
        "try:\n"
        "    import agentlab.interop.mcp\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'agentlab[mcp]'" in done.stdout


NBGRADER_EXTENSIONS = ("formgrader", "validate_assignment", "assignment_list", "course_list")


def terminal_output(port: int, command: str) -> str:
    """What `command` prints in a new terminal of the JupyterLab at `port` (as a learner's would)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/terminals", data=b"{}", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        name = json.load(response)["name"]

    async def run() -> str:
        url = f"ws://127.0.0.1:{port}/terminals/websocket/{name}"
        ws = await websocket.websocket_connect(url, connect_timeout=5)
        ws.write_message(json.dumps(["stdin", f"{command}; echo END-OF-OUTPUT\r"]))
        out = ""
        while "END-OF-OUTPUT\r\n" not in out.replace("echo END-OF-OUTPUT", ""):
            message = await ws.read_message()
            if message is None:
                break
            kind, *content = json.loads(message)
            out += content[0] if kind == "stdout" else ""
        ws.close()
        return out

    return ioloop.IOLoop.current().run_sync(run, timeout=20)


@needs_make
def test_make_lab_starts_jupyterlab_on_the_course_with_the_kits_commands_at_hand(tmp_path):
    args = (
        "--no-browser --port=0 --ServerApp.ip=127.0.0.1 --IdentityProvider.token='' "
        "--ServerApp.disable_check_xsrf=True"  # so that this test can open a terminal with a plain POST
    )
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path))
    # A learner's lab has no nbgrader (`make lab` installs the kit without it); this .venv has it for
    # the tests, and its four server extensions (~1.2 CPU-s to import) stay off, as in a learner's lab.
    nbgrader = [f"nbgrader.server_extensions.{name}" for name in NBGRADER_EXTENSIONS]
    config = {"ServerApp": {"jpserver_extensions": dict.fromkeys(nbgrader, False)}}
    (tmp_path / "jupyter_server_config.json").write_text(json.dumps(config))
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        lab = subprocess.Popen(
            ["make", "lab", f"LAB_ARGS={args}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        # on port 0 the OS gives it a free one, which it writes to its runtime folder (this one)
        port = int(wait_for_server(lab, tmp_path, log).rsplit(":", 1)[1])
        url = f"http://127.0.0.1:{port}/api/contents/notebooks/00_start_here.ipynb?content=0"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200  # the server runs and serves the start notebook
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=5) as response:
            assert b"JupyterLab" in response.read()
        # the URL it prints, and its front page, open the start notebook
        start = f"http://127.0.0.1:{port}/lab/tree/notebooks/00_start_here.ipynb"
        assert start in log.read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert response.url == start
        # no "get notified about official Jupyter news?" popup: its setting is answered already
        url = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/apputils-extension:notification"
        with urllib.request.urlopen(url, timeout=5) as response:
            notification = json.load(response)
        default = notification["schema"]["properties"]["fetchNews"]["default"]  # the kit's override
        assert notification["settings"].get("fetchNews", default) == "false"  # JupyterLab asks only if "none"
        # a terminal in the lab runs the kit's own command
        found = terminal_output(port, "command -v agentlab")
        assert str(ROOT / ".venv" / "bin" / "agentlab") in found, found
    finally:
        try:
            os.killpg(lab.pid, signal.SIGTERM)
        except ProcessLookupError:  # it already exited (the assertion above says why)
            pass
        lab.wait(timeout=30)


def test_the_console_script_is_installed_and_runs_the_demo():
    result = subprocess.run(
        [sys.executable, "-m", "agentlab.course.cli", "demo"], capture_output=True, text=True, check=True
    )
    assert "=== a task worth decomposing ===" in result.stdout
    assert "=== a simple task (one agent is enough) ===" in result.stdout


def test_the_files_started_first_exist_and_make_test_keeps_that_order():
    from conftest import LONGEST_FIRST

    missing = [path for path in LONGEST_FIRST if not (ROOT / path).exists()]
    assert not missing, f"conftest.LONGEST_FIRST names files that are gone: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    # xdist would otherwise reorder the files by how many tests each has
    assert "--no-loadscope-reorder" in planned("test")
