"""The kit's kernels draw each inline figure once (agentlab/kernel.py, an IPython extension that
`make setup` loads into every kernel of .venv). In a real kernel, a figure shown costs two renders
(one cut short) where it cost three, and every cell shows exactly what it shows without the
extension, PNG bytes included: with matplotlib never imported, with figures kept open, with
`plt.ioff()`, on another backend, and when a figure cannot be drawn (its error once, not twice)."""

from __future__ import annotations

import pytest
from kernel_sockets import UnixSocketKernelManager, start_kernel, stop_kernel

SETUP = """
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg

# Every render of a figure into pixels goes through its canvas's draw. Showing one as a PNG costs
# two: one cut short once it has measured the tight bounding box, then the picture itself.
renders = 0
_draw = FigureCanvasAgg.draw

def _counted(self):
    global renders
    renders += 1
    return _draw(self)

FigureCanvasAgg.draw = _counted
get_ipython().InteractiveTB.set_mode("Minimal")  # errors in one line: full tracebacks cost more CPU

_hooks = get_ipython().events.callbacks["post_execute"]
_ours = next((f for f in _hooks if f.__qualname__.endswith("show_figures_first")), None)
_at = _hooks.index(_ours) if _ours else None

def use_extension(on):
    if _ours is None:  # a kernel without the extension (the test of that fails)
        return
    if on and _ours not in _hooks:
        _hooks.insert(_at, _ours)
    if not on and _ours in _hooks:
        _hooks.remove(_ours)
"""


def run(kc, code: str) -> list[dict]:
    """What the cell shows: its streams, results, displays and errors, in order."""
    shown: list[dict] = []

    def keep(msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            shown.append({"stream": content["name"], "text": content["text"]})
        elif kind in ("display_data", "execute_result"):
            shown.append({kind: content["data"], "metadata": content["metadata"]})
        elif kind == "error":
            shown.append({"error": content["ename"], "value": content["evalue"]})

    kc.execute_interactive(code, output_hook=keep, timeout=60)
    return shown


@pytest.fixture(scope="module")
def kernel():
    """One kernel of this venv (the one nbval and JupyterLab start) for the whole file; what it had
    loaded before any cell ran is kept as `kernel.at_start`. A fresh one, as a learner's is, not one
    forked from nbval's zygote, which has imported matplotlib already (kernel_fork.py)."""
    km, kc = start_kernel(UnixSocketKernelManager)
    try:
        kc.at_start = run(kc, "import sys\nprint('matplotlib' in sys.modules, get_ipython().events.callbacks"
                              "['post_execute'])")
        assert run(kc, SETUP) == []
        yield kc
    finally:
        stop_kernel(km, kc)


def shown_and_drawn(kc, cells: list[str], extension: bool) -> tuple[list[list[dict]], int]:
    """Run `cells` from no open figure, with or without the extension: what each cell shows, and
    how many renders they cost between them."""
    run(kc, f"plt.close('all')\nuse_extension({extension})\nrenders = 0")
    try:
        shown = [run(kc, cell) for cell in cells]
        # the count, from its stdout however many messages carry it: a loaded run once got two
        # outputs here where one was expected (which two was not kept; ipykernel may send a
        # print's digits and newline apart)
        printed = "".join(out["text"] for out in run(kc, "print(renders)") if out.get("stream") == "stdout")
    finally:
        run(kc, "use_extension(True)")
    return shown, int(printed)


def pngs(shown: list[list[dict]]) -> list[str]:
    return [out["display_data"]["image/png"] for cell in shown for out in cell if "display_data" in out]


def test_every_kernel_loads_the_extension_and_it_imports_no_matplotlib(kernel):
    [printed] = kernel.at_start
    assert printed["text"].startswith("False ["), printed  # matplotlib is not imported until a cell plots
    assert "show_figures_first" in printed["text"], printed


# Small figures: what is checked (how many renders, the same bytes) does not depend on their size.
FIGURES = """fig, ax = plt.subplots(figsize=(2, 1.5))
_ = ax.plot([1, 3, 2], label="a line")
_ = ax.set_title("drawn once")
fig, axes = plt.subplots(1, 2, figsize=(3, 1.5), layout="constrained")
_ = axes[0].bar(["x", "y"], [2, 1])
_ = axes[1].legend(*axes[0].get_legend_handles_labels())"""
ONE = 'fig, ax = plt.subplots(figsize=(2, 1.5))\n_ = ax.plot([1, 3, 2])'


def test_a_figure_shown_is_not_drawn_a_third_time_and_its_png_is_the_same(kernel):
    shown, drawn = shown_and_drawn(kernel, [FIGURES], extension=True)
    before, drawn_before = shown_and_drawn(kernel, [FIGURES], extension=False)
    assert len(pngs(shown)) == 2
    assert shown == before  # byte for byte, the PNGs included
    # two figures, each shown as a PNG (two renders) and no longer drawn a third time by pyplot
    assert (drawn, drawn_before) == (4, 6)


@pytest.mark.parametrize(
    "cells",
    [
        ["%config InlineBackend.close_figures = False", ONE, "_ = ax.set_title('again')",
         "%config InlineBackend.close_figures = True"],
        ["_ = plt.ioff()", ONE, "plt.show()", "_ = plt.ion()"],
    ],
    ids=["figures kept open", "ioff"],
)
def test_where_the_inline_backend_does_not_close_the_figures_nothing_changes(kernel, cells):
    shown, drawn = shown_and_drawn(kernel, cells, extension=True)
    assert (shown, drawn) == shown_and_drawn(kernel, cells, extension=False)
    assert pngs(shown)


def test_on_another_backend_nothing_changes_and_back_on_inline_a_figure_is_drawn_once(kernel):
    cells = ["%matplotlib agg", ONE, "%matplotlib inline", ONE]
    shown, drawn = shown_and_drawn(kernel, cells, extension=True)
    before, drawn_before = shown_and_drawn(kernel, cells, extension=False)
    assert shown == before
    # the figure made on Agg is still open: back on inline, it is shown with the new one
    assert [len(pngs([cell])) for cell in shown] == [0, 0, 0, 2]
    # pyplot's hook draws the one on Agg (1 render), then two are shown (4); without the
    # extension, pyplot's hook draws the new one a third time
    assert (drawn, drawn_before) == (5, 6)


BROKEN = """from matplotlib.artist import Artist

class Broken(Artist):
    def draw(self, renderer):
        raise ValueError("this artist cannot be drawn")

fig, ax = plt.subplots(figsize=(2, 1.5))
_ = fig.add_artist(Broken())"""


def test_a_figure_that_cannot_be_drawn_reports_its_error_once(kernel):
    [shown], _ = shown_and_drawn(kernel, [BROKEN], extension=True)
    [before], _ = shown_and_drawn(kernel, [BROKEN], extension=False)
    # without the extension pyplot's hook failed first, adding "Error in callback ..." and the same error
    assert [out.get("error") for out in shown] == ["ValueError", None]
    assert [out.get("error") for out in before] == [None, "ValueError", "ValueError", None]
    assert "Error in callback" in before[0]["text"]
