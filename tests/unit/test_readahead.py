"""read_ahead keeps order, raises the producer's error where it happened, stays bounded,
and lets a producer go when its reader stops early."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from chalicelib.readahead import read_ahead


def test_pages_arrive_in_order_and_all_of_them() -> None:
    assert list(read_ahead(iter(range(1000)), depth=3)) == list(range(1000))
    assert list(read_ahead(iter([]))) == []


def test_an_error_while_producing_reaches_the_reader_after_the_pages_before_it() -> None:
    def pages() -> Iterator[int]:
        yield 1
        yield 2
        raise RuntimeError("the store went away")

    seen: list[int] = []
    with pytest.raises(RuntimeError, match="the store went away"):
        for page in read_ahead(pages()):
            seen.append(page)
    assert seen == [1, 2]


def test_the_producer_stays_at_most_depth_pages_ahead() -> None:
    produced: list[int] = []
    allowed = threading.Semaphore(0)

    def pages() -> Iterator[int]:
        for n in range(10):
            produced.append(n)
            yield n

    reader = read_ahead(pages(), depth=2)
    assert next(reader) == 0
    # Give the producer every chance to run ahead; it blocks once the queue is full.
    allowed.acquire(timeout=0.3)
    # One page read, two queued, one in the producer's hand waiting for room.
    assert len(produced) <= 1 + 2 + 1
    assert list(reader) == list(range(1, 10))


def test_a_reader_that_stops_early_releases_the_producer() -> None:
    finished = threading.Event()

    def pages() -> Iterator[int]:
        try:
            yield from range(1_000_000)
        finally:
            finished.set()

    reader = read_ahead(pages(), depth=1)
    assert next(reader) == 0
    reader.close()  # the reader goes away (settle raised, say)
    assert finished.wait(timeout=5), "the producer should stop at its next page"
