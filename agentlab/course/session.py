"""The grader's side of a sandboxed notebook: start it, run its cells with a deadline, then take out
what the learner defined and call it, as plain data, from the grader's own process.

    with Session(cells, workdir, forbidden) as session:
        run = session.run(timeout=300)          # which cells failed, where it stopped
        answer = session.get("longest_chain")   # a LearnerRef: calling it runs in the sandbox
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentlab.course import sandbox, wire
from agentlab.course.forbidden import kit_without

START_SECONDS = 60.0  # for the sandbox to start, before the notebook's --timeout begins
CALL_SECONDS = 60.0  # the most one call of a learner's function may take, whatever a check allows


@dataclass
class Ran:
    """What running the notebook's cells left behind."""

    errors: dict[int, tuple[str, str]] = field(default_factory=dict)  # cell -> (exception, message)
    broken: str = ""
    stopped_at: int | None = None  # the cell that was running when the notebook broke
    check_calls: list[str] = field(default_factory=list)


class LearnerRef:
    """One of the learner's objects (a function, an object of their own class), held in the sandbox.
    Calling it calls it there; nothing of it runs in the grader, and it equals only itself."""

    def __init__(self, session: Session, number: int, kind: str):
        self._session, self._number, self._kind = session, number, kind

    @property
    def number(self) -> int:
        return self._number

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.call(self._number, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._session.attribute(self._number, name)

    def __repr__(self) -> str:
        return f"<{self._kind} from your notebook>"

    def in_another_process(self, *args: Any) -> Any:
        """Call it, in the sandbox, as if in another Python process (`wire.in_another_process`)."""
        return self._session.protocol(self._number, "another-process", *args)

    def __reduce__(self) -> tuple:
        """Pickling it pickles the learner's object in the sandbox (an error there is raised here);
        unpickled, it is that copy."""
        copy = self._session.protocol(self._number, "copy")
        if not isinstance(copy, LearnerRef):
            return (_same, (copy,))
        _SESSIONS[id(self._session)] = self._session
        return (_find, (id(self._session), copy.number, copy._kind))


def _learner_number(obj: Any) -> int | None:
    return obj.number if type(obj) is LearnerRef else None


_SESSIONS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _find(session: int, number: int, kind: str) -> LearnerRef:
    return LearnerRef(_SESSIONS[session], number, kind)


def _same(value: Any) -> Any:
    return value


class Session:
    def __init__(self, cells: list[str], workdir: Path, forbidden: dict[str, list[str]] | None = None):
        """`forbidden`: {exercise: its helpers} for the exercises this sandbox grades that forbid
        helpers: its kit is then a copy that lacks them (`forbidden.kit_without`)."""
        self.cells, self.workdir, self.forbidden = cells, Path(workdir), forbidden or {}
        self.kit: Path | None = None  # that copy's folder, removed by cleanup()
        self.process: subprocess.Popen | None = None
        self.scratch = Path(tempfile.mkdtemp(prefix="agentlab-scratch-"))
        self.peer: wire.Peer | None = None
        self.refused = ""  # why the grader stopped reading this sandbox, if it did

    # --- starting and stopping ---

    def start(self) -> None:
        kernel_in, grader_out = os.pipe()
        grader_in, kernel_out = os.pipe()
        argv = [sys.executable, "-m", "agentlab.course.kernel", str(kernel_in), str(kernel_out)]
        kit = None
        if self.forbidden:
            self.kit = Path(tempfile.mkdtemp(prefix="agentlab-kit-"))
            kit = self.make_kit(self.kit)
        with sandbox.Box(self.workdir, [self.scratch], kit=kit) as box:
            self.process = subprocess.Popen(
                box.command(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(kernel_in, kernel_out, *box.fds),
                start_new_session=True,
            )
        os.close(kernel_in)
        os.close(kernel_out)
        self.peer = wire.Peer(grader_in, grader_out, "G", self._learner_ref, _learner_number)
        self._fds = (grader_in, grader_out)

    def make_kit(self, into: Path) -> Path:
        """The kit this sandbox sees, made in `into`: a copy without the forbidden helpers."""
        return kit_without(self.forbidden, sandbox.kit_folder(), into)

    def close(self, grace: float = 0.0) -> None:
        """Stop the sandbox (after `grace` seconds for one that is ending by itself)."""
        if self.process is not None and grace:
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # its own session: bwrap and all under it
            except OSError:
                self.process.kill()
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for fd in getattr(self, "_fds", ()):
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = ()

    def cleanup(self) -> None:
        """Stop the sandbox and remove the scratch folder (after the checks that use it are done)."""
        import shutil

        self.close()
        for folder in (self.scratch, self.kit):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()

    @property
    def alive(self) -> bool:
        return self.peer is not None and not self.peer.broken and self.process.poll() is None

    # --- the conversation ---

    def _learner_ref(self, number: int, kind: str) -> LearnerRef:
        return LearnerRef(self, number, kind)

    def run(self, timeout: float, skip: set[int] = frozenset(), numbers: list[int] | None = None) -> Ran:
        """Run the cells (but those in `skip`, left empty), at most `timeout` seconds in all. A message
        names a cell by its number in `numbers` (the notebook's, counting markdown) + 1. Whatever
        the sandbox does, this returns, with the sandbox stopped if the run broke."""
        ran = Ran()
        numbers = numbers or list(range(len(self.cells)))
        if self.peer is None:
            self.start()
        cells = ["" if i in skip else source for i, source in enumerate(self.cells)]
        deadline, index = time.monotonic() + START_SECONDS, -1  # the clock starts with the first cell
        try:
            self.peer.post(("run", cells))  # a forbidding exercise's sandbox lacks the helpers in its kit
            while True:
                message = self.peer.next_message(deadline - time.monotonic())
                if message[0] == "ready" and len(message) == 2 and _texts(message[1]):
                    ran.check_calls = [c[:100] for c in message[1]]
                    return ran
                if len(message) < 2 or type(message[1]) is not int or not 0 <= message[1] < len(cells):
                    raise wire.CodecError("a message about no cell of the notebook")
                if message[0] == "started" and len(message) == 2:
                    deadline = deadline if index >= 0 else time.monotonic() + timeout
                    index = message[1]
                elif message[0] == "finished" and len(message) == 3 and message[2] is None:
                    pass
                elif message[0] == "finished" and len(message) == 3 and _texts(message[2], 2):
                    ran.errors[message[1]] = (message[2][0][:200], message[2][1][:500])
                else:
                    raise wire.CodecError(f"a message out of turn ({message[0][:40]!r})")
        except TimeoutError:
            ran.broken = (
                f"still running after {timeout:g} s (the --timeout), in cell {numbers[max(index, 0)] + 1}"
            )
        except wire.CodecError as error:
            ran.broken = (
                f"cell {numbers[max(index, 0)] + 1} sent what is not a message the grader reads ({error})"
            )
        except (wire.WireError, OSError, EOFError):
            self.close(grace=2.0)
            code = self.process.returncode if self.process else None
            where = numbers[index] + 1 if index >= 0 else 1
            ran.broken = f"the kernel died in cell {where}" + (f" (exit code {code})" if code else "")
        except Exception as error:  # the grader's own side failed: said in one line, the batch goes on
            ran.broken = f"could not be run: {type(error).__name__}: {str(error)[:120]}"
        ran.stopped_at = max(index, 0)
        self.peer.broken = ran.broken
        self.close()
        return ran

    def get(self, name: str) -> Any:
        return self._ask(("get", name))[0]

    def call(self, number: int, args: tuple, kwargs: dict) -> Any:
        answer = self._ask(("answer", number, args, kwargs))
        if len(answer) != 2 or type(answer[1]) is not list:
            self.close()
            raise RuntimeError("your function's answer came back out of turn")
        value, changed = answer
        for original, now in zip(args, changed, strict=False):
            _write_back(original, now)
        return value

    def protocol(self, number: int, name: str, *args: Any) -> Any:
        return self._ask(("protocol", number, name, args))[0]

    def attribute(self, number: int, name: str) -> Any:
        if not self.alive:
            raise AttributeError(name)
        return self._ask(("getattr", number, name))[0]

    def _ask(self, request: tuple) -> tuple:
        """One exchange with the sandbox. If it breaks the conversation (it died, sent what is not
        data, or took longer than CALL_SECONDS), the sandbox is stopped and `refused` says why."""
        if not self.alive:
            raise RuntimeError(f"your notebook's kernel stopped ({self.peer.broken or 'it exited'})")
        try:
            return self.peer.ask(request, timeout=CALL_SECONDS)
        except wire.CodecError as error:
            self.refused = f"your notebook sent what is not a message the grader reads ({error})"
            self.close()
            raise RuntimeError(self.refused) from None
        except BaseException as error:
            if not self.peer.broken:  # the learner's own exception, an OSError too: the conversation goes on
                raise
            self.close()
            if isinstance(error, (wire.WireError, OSError)):  # the pipe, not the learner's code
                raise RuntimeError(f"your function ended the kernel ({str(error)[:200]})") from None
            raise  # a time limit


def _texts(value: Any, size: int | None = None) -> bool:
    """Whether `value` is a list or tuple of strings (of `size` of them)."""
    kinds = type(value) in (list, tuple) and all(type(v) is str for v in value)
    return kinds and (size is None or len(value) == size)


def _write_back(original: Any, now: Any) -> None:
    """A dict, list or set the learner's function changed is changed here too, so a check sees it."""
    if now is None or type(original) is not type(now) or original == now:
        return
    if isinstance(original, dict):
        original.clear()
        original.update(now)
    elif isinstance(original, list):
        original[:] = now
    elif isinstance(original, set):
        original.clear()
        original.update(now)
