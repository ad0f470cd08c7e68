"""What settle reads, read lean: result outcomes and item metadata as plain tuples.

Settle reads every result row of a run (and of its baseline) and every item's metadata
once. Through PynamoDB models that cost a model object per row, a JSON decode per
attribute and a pydantic validation per score and usage entry; at 100,000 items most of
settle's CPU. Here the pages come from the table connection as DynamoDB returned them
and only the attributes settle needs are decoded, into small tuples. Rows were
validated when they were written; nothing is held beyond one page.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import Any, NamedTuple

from chalicelib.store import shards as sharding
from chalicelib.store import side_by_side
from chalicelib.store.models import DatasetItemModel, ResultModel

#: The attributes a settle reads of each result row (never input or output).
OUTCOME_ATTRIBUTES = ["dataset_item_id", "trial", "scores", "error", "usage"]
#: Items whose metadata one BatchGetItem reads (DynamoDB's limit).
METADATA_PAGE = 100
#: Items whose metadata one wave of side-by-side BatchGetItems reads: what a reader that
#: labels items page by page should ask for at once.
METADATA_WAVE = METADATA_PAGE * side_by_side.MAX_CALLS
_METADATA_ATTRIBUTES = ["id", "metadata"]
#: What a page reads: the outcome, and the key (the bound of an item-id range).
_READ_ATTRIBUTES = [*OUTCOME_ATTRIBUTES, "result_key"]
#: Rows a sharded stream holds read ahead across all its shards: each shard's Query pages
#: are limited so that shards x (its pages waiting + the one being merged) stay near this.
#: Unlimited (1 MB pages, two waiting per shard), a 100,000-item settle over 16 shards held
#: nearly the whole run: pawl's RSS peaked at 309 MB.
READ_AHEAD_ROWS = 12_000
#: Pages waiting per shard, and the smallest page a shard reads.
SHARD_PAGES_AHEAD = 2
MIN_SHARD_PAGE_ROWS = 100
#: Shard Queries one stream has in flight at once. Every shard's reader asking at once
#: queued 16 Queries in front of any other request: the local stand-in takes them one at a
#: time, and a run start during a 100,000-item settle took 2.2 s.
SHARD_QUERIES_AT_ONCE = 4


class OutcomeRow(NamedTuple):
    """One result row as settle sees it: scores and usage as stored (lists of dicts)."""

    dataset_item_id: str
    trial: int
    #: The recorded error's code (``AGENT_TIMEOUT``, ``BUDGET_EXCEEDED``, ...), None if scored.
    error_code: str | None
    scores: list[dict[str, Any]]
    usage: list[dict[str, Any]]

    @property
    def errored(self) -> bool:
        return self.error_code is not None


def _json(item: dict[str, Any], name: str) -> Any:
    value = item.get(name)
    if value is None or "NULL" in value:
        return None
    return json.loads(value["S"])


def _row(item: dict[str, Any]) -> OutcomeRow:
    trial = item.get("trial")
    error = _json(item, "error")
    return OutcomeRow(
        dataset_item_id=item["dataset_item_id"]["S"],
        trial=int(trial["N"]) if trial is not None else 1,
        error_code=None if error is None else str(error.get("code") or "UNKNOWN"),
        scores=_json(item, "scores") or [],
        usage=_json(item, "usage") or [],
    )


def iter_outcome_pages(
    run_id: str,
    lo: str | None = None,
    hi: str | None = None,
    *,
    shards: int | None = None,
    page_rows: int = 1000,
) -> Iterator[list[OutcomeRow]]:
    """A run's results in key order (item, then trial), a page at a time.

    The one stream settle reads, and the interface a sliced settle uses: ``lo``/``hi``
    restrict it to the rows of dataset item ids in ``[lo, hi)`` (either open), in item
    order, across every shard of the run. ``shards``: the run's shard count (None: read
    from the run row, one small GetItem). One shard: the run's Query pages as DynamoDB
    returns them. Several: each shard's pages read ahead side by side (a thread each, at
    most :data:`SHARD_QUERIES_AT_ONCE` Queries in flight) and merged by key into pages of
    ``page_rows``; the rows held ahead stay near :data:`READ_AHEAD_ROWS` whatever the
    shard count.
    """
    from chalicelib.store import runs  # runs imports this module's neighbours, not this one

    count = shards if shards is not None else runs.read_shards(run_id)
    keys = sharding.partitions(run_id, count)
    if len(keys) == 1:
        yield from _shard_pages(keys[0], lo, hi)
        return
    limit = max(MIN_SHARD_PAGE_ROWS, READ_AHEAD_ROWS // (len(keys) * (SHARD_PAGES_AHEAD + 1)))
    gate = threading.BoundedSemaphore(SHARD_QUERIES_AT_ONCE)
    streams = [_shard_pages(key, lo, hi, limit, gate) for key in keys]
    rows = sharding.merge_sorted(
        sharding.read_ahead_each(streams, depth=SHARD_PAGES_AHEAD),
        key=lambda row: (row.dataset_item_id, row.trial),
    )
    yield from sharding.paged(rows, page_rows)


def _range(lo: str | None, hi: str | None) -> Any:
    """The key condition of item ids in ``[lo, hi)``: result keys are ``<item id>#<trial>``,
    and ``#`` sorts below every character an id has, so ``lo`` itself is the lowest key of
    item ``lo`` and ``hi`` the lowest of ``hi``."""
    key = ResultModel.result_key
    if lo is not None and hi is not None:
        return key.between(lo, hi)  # inclusive: a row at hi itself is dropped as read
    if lo is not None:
        return key >= lo
    if hi is not None:
        return key < hi
    return None


def _shard_pages(
    hash_key: str,
    lo: str | None,
    hi: str | None,
    limit: int | None = None,
    gate: AbstractContextManager[Any] | None = None,
) -> Iterator[list[OutcomeRow]]:
    """One partition's rows of item ids in ``[lo, hi)`` in key order, a Query page (of at
    most ``limit`` rows) at a time; each Query sent while holding ``gate``."""
    condition = _range(lo, hi)
    table = ResultModel._get_connection()
    start_key: dict[str, Any] | None = None
    while True:
        with gate or nullcontext():
            page = table.query(
                hash_key,
                range_key_condition=condition,
                consistent_read=True,
                attributes_to_get=_READ_ATTRIBUTES,
                exclusive_start_key=start_key,
                limit=limit,
            )
        items = page.get("Items", [])
        rows = [_row(item) for item in items if hi is None or item["result_key"]["S"] < hi]
        yield rows
        start_key = page.get("LastEvaluatedKey")
        if not start_key:
            return


def iter_outcome_rows(run_id: str, shards: int | None = None) -> Iterator[OutcomeRow]:
    """Every result of a run in key order, one page in memory at a time."""
    for page in iter_outcome_pages(run_id, shards=shards):
        yield from page


def batch_get_metadata(item_ids: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """Items' current ``metadata`` by id, in BatchGetItems of :data:`METADATA_PAGE` sent side
    by side (``store.side_by_side``); an id that does not exist (a deleted item) is absent."""
    unique = list(dict.fromkeys(item_ids))
    pages = [
        unique[start : start + METADATA_PAGE] for start in range(0, len(unique), METADATA_PAGE)
    ]
    found: dict[str, dict[str, Any] | None] = {}
    for page in side_by_side.run_all([partial(_metadata_page, ids) for ids in pages]):
        found.update(page)
    return found


def _metadata_page(item_ids: list[str]) -> dict[str, dict[str, Any] | None]:
    table = DatasetItemModel._get_connection()
    found: dict[str, dict[str, Any] | None] = {}
    keys: list[Any] = [{"id": item_id} for item_id in item_ids]
    while keys:
        answer = table.batch_get_item(
            keys, consistent_read=True, attributes_to_get=_METADATA_ATTRIBUTES
        )
        for item in answer.get("Responses", {}).get(table.table_name, []):
            found[item["id"]["S"]] = _json(item, "metadata")
        # DynamoDB may leave keys unprocessed (throttling, 16 MB): ask again for those.
        unprocessed = answer.get("UnprocessedKeys", {}).get(table.table_name, {})
        keys = unprocessed.get("Keys", [])
    return found
