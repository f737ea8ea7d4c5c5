"""Where an attempt runs in this process: the caller's thread, or daemon threads kept between runs.

The loop in `run.py` hands each attempt over and reads it back. A `concurrent.futures.Future`
would do, but it is built for any number of threads to wait on (a lock and a condition each, and
both taken on every look), and on a run of no-op steps that bookkeeping cost more than the steps.
The executors here hand back a `Ticket` instead: the same questions (`done`, `result`,
`exception`, `add_done_callback`), a fraction of the cost.

On the virtual clock with no time limit, the loop waits for every step it started before it moves
on. A step started alone runs on the loop's thread (it would only wait). The steps started at one
moment are handed over in one go (`share`): one daemon thread is woken and takes them one after
another, while the loop's thread watches; when calls are left and none was taken for `SOON` s
(the threads on them are busy, waiting for a model, say), it wakes another. So every step soon has
a thread of its own (one that waits for another of the same moment cannot deadlock), steps that
take real time overlap as before, and no-op steps cost one hand-off a moment, not one a step. The
loop's thread runs none of them: it stays free to see an interrupt (Ctrl-C) at once.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent import futures
from typing import Any

_DONE = threading.Lock()  # guards each ticket's switch to done against a callback being added


class Ticket:
    """The result-to-be of one call: set once by whichever thread runs it (`run`), read like a
    Future's. Callbacks run in the thread that finishes it, or at once if it is done."""

    __slots__ = ("_done", "_value", "_error", "_callbacks", "_gate")

    def __init__(self) -> None:
        self._done, self._value, self._error, self._callbacks, self._gate = False, None, None, None, None

    def run(self, fn: Callable[..., Any], args: tuple) -> None:
        """Call `fn(*args)` and keep what it returns or raises (any exception, as a pool does)."""
        try:
            self._value = fn(*args)
        except BaseException as error:  # noqa: BLE001 - kept for .result(), as a pool keeps it
            self._error = error
        with _DONE:
            self._done, callbacks = True, self._callbacks
        for callback in callbacks or ():
            callback(self)

    def done(self) -> bool:
        return self._done

    def cancel(self) -> bool:  # as Executor.map asks: a call handed over is not taken back
        return False

    def cancelled(self) -> bool:
        return False

    def add_done_callback(self, fn: Callable[[Ticket], Any]) -> None:
        with _DONE:
            if not self._done:
                self._callbacks = [*(self._callbacks or ()), fn]
                return
        fn(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until it is done, at most `timeout` s: is it done?"""
        if not self._done:
            if self._gate is None:  # a lock held until it is done (a third of an Event's cost)
                gate = self._gate = threading.Lock()
                gate.acquire()
                self.add_done_callback(lambda _: gate.release())
            if self._gate.acquire(timeout=-1 if timeout is None else timeout):
                self._gate.release()  # open for the next wait too
        return self._done

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self.wait(timeout):
            raise futures.TimeoutError
        return self._error

    def result(self, timeout: float | None = None) -> Any:
        if (error := self.exception(timeout)) is not None:
            raise error
        return self._value


def wait_all(pending: list, timeout: float) -> bool:
    """Wait at most about `timeout` s for every ticket or future in `pending`: are all done?"""
    tickets = [f for f in pending if isinstance(f, Ticket)]  # the last handed over is done last, mostly:
    if not all(ticket.wait(timeout) for ticket in reversed(tickets)):  # waited for first, one wake
        return False
    rest = [f for f in pending if not isinstance(f, Ticket)]
    return not rest or not futures.wait(rest, timeout=timeout).not_done


class InPlace(futures.Executor):
    """An executor whose worker is the caller: `submit` runs the call at once and hands back a
    done ticket. A run with one worker and no time limit uses it, since a thread would only add
    a hand-off per step (with one worker, steps run one at a time anyway)."""

    def submit(self, fn, /, *args, **kwargs) -> Ticket:
        ticket = Ticket()
        ticket.run(fn if not kwargs else lambda *a: fn(*a, **kwargs), args)
        return ticket


class Daemons(futures.Executor):
    """An executor that runs each call on a daemon thread: an idle one of this process's if there
    is one, else a new one. A run with a time limit walks away from an attempt that does not come
    back in time; nothing can stop a Python thread, so the attempt may run on (even for ever, if
    its agent blocks). A pool's threads would keep the process alive at exit until they end; a
    daemon thread does not. Every call has a thread at once (none waits for another's, so a step
    that runs a plan of its own cannot deadlock), and the loop never has more than `workers`
    attempts going (besides abandoned ones). A thread that is done waits for the next call (up to
    `IDLE` of them), so a run does not pay to start threads again: a 200-wide run started 200,
    which cost more than its steps."""

    def submit(self, fn, /, *args, **kwargs) -> Ticket:
        ticket = Ticket()
        _wake((ticket, fn if not kwargs else lambda *a: fn(*a, **kwargs), args))
        return ticket


def share(calls: list[tuple[Ticket, Callable[..., Any], tuple]]) -> None:
    """Run `calls`, each into its ticket, and return once all are done: one alone on this thread
    (it would only be waited for), more on daemon threads, handed over together. One thread is
    woken for them, and takes them one after another; while calls are left and none has been
    taken for `SOON` s (the threads on them are busy), another is woken, and so on, so every
    call soon has a thread (a call waiting for another of the same moment cannot deadlock).
    This thread only waits, in short waits, so that an interrupt (Ctrl-C) is seen at once."""
    if len(calls) <= 1:
        for ticket, fn, args in calls:
            ticket.run(fn, args)
            if isinstance(ticket._error, KeyboardInterrupt):  # Ctrl-C in the call run here
                raise ticket._error
        return
    left = _Shared(calls)
    _hand(left)
    try:
        for ticket in reversed([ticket for ticket, _, _ in calls]):  # the last is done last, mostly
            seen = len(left)
            while not ticket.wait(SOON if left else 0.2):
                if left and len(left) == seen and not left.coming:  # none taken: all are busy
                    left.coming = True
                    _hand(left)
                seen = len(left)
    except BaseException:  # an interrupt: what no thread has taken yet is not started
        left.clear()
        raise


SOON = 0.001  # seconds: calls left untaken this long get one more thread


class _Shared(deque):
    """Calls handed to daemon threads together, not yet taken; `coming`: a thread woken for them
    has not taken one yet."""

    def __init__(self, calls: list) -> None:
        super().__init__(calls)
        self.coming = True


def _hand(left: _Shared) -> None:
    """Wake a thread for the calls left; if none can be started, those no thread took fail with why."""
    try:
        _wake(left)
    except RuntimeError as error:  # "can't start new thread": as a pool that refused them
        while True:
            try:
                ticket, _, _ = left.popleft()
            except IndexError:
                return
            ticket.run(_raise, (error,))


def _raise(error: BaseException) -> None:
    raise error


def _help(left: _Shared) -> None:
    """A daemon thread's part of `share`: take a call, run it, take the next, until none is left."""
    left.coming = False
    while True:
        try:
            ticket, fn, args = left.popleft()
        except IndexError:
            return
        ticket.run(fn, args)


IDLE = 256  # threads kept waiting for calls, at most
_CALLS: queue.SimpleQueue = queue.SimpleQueue()
_IDLE_LOCK = threading.Lock()
_idle = [0]  # threads waiting for a call that no submit has claimed yet


def _wake(call: tuple | _Shared) -> None:
    """Hand `call` (one call, or the calls left of a `share`) to a waiting thread, else a new one
    (if that cannot be started, the RuntimeError is raised and nothing is handed over)."""
    with _IDLE_LOCK:
        spare = _idle[0] > 0
        _idle[0] -= spare
    if not spare:
        threading.Thread(target=_serve, name="agentlab-attempt", daemon=True).start()
    _CALLS.put(call)


def _take(call: tuple | _Shared) -> None:
    if isinstance(call, _Shared):
        _help(call)
    else:
        ticket, fn, args = call
        ticket.run(fn, args)


def _serve() -> None:
    """A daemon thread's life: take a call, run it into its ticket, wait for the next."""
    while True:
        _take(_CALLS.get())  # a function of its own: nothing of the call is held while waiting
        with _IDLE_LOCK:
            if _idle[0] >= IDLE:
                return
            _idle[0] += 1
