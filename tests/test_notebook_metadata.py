"""Opening and closing a notebook in JupyterLab changes nothing: every notebook stores the
kernelspec the installed kernel writes, and no cell keeps execution timestamps. (The browser
test opens and closes a lesson for real.)"""

from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from agentlab.course.exercises import KERNELSPEC

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for d in ("notebooks", "exercises", "solutions") for p in (ROOT / d).glob("*.ipynb"))


def test_the_kits_kernelspec_is_the_installed_kernels():
    spec = KernelSpecManager().get_kernel_spec(KERNELSPEC["name"])
    assert (spec.display_name, spec.language) == (KERNELSPEC["display_name"], KERNELSPEC["language"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_notebook_stores_what_the_kernel_writes_and_no_timestamps(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec") == KERNELSPEC
    info = nb.metadata.get("language_info", {})
    assert info.get("name") == "python" and info.get("pygments_lexer") == "ipython3"
    stamped = [i for i, cell in enumerate(nb.cells) if "execution" in cell.metadata]
    assert not stamped, f"cells {stamped} store execution timestamps"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_no_notebook_stores_widget_state_that_saving_would_rewrite(path):
    """JupyterLab re-serialises stored widget state on save ("max": 1.0 becomes "max": 1: 100 changed
    lines in notebook 02 for running its cells), so a learner's git diff was noise: none is stored."""
    assert "widgets" not in nbformat.read(path, as_version=4).metadata


def test_make_notebooks_stores_no_widget_state():
    assert "--ExecutePreprocessor.store_widget_state=False" in (ROOT / "Makefile").read_text()
