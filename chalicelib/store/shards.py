"""Write-sharded run data: which hash key a run's rows live under, and reading them back in order.

DynamoDB serves about 1,000 write units a second per partition, and every row under one
hash key lands in one partition. A run whose results (and frozen items, and counters) all
share the key ``run_id`` is capped by it (``docs/scaling.md``). A run therefore spreads them
over ``N`` hash keys, its *shards*:

- ``N`` is chosen once, when the run's work is first known (a sync run at start, a queued
  run when its fan-out begins and counts the dataset), from the number of work items
  (:func:`shard_count`), and recorded on the run row (``shards``). A run without it (every
  run from before, and any run of fewer than ``PAWL_RUN_SHARD_ITEMS`` work items) has one.
- A result row and a frozen item row of item ``i`` live under ``run_id#<shard_of(i)>``
  (:func:`partition`); with one shard, under ``run_id`` itself: old runs read unchanged.
  The shard depends on the dataset item id only, so every trial of an item, and a
  redelivered copy of its work, lands on the same key: the conditional create that makes a
  result exactly-once still sees the first row.
- Counters: ``N`` counter rows ``run_id#counters#<k>`` in the runs table (one shard: the
  run row itself, as before); each work batch adds to one of them (:func:`counter_key`).

Readers go through the store, which queries the shards and merges them back into item
order (:func:`merge_sorted`), reading each shard a page ahead in a thread of its own
(:func:`read_ahead_each`), so a sharded run lists, settles and compares exactly as an
unsharded one.
"""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from chalicelib.readahead import read_ahead
from chalicelib.settings import get_settings

T = TypeVar("T")

#: The separator between a run id and its shard (run ids never contain it).
SEPARATOR = "#"
#: A counter row's id: ``<run_id>#counters#<k>`` (a run id never has a ``#``).
COUNTERS = "counters"


def shard_count(work_items: int, *, per_shard: int | None = None, most: int | None = None) -> int:
    """How many shards a run of ``work_items`` (items x trials) gets: one per ``per_shard``
    (``PAWL_RUN_SHARD_ITEMS``), at most ``most`` (``PAWL_RUN_MAX_SHARDS``), at least one."""
    settings = get_settings()
    per = per_shard if per_shard is not None else settings.run_shard_items
    cap = most if most is not None else settings.run_max_shards
    return max(1, min(cap, -(-work_items // max(1, per))))


def shard_of(dataset_item_id: str, shards: int) -> int:
    """The shard of an item: a stable hash of its id (CRC-32: the same in every process and
    release, unlike ``hash()``), modulo the run's shard count."""
    if shards <= 1:
        return 0
    return zlib.crc32(dataset_item_id.encode()) % shards


def partition(run_id: str, shard: int, shards: int) -> str:
    """The hash key of one shard of a run's rows (``run_id`` itself for a one-shard run)."""
    return run_id if shards <= 1 else f"{run_id}{SEPARATOR}{shard}"


def partitions(run_id: str, shards: int) -> list[str]:
    """Every hash key of a run's rows, shard 0 first."""
    return [partition(run_id, shard, shards) for shard in range(max(1, shards))]


def item_partition(run_id: str, dataset_item_id: str, shards: int) -> str:
    """The hash key the rows of ``dataset_item_id`` in this run live under."""
    return partition(run_id, shard_of(dataset_item_id, shards), shards)


def run_id_of(partition_key: str) -> str:
    """The run a partition key belongs to."""
    return partition_key.partition(SEPARATOR)[0]


def counter_key(run_id: str, k: int, shards: int) -> str:
    """The id of counter row ``k`` of a run (the run row itself for a one-shard run)."""
    return run_id if shards <= 1 else f"{run_id}{SEPARATOR}{COUNTERS}{SEPARATOR}{k}"


def counter_keys(run_id: str, shards: int) -> list[str]:
    return [counter_key(run_id, k, shards) for k in range(max(1, shards))]


def merge_sorted(streams: list[Iterator[T]], key: Callable[[T], Any]) -> Iterator[T]:
    """A k-way merge of streams each already in ``key`` order (one stream: itself)."""
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=key)


# --- reading shards side by side ---------------------------------------------------------------


def read_ahead_each(page_streams: Sequence[Iterable[list[T]]], depth: int = 2) -> list[Iterator[T]]:
    """Each shard's rows, its pages read ahead in parallel with the others' (one shard: read
    in this thread, as an unsharded run always was)."""
    if len(page_streams) == 1:
        return [(row for page in page_streams[0] for row in page)]
    return [(row for page in read_ahead(pages, depth) for row in page) for pages in page_streams]


def paged(rows: Iterator[T], size: int) -> Iterator[list[T]]:
    """Rows in lists of ``size`` (the last one shorter)."""
    page: list[T] = []
    for row in rows:
        page.append(row)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page
