"""A run's frozen item set: the items as the run froze them (invariant 6), in the
``run-items`` table, under the run's shard keys (``store.shards``).

Two kinds of row: an item too large to ride in a work message has its own (keyed by its
id, read by id); the others are packed many to a row (``items``, keyed
``page#<first item id>``), one set of page rows per shard, so freezing a page of small
items is a few writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from chalicelib.domain.runs import FrozenItem
from chalicelib.store import shards as sharding
from chalicelib.store.models import DatasetItemModel, FrozenItemModel

#: The range key prefix of a frozen page row (item ids start with their type prefix).
FROZEN_PAGE_PREFIX = "page#"
#: The range key prefix of an early-stop run's skip markers (``store.skips``), in the same
#: table and shard as the item's frozen row: one per work item not executed after the
#: decision. Not a frozen item: the readers of the set leave them out.
SKIP_PREFIX = "skip#"
#: A frozen page row closes before its items' JSON passes this (DynamoDB's limit: 400 KB).
FROZEN_PAGE_BYTES = 300 * 1024
_BATCH_GET = 100


def run_item_row(run_id: str, item: FrozenItem, shards: int = 1) -> FrozenItemModel:
    return FrozenItemModel(
        run_id=sharding.item_partition(run_id, item.dataset_item_id, shards),
        dataset_item_id=item.dataset_item_id,
        input=item.input,
        expected_output=item.expected_output,
        metadata=item.metadata,
    )


def _frozen(model: FrozenItemModel | DatasetItemModel, item_id: str) -> FrozenItem:
    return FrozenItem(
        dataset_item_id=item_id,
        input=list(model.input or []),
        expected_output=model.expected_output,
        metadata=dict(model.metadata or {}),
    )


def _page_rows(run_id: str, items: list[FrozenItem]) -> Iterator[FrozenItemModel]:
    """Rows of at most :data:`FROZEN_PAGE_BYTES` holding ``items`` (small ones), in order."""
    page: list[str] = []
    first = ""
    size = 0
    for item in items:
        encoded = item.carried() or json.dumps(item.model_dump(mode="json"))
        if page and size + len(encoded) > FROZEN_PAGE_BYTES:
            yield _page_row(run_id, first, page)
            page, size = [], 0
        if not page:
            first = item.dataset_item_id
        page.append(encoded)
        size += len(encoded) + 1
    if page:
        yield _page_row(run_id, first, page)


def _page_row(run_id: str, first_item_id: str, encoded: list[str]) -> FrozenItemModel:
    return FrozenItemModel(
        run_id=run_id,
        dataset_item_id=f"{FROZEN_PAGE_PREFIX}{first_item_id}",
        items=json.loads(f"[{','.join(encoded)}]"),
    )


def _expand(model: FrozenItemModel) -> list[FrozenItem]:
    if model.items is not None:
        return [FrozenItem.model_validate(item) for item in model.items]
    return [_frozen(model, model.dataset_item_id)]


# --- frozen item sets -------------------------------------------------------------------------


def put_run_items(
    run_id: str, items: Iterable[FrozenItem], shards: int = 1, *, packed: bool = True
) -> None:
    """Write (or rewrite, identically) frozen items; idempotent, as rows are keyed by item.

    An item too large to ride in a work message gets a row of its own, which a worker reads
    by id; the others are packed into page rows keyed by their first item (a redelivered
    fan-out page packs the same items under the same keys), one set of page rows per shard.
    ``packed=False`` gives every item its own row: an early-stop run enqueues its items in
    a shuffled order, without them, and each batch reads its items by id.
    """
    small: dict[str, list[FrozenItem]] = {}
    with FrozenItemModel.batch_write() as batch:
        for item in items:
            if not packed or item.carried() is None:
                batch.save(run_item_row(run_id, item, shards))
            else:
                key = sharding.item_partition(run_id, item.dataset_item_id, shards)
                small.setdefault(key, []).append(item)
        for key, in_shard in small.items():
            for row in _page_rows(key, in_shard):
                batch.save(row)


def iter_run_item_pages(
    run_id: str, shards: int = 1, page_size: int = 500
) -> Iterator[list[FrozenItem]]:
    """The frozen set of a run, shard after shard (not in item order: page rows hold items
    of many ids)."""
    for key in sharding.partitions(run_id, shards):
        last_key: dict[str, Any] | None = None
        while True:
            result = FrozenItemModel.query(key, limit=page_size, last_evaluated_key=last_key)
            page = [
                item
                for model in result
                if not model.dataset_item_id.startswith(SKIP_PREFIX)
                for item in _expand(model)
            ]
            if page:
                yield page
            last_key = result.last_evaluated_key
            if last_key is None:
                break


def batch_get_run_items(
    run_id: str, item_ids: Iterable[str], shards: int = 1
) -> dict[str, FrozenItem]:
    """Frozen items by id: the rows of large items; any other is looked up in the pages of
    its shard."""
    unique = list(dict.fromkeys(item_ids))
    found: dict[str, FrozenItem] = {}
    for start in range(0, len(unique), _BATCH_GET):
        keys = [
            (sharding.item_partition(run_id, item_id, shards), item_id)
            for item_id in unique[start : start + _BATCH_GET]
        ]
        for model in FrozenItemModel.batch_get(keys, consistent_read=True):
            found[model.dataset_item_id] = _frozen(model, model.dataset_item_id)
    wanted: dict[str, set[str]] = {}
    for item_id in unique:
        if item_id not in found:
            wanted.setdefault(sharding.item_partition(run_id, item_id, shards), set()).add(item_id)
    for key, in_shard in wanted.items():
        pages = FrozenItemModel.query(
            key,
            range_key_condition=FrozenItemModel.dataset_item_id.startswith(FROZEN_PAGE_PREFIX),
            consistent_read=True,
        )
        for model in pages:
            found.update(
                (i.dataset_item_id, i) for i in _expand(model) if i.dataset_item_id in in_shard
            )
    return found


def count_dataset_items(dataset_id: str, cutoff_key: str, cap: int) -> int:
    """How many of the dataset's items were created by ``cutoff_key``, counted up to about
    ``cap`` (a ``Select=COUNT`` Query per 1 MB read, stopped once past it): enough to choose
    a run's shard count without reading a large dataset whole."""
    table = DatasetItemModel._get_connection()
    counted = 0
    start: dict[str, Any] | None = None
    condition = DatasetItemModel.created_key <= cutoff_key
    while counted < cap:
        answer = table.query(
            dataset_id,
            range_key_condition=condition,
            index_name=DatasetItemModel.by_dataset.Meta.index_name,
            select="COUNT",
            exclusive_start_key=start,
        )
        counted += int(answer.get("Count", 0))
        start = answer.get("LastEvaluatedKey")
        if not start:
            break
    return counted


def dataset_items_page(
    dataset_id: str, after_key: str | None, cutoff_key: str, limit: int
) -> tuple[list[FrozenItem], str | None]:
    """Up to ``limit`` items of the dataset created after ``after_key`` and by ``cutoff_key``.

    Reads the catalog's ``by_dataset`` index by ``created_key`` range, so a fan-out can
    resume after the last item it froze, and an item created after the run started
    (beyond the cutoff) is never part of it. Returns the page and the created_key of its
    last item (None when there is nothing more).
    """
    condition = (
        DatasetItemModel.created_key.between(after_key, cutoff_key)
        if after_key
        else DatasetItemModel.created_key <= cutoff_key
    )
    items: list[FrozenItem] = []
    last_created: str | None = None
    for model in DatasetItemModel.by_dataset.query(
        dataset_id, range_key_condition=condition, limit=limit + 1
    ):
        if model.created_key == after_key:
            continue  # BETWEEN is inclusive; the cursor item was frozen by the previous page
        items.append(_frozen(model, model.id))
        last_created = model.created_key
        if len(items) == limit:
            break
    return items, last_created
