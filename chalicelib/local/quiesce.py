"""A gate that lets a snapshot see the stand-in between invocations, never in the middle of one.

A snapshot scans one table after another, so a handler writing a result row and its run
counter while the scan is under way could be captured half-applied (the row without the
counter, or the reverse), which real DynamoDB never shows. Every invocation (HTTP request,
SQS batch, schedule) runs inside :meth:`Quiesce.working`; a snapshot runs inside
:meth:`Quiesce.paused`, which waits for in-flight invocations to finish and holds new ones
back until it is done. It prefers the snapshot (a waiting pause blocks new work) so a busy
runtime cannot starve it, and it gives up after a timeout rather than stall work behind
one slow agent call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Quiesce:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._entered = 0
        self._pause_waiting = False
        self._paused = False
        # One pause at a time (the periodic snapshot and the final one never overlap).
        self._pause_lock = threading.Lock()

    @contextmanager
    def working(self) -> Iterator[None]:
        """Run one invocation; waits while a snapshot holds the gate."""
        with self._cond:
            while self._paused or self._pause_waiting:
                self._cond.wait()
            self._active += 1
            self._entered += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextmanager
    def paused(self, timeout_s: float) -> Iterator[bool]:
        """Hold new work back and wait for in-flight work to end.

        Yields True when the gate is quiet; False when in-flight work did not finish within
        ``timeout_s`` (the body should then skip what needed quiet).
        """
        with self._pause_lock:
            with self._cond:
                self._pause_waiting = True
                quiet = self._cond.wait_for(lambda: self._active == 0, timeout=timeout_s)
                self._pause_waiting = False
                self._paused = quiet
                if not quiet:
                    self._cond.notify_all()
            try:
                yield quiet
            finally:
                if quiet:
                    with self._cond:
                        self._paused = False
                        self._cond.notify_all()

    @property
    def entered(self) -> int:
        """How many invocations ever started: unchanged means nothing could have written."""
        with self._cond:
            return self._entered

    @property
    def active(self) -> int:
        with self._cond:
            return self._active
