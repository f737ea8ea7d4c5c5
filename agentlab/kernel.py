"""An IPython extension the kit's kernels load at start: each inline figure is drawn once.

After a cell, a kernel runs matplotlib's two post_execute hooks in the order they registered:
pyplot's renders every changed figure to an image nobody sees, then the inline backend's renders
it again as the PNG it shows, and closes it. Registered at kernel start, before either, this hook
lets the inline backend show and close the figures first, so pyplot finds nothing left to draw:
a third of the rendering saved, and the same PNG.

`make setup` writes `.venv/etc/ipython/ipython_kernel_config.py`, which loads it into every kernel
of the kit's venv. It imports nothing from matplotlib: a kernel that never plots pays nothing.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


def load_ipython_extension(shell: InteractiveShell) -> None:
    def show_figures_first() -> None:
        inline = sys.modules.get("matplotlib_inline.backend_inline")
        # not plotting, or another backend (`%matplotlib widget`, ...): the inline hook is not registered
        if inline is None or inline.flush_figures not in shell.events.callbacks["post_execute"]:
            return
        # figures kept open (InlineBackend.close_figures = False) are left to pyplot's hook, as before
        if inline.InlineBackend.instance().close_figures:
            inline.flush_figures()

    shell.events.register("post_execute", show_figures_first)
