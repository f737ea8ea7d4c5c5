"""Every command the docs give runs as written: README.md, docs/teaching.md and the learners' release
README (agentlab/course/learner/README.md).

Each fenced block of commands runs in one bash, in a scratch copy of the kit (or of a release), offline:
`agentlab serve` stands in for Claude wherever a key is needed (`sk-ant-...` too); `make lab` is
checked for its setup part, then `agentlab doctor` says whether the backend the lab would use answers;
port 8765 becomes a free one; notebook 03 is recorded on a small notebook of the same name (the whole
one takes a minute through the server), on the simulator, since that block exports no key (what is
checked there is where the files go: the kernel runs in notebooks/). Output the docs show after a
`$` command must be what it prints (numbers aside). What cannot run here is named in NOT_RUN, and
README says the same.
"""

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import nbformat
import pytest

from agentlab.course import release
from agentlab.course.cli import parse
from agentlab.llm.serve import start_server

ROOT = Path(__file__).resolve().parents[1]
DOCS = {
    "README.md": ROOT / "README.md",
    "docs/teaching.md": ROOT / "docs" / "teaching.md",
    "the release README": ROOT / "agentlab" / "course" / "learner" / "README.md",
}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
SHELL = ("bash", "console", "sh")
# Commands the suite does not run, by how they start, and why (README's "The commands in these docs
# are tested" says the same).
# Each is a pattern of the command and the words README uses for it.
NOT_RUN = {
    r"make test$": "`make test` (the suite itself)",
    r"conda env create": "the conda environment (needs conda)",
    r"agentlab course grade alice/": "`agentlab course grade` on\nalice, bob and carol",
    r"(cd course/ && )?nbgrader ": "nbgrader's own commands",
    r"make check$": "the learners' `make check` on every exercise",
}
LAB = "make -s -o .venv/.installed setup && agentlab doctor"  # `make lab`'s setup part, and its backend
KIT_ENTRIES = ("agentlab", "exercises", "solutions", "docs", "tests", "Makefile", "pyproject.toml",
               "environment.yml", "conftest.py", ".venv")
needs_venv = pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / ".venv" / ".installed").exists(),
    reason="needs make and a set-up .venv",
)


def blocks(doc: str) -> list[tuple[str, str]]:
    """The fenced blocks of a document: (language, text)."""
    return FENCE.findall(DOCS[doc].read_text())


