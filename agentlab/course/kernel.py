"""The learner's side of grading, run inside the sandbox: `python -m agentlab.course.kernel R W`.

It runs the notebook's code cells in order in an IPython shell (magics work, as in Jupyter), says
when each cell starts and how it ended, then answers the grader: the value of a name the notebook
defined, a call of one of the learner's functions, an attribute of one of their objects. Every
answer crosses as plain data (see `wire`); the verdict is the grader's, in its own process.

`check(...)` here only notes that it was called: the grade never depends on what runs in here. The
helpers an exercise forbids (`Plan.critical_path` in `02.critical-path`) are not trapped here: the
grader grades that exercise in a sandbox of its own whose kit lacks them (`forbidden.kit_without`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from agentlab.course import wire


def _grader_number(obj: Any) -> int | None:
    return object.__getattribute__(obj, "number") if type(obj) is GraderRef else None


class GraderRef:
    """One of the grader's objects, seen from the sandbox: calling it calls the original."""

    def __init__(self, peer: wire.Peer, number: int):
        object.__setattr__(self, "peer", peer)
        object.__setattr__(self, "number", number)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        peer = object.__getattribute__(self, "peer")
        return peer.ask(("call", object.__getattribute__(self, "number"), args, kwargs))[0]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        peer = object.__getattribute__(self, "peer")
        return peer.ask(("getattr", object.__getattribute__(self, "number"), name))[0]

    def _protocol(self, name: str, *args: Any) -> Any:
        peer = object.__getattribute__(self, "peer")
        return peer.ask(("protocol", object.__getattribute__(self, "number"), name, args))[0]

    def __iter__(self) -> Any:
        return iter(self._protocol("iter"))

    def __len__(self) -> int:
        return self._protocol("len")

    def __getitem__(self, key: Any) -> Any:
        return self._protocol("getitem", key)

    def __contains__(self, item: Any) -> bool:
        return self._protocol("contains", item)

    def __bool__(self) -> bool:
        return self._protocol("bool")

    def __str__(self) -> str:
        return self._protocol("str")

    def __repr__(self) -> str:
        return "<the grader's object>"


class Kernel(wire.Peer):
    def __init__(self, rfd: int, wfd: int):
        super().__init__(rfd, wfd, "L", lambda number, kind: GraderRef(self, number), _grader_number)
        self.namespace: dict[str, Any] = {}

    def serve(self, message: tuple) -> None:
        kind = message[0]
        if kind == "get":
            if message[1] not in self.namespace:
                self.post(("raise", NameError(f"name {message[1]!r} is not defined")))
            else:
                self.reply(self.namespace[message[1]])
            return
        if kind == "answer" and len(message) == 4:  # the grader calls a learner's answer: args come back too
            _, number, args, kwargs = message
            try:
                value = self.handles[number](*args, **kwargs)
            except Exception as error:
                self.post(("raise", error))
                return
            changed = [a if type(a) in (list, dict, set) else None for a in args]
            try:
                self.post(("return", value, changed))
            except wire.CodecError as error:  # an answer too large to send: said as the call's error
                self.post(("raise", error))
            return
        super().serve(message)

    def run_cells(self, cells: list[str]) -> None:
        """Run the notebook, telling the grader when each cell starts and how it ended."""
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        shell.showtraceback = lambda *a, **k: None  # the grader reads the error from the result
        shell.showsyntaxerror = lambda *a, **k: None
        self.namespace = shell.user_ns
        for index, source in enumerate(cells):
            self.post(("started", index))
            result = shell.run_cell(source, store_history=False, silent=False)
            error = result.error_before_exec or result.error_in_exec
            facts = None
            if error is not None:
                name, message = type(error).__name__, str(error)
                facts = (name, message[:500])
            self.post(("finished", index, facts))


def quiet_check(calls: list[str]) -> Any:
    def check(exercise_id: str, answer: Any = None) -> None:
        calls.append(str(exercise_id))

    return check


def main(argv: list[str]) -> int:
    rfd, wfd = wire.fds_from(argv)
    kernel = Kernel(rfd, wfd)
    job = kernel.next_message()  # ("run", cells)
    from agentlab.course import checks

    calls: list[str] = []
    checks.check = quiet_check(calls)
    kernel.run_cells(job[1])
    kernel.post(("ready", calls))
    while True:
        try:
            message = kernel.next_message()
        except wire.WireError:
            return 0
        except wire.CodecError as error:  # a whole frame this kit cannot read: the learner changed it
            kernel.post(("raise", RuntimeError(f"your kernel could not read the grader's request ({error})")))
            continue
        kernel.serve(message)


if __name__ == "__main__":
    os.environ.pop("ANTHROPIC_API_KEY", None)
    sys.exit(main(sys.argv))
