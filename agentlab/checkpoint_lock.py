"""One run at a time writes a checkpoint path (`claimed`): a second run given a path in use by a
live run (another thread, process or notebook) is refused, instead of two runs overwriting each
other's saves. Readers (`checkpoint.load`) need no hold and never disturb the writer."""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator
from pathlib import Path

from agentlab.checkpoint import CheckpointError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _tidy(path: Path) -> None:
    """Remove the temporary files that writes to `path` killed halfway left behind (see `checkpoint._write`).
    Only the run that holds the path (`claimed`) does this: another writer's file is not stray."""
    for stray in path.parent.glob(glob.escape(path.name) + ".????????.tmp"):
        stray.unlink(missing_ok=True)


@contextlib.contextmanager
def claimed(path: str | os.PathLike | None) -> Iterator[None]:
    """Hold `path` for one run, so that no second run (another thread, process or notebook)
    writes the same checkpoint at the same time: that run is refused with a CheckpointError.
    The hold is an OS lock on `<name>.lock` beside it, released when the run ends or its
    process dies (a killed run never leaves the path held). Readers (`load`) need no hold."""
    if path is None or fcntl is None:  # no checkpoint; or Windows: no such lock, no guard
        yield
        return
    path = Path(path)
    lock = path.parent / (path.name + ".lock")
    while True:
        try:
            handle = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise CheckpointError(f"cannot write the checkpoint {str(path)!r}: {e.strerror or e}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            raise CheckpointError(
                f"checkpoint {path.name} is in use by another run that is still going (in this process "
                "or another); wait for it to end, or give this run its own checkpoint file"
            ) from None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(handle).st_ino:
                break  # locked, and still the lock file (not one its last holder just removed)
        os.close(handle)
    try:
        _tidy(path)
        yield
    finally:
        lock.unlink(missing_ok=True)  # before unlocking: a run waiting re-checks the file it locked
        os.close(handle)
