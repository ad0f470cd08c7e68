"""How many invocations are in flight: what tells :meth:`LocalRuntime.drain` the runtime is idle.

Every invocation (HTTP request, SQS batch, schedule) runs inside :meth:`Quiesce.working`.
Snapshots never wait on it: the stand-in cuts its journal and writes the state at the cut
from a forked child, consistent without pausing invocations (``local/standin_state.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Quiesce:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0

    @contextmanager
    def working(self) -> Iterator[None]:
        """Count one invocation as in flight while it runs."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1

    @property
    def active(self) -> int:
        with self._lock:
            return self._active
