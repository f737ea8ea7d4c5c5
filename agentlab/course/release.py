"""What goes to learners: `agentlab course release DIR` writes it.

The lesson notebooks, the exercise notebooks, the kit with its feedback checks, and what it takes
to install and run them. Not the solutions, not the instructor's grading cases
(`agentlab/course/hidden/`), not the tests (they hold worked answers), not the grader's docs.
The README and the Makefile are the learner's own (`agentlab/course/learner/`): what a learner
does (`make lab`, the exercises, `make check`, handing in), with no target that needs what a
release leaves out. Every file is checked on the way out: a notebook with a solution region stops
the release with the file's name.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from agentlab.course.exercises import BEGIN_CODE, MARKDOWN_REGION

SHIPPED = ("pyproject.toml", "environment.yml", "LICENSE", "agentlab", "notebooks", "exercises")
LEARNER = Path(__file__).parent / "learner"  # the release's README.md and Makefile, shipped at its top
LEFT_OUT = ("hidden", "learner", "__pycache__", ".ipynb_checkpoints")  # never shipped, at any depth


class ReleaseError(ValueError):
    """The release would hold something a learner must not get; the message names the file."""


def build(root: Path | str, target: Path | str) -> list[Path]:
    """Write the learners' release of the kit at `root` into `target` (which must not exist yet)."""
    root, target = Path(root), Path(target)
    if not (root / "agentlab").is_dir() or not (root / "exercises").is_dir():
        raise ReleaseError(f"{root} is not the kit's folder (no agentlab/ and exercises/ in it): use --root")
    if target.resolve().is_relative_to(root.resolve()):
        raise ReleaseError(f"{target} is inside the kit ({root.resolve()}): name a folder outside it")
    if target.exists() and any(target.iterdir()):
        raise ReleaseError(f"{target} exists and is not empty: name a new folder")
    written = []
    target.mkdir(parents=True, exist_ok=True)
    for name in ("README.md", "Makefile"):
        shutil.copy2(LEARNER / name, target / name)
    for name in SHIPPED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns(*LEFT_OUT, "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, target / name)
    for path in sorted(p for p in target.rglob("*") if p.is_file()):
        _refuse_keys(path, target)
        written.append(path)
    return written


def _refuse_keys(path: Path, target: Path) -> None:
    where = path.relative_to(target)
    if "solutions" in where.parts or "hidden" in where.parts:
        raise ReleaseError(f"{where}: solutions and grading cases never ship")
    if path.suffix not in (".py", ".ipynb", ".md", ".toml", ".yml"):
        return
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb" and (BEGIN_CODE in text or MARKDOWN_REGION.search(text)):
        raise ReleaseError(f"{where}: holds a solution region")
