"""How many of a run's items execute at once: the run's ``max_concurrency``, per process.

A run carries ``max_concurrency`` (from its eval, or its start request; at most the
server's ``max_concurrency_limit``). Every worker process shares one pool of agent-call
threads, as large as that limit, and each run gets its own semaphore in the process: a
batch takes a slot before it submits an item and the item gives it back when done, so
pool threads never wait on a run's slots and one run cannot hold back another's.

The semaphore is exact within one process (the local runtime: every item worker and
every ``wait: true`` start share it). Processes do not share it: on AWS each worker
invocation holds a run to ``max_concurrency`` on its own, and the item event source's
maximum concurrency (per deployment) bounds how many invocations run at once.
docs/engine.md, "Run concurrency", says what is per run and what per deployment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from chalicelib.errors import ValidationFailed
from chalicelib.settings import get_settings

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


@dataclass
class _Slots:
    """One run's slots in this process, shared by every batch of it being worked on."""

    limit: int
    semaphore: threading.BoundedSemaphore = field(init=False)
    users: int = 0

    def __post_init__(self) -> None:
        self.semaphore = threading.BoundedSemaphore(self.limit)

    def release(self, _: object = None) -> None:
        self.semaphore.release()


_runs: dict[str, _Slots] = {}


def check_max_concurrency(value: int | None, field_name: str = "max_concurrency") -> None:
    """Refuse a ``max_concurrency`` above the server's limit (400, naming the limit)."""
    limit = get_settings().max_concurrency_limit
    if value is not None and value > limit:
        raise ValidationFailed(
            f"{field_name} is {value}; this server allows at most {limit} "
            "(PAWL_MAX_CONCURRENCY_LIMIT)",
            field=field_name,
            limit=limit,
        )


def process_limit(max_concurrency: int) -> int:
    """The run's agent calls at once in one process: its own limit, within the server's."""
    return max(1, min(max_concurrency, get_settings().max_concurrency_limit))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                get_settings().max_concurrency_limit, thread_name_prefix="pawl-item"
            )
        return _pool


@contextmanager
def _run_slots(run_id: str, limit: int) -> Iterator[_Slots]:
    with _lock:
        slots = _runs.get(run_id)
        if slots is None:
            slots = _runs[run_id] = _Slots(limit)
        slots.users += 1
    try:
        yield slots
    finally:
        with _lock:
            slots.users -= 1
            if slots.users == 0:
                del _runs[run_id]


def run_all(run_id: str, max_concurrency: int, tasks: list[Callable[[], T]]) -> list[T | Exception]:
    """Run ``tasks`` with at most the run's limit in flight; each one's result or exception."""
    with _run_slots(run_id, process_limit(max_concurrency)) as slots:
        if len(tasks) == 1:  # no thread hop for a single item (a sync start's last one)
            with slots.semaphore:
                return [_outcome(tasks[0])]
        futures: list[Future[T]] = []
        for task in tasks:
            slots.semaphore.acquire()
            try:
                future = _executor().submit(task)
            except BaseException:
                slots.semaphore.release()
                raise
            future.add_done_callback(slots.release)
            futures.append(future)
        return [_outcome(f.result) for f in futures]


def _outcome(call: Callable[[], T]) -> T | Exception:
    try:
        return call()
    except Exception as exc:  # reported per item; the rest of the batch goes on
        return exc


def reset() -> None:
    """Forget the pool (its size comes from the settings); runs' slots end with their batches."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False)
