"""Read a paged stream one page ahead, in a thread, so the next request is already on its way.

Settle reads three paged streams (this run's results, the baseline's, the items' labels)
and turns each page into counters. Read in turn, the store waits while settle decodes and
settle waits while the store answers. With each stream's next page requested while the
current one is worked on, the two overlap: a settle takes about as long as the slower of
the two, not their sum. At most ``depth`` pages wait in the queue, so memory stays bounded.
A sharded run's rows are read the same way, each shard's stream in a thread of its own
(``store.shards.read_ahead_each``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

#: How long a blocked producer waits before it checks whether the reader went away.
_PUT_POLL_S = 0.5


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_END = object()


class _Reader(Generic[T]):
    def __init__(self, pages: Iterable[T], depth: int) -> None:
        self._pages = pages
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._abandoned = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="pawl-readahead", daemon=True)

    def _put(self, value: object) -> bool:
        while not self._abandoned.is_set():
            try:
                self._queue.put(value, timeout=_PUT_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        pages = iter(self._pages)
        try:
            for page in pages:
                if not self._put(page):
                    return
        except BaseException as error:  # handed to the reader, raised there
            self._put(_Failure(error))
            return
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # a generator's cleanup runs now, not when it is collected
        self._put(_END)

    def __iter__(self) -> Iterator[T]:
        self._thread.start()
        try:
            while True:
                value = self._queue.get()
                if value is _END:
                    return
                if isinstance(value, _Failure):
                    raise value.error
                yield value  # type: ignore[misc]
        finally:
            self._abandoned.set()


def read_ahead(pages: Iterable[T], depth: int = 1) -> Iterator[T]:
    """``pages``, produced in a background thread up to ``depth`` pages ahead of the reader.

    An exception raised while producing is raised to the reader at the point it occurred;
    a reader that stops early releases the producer (it stops at its next page).
    """
    return iter(_Reader(pages, depth))
