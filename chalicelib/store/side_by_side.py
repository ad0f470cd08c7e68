"""Independent store calls sent side by side, so their round trips overlap.

A commit of 75 results is three 25-row INSERT calls and three 25-row generation writes
(DynamoDB's per-call limits). One after another they are six round trips before the
counting transaction; side by side, two. The calls are independent (each row is its own
condition), so their order never mattered. A small pool shared by the process holds them:
at most :data:`MAX_CALLS` of a commit at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

#: Calls of one process in flight at once through this module.
MAX_CALLS = 8

_THREAD_PREFIX = "pawl-store"
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_CALLS, thread_name_prefix=_THREAD_PREFIX)
        return _pool


def run_all(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Every call's answer, in the order given. Returns (or raises the first exception, in
    that order) once all have ended: none is abandoned half way. One call, or calls made
    from one of the pool's own threads (which must never wait on the pool), run in this
    thread, one after another."""
    if len(calls) == 1 or threading.current_thread().name.startswith(_THREAD_PREFIX):
        return [call() for call in calls]
    outcomes = [future.result() for future in [_executor().submit(_outcome, c) for c in calls]]
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
    return outcomes  # type: ignore[return-value]  # no exception among them


def _outcome(call: Callable[[], T]) -> T | Exception:
    try:
        return call()
    except Exception as exc:  # handed back to the caller, who decides what it means
        return exc