def commands(language: str, text: str) -> list[tuple[str, list[str]]]:
    """A shell block's commands, each with the output the docs show after it (console blocks)."""
    text = re.sub(r"\\\n\s*", "", text)  # continuation lines joined
    found: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if language == "console":
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif found and line.strip():
                found[-1][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            found.append((line, []))
    return [(command, shown) for command, shown in found if not command.lstrip().startswith("#")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def not_run(command: str) -> bool:
    return any(re.match(pattern, command.split("#")[0].strip()) for pattern in NOT_RUN)


def stand_in(command: str, port: int) -> str | None:
    """The command as the suite runs it, or None when it is not run here."""
    if not_run(command):
        return None
    command = command.replace("8765", str(port))
    if re.search(r"(^|\s)make lab\s*(#.*)?$", command):
        command = re.sub(r"make lab\s*(#.*)?$", f"sh -c '{LAB}'", command)
    if command.startswith(("agentlab serve", "agentlab gateway serve")):  # until Ctrl-C: start, see, stop
        line = command.split("#")[0].replace("8766", str(port))
        line += "" if "--port" in line else f" --port {port}"
        return (f"{line} > serve.log 2>&1 & pid=$!; "
                "for i in $(seq 100); do grep -q 'Ctrl-C stops it' serve.log && break; sleep 0.1; done; "
                "kill -INT $pid; wait $pid; grep -q 'Stopped' serve.log")
    return command


def small_notebook(path: Path) -> None:
    """A notebook that asks the active backend one question: the stand-in for a lesson."""
    code = ("from agentlab.llm import describe_backend, make_llm\n"
            "print(describe_backend())\n"
            "ask = [{'role': 'user', 'content': 'What is the capital of Kelloway?'}]\n"
            "print(make_llm().complete(system='You answer.', messages=ask, max_tokens=50).text)")
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)


@pytest.fixture(scope="module")
def claude():
    """`agentlab serve`, standing in for Claude."""
    with start_server() as server:
        yield server


def link_venv(release_folder: Path) -> None:
    """This kit's set-up .venv in a release, its stamp newer than the release's files: `make` there
    must not install the release into this kit's venv."""
    (release_folder / ".venv").symlink_to(ROOT / ".venv")
    stamp = (ROOT / ".venv" / ".installed").stat().st_mtime
    for name in ("pyproject.toml", "Makefile"):
        os.utime(release_folder / name, (stamp - 1, stamp - 1))


def scratch_kit(tmp_path: Path) -> Path:
    kit = tmp_path / "kit"
    kit.mkdir()
    for name in KIT_ENTRIES:
        (kit / name).symlink_to(ROOT / name)
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        (kit / "notebooks").mkdir(exist_ok=True)
        (kit / "notebooks" / notebook.name).symlink_to(notebook)
    (kit / "notebooks" / "03_llm_planner.ipynb").unlink()
    small_notebook(kit / "notebooks" / "03_llm_planner.ipynb")
    return kit


def run_block(language: str, text: str, where: Path, env: dict[str, str]) -> list[str]:
    """Run a block's commands in one bash in `where`; the commands skipped, by name."""
    port, skipped, script = free_port(), [], ["set -euo pipefail"]
    checks = []
    for command, shown in commands(language, text):
        runnable = stand_in(command, port)
        if runnable is None:
            skipped.append(command)
            continue
        if shown:
            out = where / f".out{len(checks)}"
            checks.append((command, shown, out))
            runnable = f"( {runnable} ) > {out}"
        script.append(runnable)
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=where, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{text}\nfailed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    for command, shown, out in checks:
        numbers_aside = [re.sub(r"\d+", "N", line) for line in out.read_text().splitlines()]
        assert numbers_aside == [re.sub(r"\d+", "N", line) for line in shown], command
    return skipped


def shell_env(tmp_path: Path, claude) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTLAB_", "ANTHROPIC_"))}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env['PATH']}"
    env["ANTHROPIC_BASE_URL"] = claude.url  # wherever the docs export a key, the server answers
    env["HOME"] = str(tmp_path / "home")
    return env


@needs_venv
@pytest.mark.parametrize("doc", ["README.md", "docs/teaching.md"])
def test_every_command_block_runs_as_written(doc, tmp_path, claude):
    kit = scratch_kit(tmp_path)
    env = shell_env(tmp_path, claude)
    skipped = []
    for language, text in blocks(doc):
        if language in SHELL:
            env["PWD"] = str(kit)
            skipped += run_block(language, text, kit, env)
    assert skipped and all(not_run(c) for c in skipped)
    if doc == "README.md":  # the recording went where the command was typed, not into notebooks/
        assert (kit / "recordings" / "03.jsonl").exists()
        assert (kit / "recordings" / "03_llm_planner.ipynb").exists()
        assert not (kit / "notebooks" / "recordings").exists()


@needs_venv
def test_the_release_readmes_commands_run_in_a_release(tmp_path, claude):
    target = tmp_path / "agentlab-class"
    release.build(ROOT, target)
    link_venv(target)
    env = {**shell_env(tmp_path, claude), "PYTHONPATH": str(target), "PWD": str(target)}
    skipped = []
    for language, text in blocks("the release README"):
        if language in SHELL:
            skipped += run_block(language, text, target, env)
    assert skipped == ["make check                                          # every exercise notebook"]


def test_the_python_blocks_print_what_the_docs_say(claude, monkeypatch, capsys):
    """Run here, not in a new interpreter: importing anthropic again would cost seconds."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", claude.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "any-key")
    for language, text in blocks("README.md"):
        if language != "python":
            continue
        said = [line[2:] for line in text.splitlines() if line.startswith("# ")]
        exec(compile(text, "README.md", "exec"), {})
        assert capsys.readouterr().out.splitlines() == said


def inline_spans(doc: str) -> list[str]:
    text = FENCE.sub("", DOCS[doc].read_text())
    return re.findall(r"`([^`\n]+)`", text)


@pytest.mark.parametrize("doc", list(DOCS))
def test_no_command_installs_anything_but_this_kit(doc):
    """`pip install 'agentlab[x]'` installs PyPI's unrelated `agentlab`: install from the kit's folder."""
    lines = inline_spans(doc) + [line for _, text in blocks(doc) for line in text.splitlines()]
    installs = [line for line in lines if "pip install " in line]
    for line in installs:
        what = line.split("pip install", 1)[1].split("#")[0].split()
        kit = [w for w in what if re.fullmatch(r"'?\.(\[[a-z,]+\])?'?", w)]
        assert kit or what == ["arize-phoenix"], f"{doc}: {line}"  # Phoenix: its own venv, by design


def test_the_distribution_is_ours_not_pypis_agentlab():
    name = re.search(r'^name = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert name == "agentlab-course"  # `agentlab` on PyPI is an unrelated project


@pytest.mark.parametrize("doc", list(DOCS))
def test_every_inline_agentlab_command_is_one_the_command_line_accepts(doc):
    for span in inline_spans(doc):
        if re.match(r"agentlab [a-z]", span):
            try:
                parse(re.findall(r'"[^"]*"|\S+', span)[1:])
            except SystemExit:
                pytest.fail(f"{doc}: `{span}` is not a command agentlab accepts")


def test_the_readme_names_what_is_not_run():
    said = (ROOT / "README.md").read_text()
    for words in NOT_RUN.values():
        assert words in said, words
