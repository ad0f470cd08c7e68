"""A list over a sharded run's partitions, in range-key order: a k-way merge of its shards.

A sharded run's result rows live under ``N`` hash keys (``store.shards``), each in
``result_key`` order. :class:`MergedPartitions` is a :class:`~chalicelib.store.pagination.Source`
over all of them: a page queries every shard for the rows after the cursor's
``result_key`` (``result_key > :after``, a key condition: nothing before it is read),
each shard a little more than its share of the page, and merges them, fetching more of a
shard only when the merge runs out of it. The shards' first pages are requested side by
side.

The cursor holds the last ``result_key`` served (signed, with the offset and total, as
every cursor): the next page starts after it in every shard. That key orders the merged
list completely (one row per key across the shards, as an item lives in one shard), so
pages never repeat or skip a row, and a cursor is worth the same whatever the shards'
page boundaries were. The list's order is the unsharded run's: item, then trial.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import Any

#: The most shards a page's first reads go out to at once.
_PARALLEL = 16


class _Page(list[Any]):
    """Rows of one merged page, with where the next page starts (None: the end)."""

    last_evaluated_key: dict[str, Any] | None = None


class _ShardRows:
    """One shard's rows after a key, read ``chunk`` at a time as the merge asks for them."""

    def __init__(
        self,
        source: MergedPartitions,
        hash_key: str,
        after: str | None,
        chunk: int,
        keys_only: bool,
    ) -> None:
        self.source, self.hash_key, self.chunk = source, hash_key, chunk
        self.keys_only = keys_only
        self.after = after
        self.buffer: list[Any] = []
        self.next_key: dict[str, Any] | None = None
        self.started = False

    def fetch(self) -> None:
        source = self.source
        attr = getattr(source.target, source.range_attr)
        condition = (attr > self.after) if self.after is not None else None
        if source.within is not None:
            condition = source.within if condition is None else condition & source.within
        result = source.target.query(
            self.hash_key,
            range_key_condition=condition,
            limit=self.chunk,
            last_evaluated_key=self.next_key,
            consistent_read=source.consistent,
            filter_condition=source.only,
            attributes_to_get=source.attributes(self.keys_only),
        )
        self.buffer = list(result)
        self.next_key = result.last_evaluated_key
        self.started = True

    def __iter__(self) -> Iterator[Any]:
        while True:
            if not self.started:
                self.fetch()
            yield from self.buffer
            self.buffer = []
            if self.next_key is None:
                return
            self.fetch()


@dataclass(frozen=True)
class MergedPartitions:
    """Several partitions of one table merged by range key (a sharded run's results)."""

    target: Any
    hash_keys: tuple[str, ...]
    range_attr: str
    consistent: bool = True
    #: A filter after the key range (rows it drops are read and billed).
    only: Any = None
    #: A condition on the range key every shard's query carries.
    within: Any = None
    #: The attributes a page reads (None: all).
    projected: frozenset[str] | None = None
    #: The rows' count kept by the caller (None: a COUNT query per shard).
    counted: int | None = None

    @property
    def key_attrs(self) -> frozenset[str]:
        return frozenset({self.range_attr})

    @property
    def scope(self) -> str:
        name = getattr(self.target, "__name__", type(self.target).__name__)
        first = self.hash_keys[0] if self.hash_keys else ""
        return f"{name}|merged|{first}|{len(self.hash_keys)}|{self.only}|{self.within}"

    def attributes(self, keys_only: bool) -> list[str] | None:
        hash_attr = self.target._hash_keyname
        keys = {hash_attr, self.range_attr}
        if keys_only:
            return sorted(keys)
        return None if self.projected is None else sorted(self.projected | keys)

    def read(self, last_key: dict[str, Any] | None, n: int, keys_only: bool) -> _Page:
        if n <= 0:
            return _Page()
        after = last_key[self.range_attr]["S"] if last_key else None
        shards = len(self.hash_keys)
        # A shard's share of the page and some: most pages need one read per shard.
        chunk = min(max(n, 1), -(-max(n, 1) * 5 // (4 * shards)) + 2)
        streams = [_ShardRows(self, key, after, chunk, keys_only) for key in self.hash_keys]
        with ThreadPoolExecutor(max_workers=min(_PARALLEL, shards)) as pool:
            list(pool.map(lambda s: s.fetch(), streams))
        merged = heapq.merge(*streams, key=lambda row: getattr(row, self.range_attr))
        rows = list(islice(merged, n + 1))
        page = _Page(rows[:n])
        if len(rows) > n:
            last = getattr(rows[n - 1], self.range_attr)
            page.last_evaluated_key = {self.range_attr: {"S": last}}
        return page

    def count(self) -> int:
        if self.counted is not None:
            return self.counted
        return sum(
            int(
                self.target.count(
                    key,
                    range_key_condition=self.within,
                    filter_condition=self.only,
                    consistent_read=self.consistent,
                )
            )
            for key in self.hash_keys
        )
