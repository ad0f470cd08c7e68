"""Datasets and their items.

Items are listed oldest first through the ``by_dataset`` GSI (``created_key`` =
``<timestamp>#<id>``, see :func:`chalicelib.store.project_scoped.creation_stamp`).
Deleting a dataset deletes its evals first, then its items, then the dataset row: an
interrupted delete leaves a dataset that still exists and can be deleted again, never
items or evals pointing at nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pynamodb.exceptions import DeleteError, DoesNotExist, PynamoDBException
from pynamodb.expressions.operand import Path

from chalicelib import clock, ids
from chalicelib.domain.catalog import Dataset, DatasetItem, Message
from chalicelib.errors import not_found
from chalicelib.store import item_size, names, project_scoped
from chalicelib.store.evals import delete_evals_of_dataset
from chalicelib.store.models import DatasetItemModel, DatasetModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.project_scoped import creation_stamp
from chalicelib.store.transactions import TxnRefused, conflict_on_lost_race, labelled_transaction

KIND = "dataset"
_DATASET_INDEX_KEYS = frozenset({"id", "dataset_id", "created_key"})
#: An item's own content; the rest of DynamoDB's 400 KB is room for the run and result rows
#: that copy it.
MAX_ITEM_CONTENT_BYTES = 350_000
#: TransactWriteItems holds 100 operations: the items and the dataset's existence check.
MAX_ITEMS_PER_TRANSACTION = 99
_BATCH_GET = 100
#: The largest search field an item keeps (UTF-8): with its content (at most
#: MAX_ITEM_CONTENT_BYTES) the row stays under DynamoDB's 400 KB.
SEARCH_TEXT_MAX_BYTES = 32 * 1024


class _Unset:
    """Marks a field a partial update leaves unchanged (``None`` means "set to null")."""


UNSET: Any = _Unset()


def _dataset(model: DatasetModel) -> Dataset:
    return Dataset(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        description=model.description,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_dataset(project_id: str, name: str, description: str | None) -> Dataset:
    dataset_id = ids.new_id("dataset")
    now, created_key = creation_stamp(dataset_id)
    row = DatasetModel(
        id=dataset_id,
        project_id=project_id,
        name=name,
        description=description,
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    project_scoped.create(KIND, row)
    return _dataset(row)


def get_dataset(dataset_id: str) -> Dataset:
    """The dataset, or NotFound."""
    return _dataset(project_scoped.get_or_404(DatasetModel, KIND, dataset_id))


def list_datasets(project_id: str, window: Window, name: str | None = None) -> Listing[Dataset]:
    """The project's datasets, oldest first; with ``name``, only the one of that name."""
    if name is not None:
        return project_scoped.list_named(DatasetModel, KIND, project_id, name, window, _dataset)
    return project_scoped.list_by_project(DatasetModel, project_id, window, _dataset)


def update_dataset(current: Dataset, name: str | None = None, description: Any = UNSET) -> Dataset:
    """Rename and/or re-describe; refused if the dataset changed since ``current`` was read."""
    new_name = current.name if name is None else name
    new_description = current.description if description is UNSET else description
    now = clock.now_iso()
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, new_name, previous=current.name
        ) as txn:
            txn.update(
                "dataset",
                DatasetModel(id=current.id),
                actions=[
                    DatasetModel.name.set(new_name),
                    DatasetModel.updated_at.set(now),
                    DatasetModel.description.set(new_description)
                    if new_description is not None
                    else DatasetModel.description.remove(),
                ],
                condition=DatasetModel.updated_at == current.updated_at,
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(DatasetModel, KIND, current.id) from exc
    return current.model_copy(
        update={"name": new_name, "description": new_description, "updated_at": now}
    )


def delete_dataset(current: Dataset) -> None:
    """Delete the dataset's evals, its items, then the dataset and its name claim."""
    delete_evals_of_dataset(current.id)
    for page in iter_item_pages(current.id, page_size=100):
        with DatasetItemModel.batch_write() as batch:
            for item in page:
                batch.delete(DatasetItemModel(id=item.id))
    try:
        with labelled_transaction() as txn:
            txn.delete("dataset", DatasetModel(id=current.id), condition=DatasetModel.id.exists())
            txn.release_name(current.project_id, KIND, current.name)
    except TxnRefused as exc:
        raise not_found(KIND, current.id) from exc


# --- items ------------------------------------------------------------------------------------


def _item(model: DatasetItemModel) -> DatasetItem:
    return DatasetItem(
        id=model.id,
        dataset_id=model.dataset_id,
        input=[Message(**m) for m in model.input],
        expected_output=model.expected_output,
        metadata=dict(model.metadata or {}),
        source_generation_id=model.source_generation_id,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def search_text(input: list[dict[str, Any]], expected_output: str | None) -> str | None:
    """What ``?q=`` matches case-insensitively: each input message's content and the
    expected output, one a line, case-folded (``str.casefold``, so ``Zürich`` and
    ``ZÜRICH`` match, as ``Straße`` and ``STRASSE`` do). None when it would pass
    :data:`SEARCH_TEXT_MAX_BYTES`: such an item is matched as an old one is (see
    :func:`_containing`)."""
    parts = [str(message.get("content", "")) for message in input]
    if expected_output is not None:
        parts.append(expected_output)
    text = "\n".join(parts).casefold()
    return text if len(text.encode()) <= SEARCH_TEXT_MAX_BYTES else None


def check_item_content(
    input: list[dict[str, Any]], expected: str | None, meta: dict[str, Any]
) -> None:
    """Keep room in the result rows that copy an item's content (see MAX_ITEM_CONTENT_BYTES)."""
    size = len(json.dumps([input, expected, meta]).encode())
    if size > MAX_ITEM_CONTENT_BYTES:
        fields = {"input": input, "expected_output": expected, "metadata": meta}
        raise item_size.too_large(item_size.largest_field(fields), size, MAX_ITEM_CONTENT_BYTES)


def create_item(
    dataset_id: str,
    project_id: str,
    input: list[dict[str, Any]],
    expected_output: str | None,
    metadata: dict[str, Any],
    source_generation_id: str | None = None,
) -> DatasetItem:
    """Add an item (input already validated as messages); NotFound if the dataset is gone."""
    check_item_content(input, expected_output, metadata)
    item_id = ids.new_id("dataset_item")
    now, created_key = creation_stamp(item_id)
    row = DatasetItemModel(
        id=item_id,
        dataset_id=dataset_id,
        project_id=project_id,
        input=input,
        expected_output=expected_output,
        metadata=metadata,
        source_generation_id=source_generation_id,
        search_text=search_text(input, expected_output),
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    try:
        with labelled_transaction() as txn:
            txn.save("item", row, condition=DatasetItemModel.id.does_not_exist())
            txn.check("dataset", DatasetModel, dataset_id, DatasetModel.id.exists())
    except TxnRefused as exc:
        raise not_found(KIND, dataset_id) from exc
    return _item(row)


@dataclass(frozen=True)
class NewItem:
    """One item's content, its input already validated as messages."""

    input: list[dict[str, Any]]
    expected_output: str | None
    metadata: dict[str, Any]


def create_items(dataset_id: str, project_id: str, new_items: list[NewItem]) -> list[DatasetItem]:
    """Add items in one transaction, listed in the given order: all of them or none.

    At most :data:`MAX_ITEMS_PER_TRANSACTION` (the transaction also checks that the dataset
    still exists: NotFound if it is gone, with nothing written).
    """
    if len(new_items) > MAX_ITEMS_PER_TRANSACTION:
        raise ValueError(f"at most {MAX_ITEMS_PER_TRANSACTION} items per transaction")
    for item in new_items:
        check_item_content(item.input, item.expected_output, item.metadata)
    moment = clock.now()
    rows = []
    for offset, item in enumerate(new_items):
        item_id = ids.new_id("dataset_item")
        # One microsecond apart: the items list in the order they were given.
        now, created_key = creation_stamp(item_id, moment + timedelta(microseconds=offset))
        rows.append(
            DatasetItemModel(
                id=item_id,
                dataset_id=dataset_id,
                project_id=project_id,
                input=item.input,
                expected_output=item.expected_output,
                metadata=item.metadata,
                search_text=search_text(item.input, item.expected_output),
                created_at=now,
                updated_at=now,
                created_key=created_key,
            )
        )
    try:
        with labelled_transaction() as txn:
            for row in rows:
                # Fresh random ids: no condition (the stand-in parses each one anew).
                txn.save("item", row)
            txn.check("dataset", DatasetModel, dataset_id, DatasetModel.id.exists())
    except TxnRefused as exc:
        raise not_found(KIND, dataset_id) from exc
    return [_item(row) for row in rows]


def get_item(dataset_id: str, item_id: str) -> DatasetItem:
    """The item of that dataset, or NotFound (an item of another dataset is missing too)."""
    try:
        model = DatasetItemModel.get(item_id, consistent_read=True)
    except DoesNotExist:
        raise not_found("dataset_item", item_id) from None
    if model.dataset_id != dataset_id:
        raise not_found("dataset_item", item_id)
    return _item(model)


def list_items(dataset_id: str, window: Window, text: str | None = None) -> Listing[DatasetItem]:
    """One page of the dataset's items, oldest first; ``text``: only the items whose input
    messages or expected output contain it, in any case (a filter after the key range: the
    rows it drops are still read; the cursor is bound to the text)."""
    only = _containing(text) if text else None
    items = Partition(DatasetItemModel.by_dataset, dataset_id, _DATASET_INDEX_KEYS, only=only)
    return page_of(items, window, _item)


def _containing(text: str) -> Any:
    """``contains`` on the item's case-folded search field (:func:`search_text`). An item
    without one (written before it existed, or too big to keep one) is matched as before,
    case-sensitively: ``contains`` on the expected output, and on the input as stored, a
    JSON document, in which ``text`` appears as its JSON string form does (quotes,
    backslashes and non-ASCII escaped as :func:`json.dumps` escapes them)."""
    in_json = json.dumps(text)[1:-1]
    # A bare path: the JSON attribute would serialize the text as a JSON document (quoted).
    stored_input = Path(DatasetItemModel.input.attr_name)
    case_sensitive = DatasetItemModel.expected_output.contains(text) | stored_input.contains(
        in_json
    )
    folded = DatasetItemModel.search_text.contains(text.casefold())
    return folded | (DatasetItemModel.search_text.does_not_exist() & case_sensitive)


def iter_item_pages(dataset_id: str, page_size: int = 100) -> Iterator[list[DatasetItem]]:
    """Every item of the dataset, oldest first, in pages of at most ``page_size``."""
    last_key: dict[str, Any] | None = None
    while True:
        result = DatasetItemModel.by_dataset.query(
            dataset_id, limit=page_size, last_evaluated_key=last_key
        )
        page = [_item(model) for model in result]
        if page:
            yield page
        last_key = result.last_evaluated_key
        if last_key is None:
            return


def count_items(dataset_id: str, up_to: int) -> int:
    """How many items the dataset holds, counting no further than ``up_to``."""
    if up_to <= 0:
        return 0
    # Limit makes DynamoDB stop evaluating at up_to; min() also holds where a stand-in
    # ignores Limit on a COUNT query.
    return min(up_to, int(DatasetItemModel.by_dataset.count(dataset_id, limit=up_to)))


def dataset_size(dataset_id: str) -> int:
    """How many items the dataset holds: a COUNT Query, paged 1 MB at a time (no Limit,
    which would make PynamoDB page it item by item)."""
    return int(DatasetItemModel.by_dataset.count(dataset_id))


def batch_get_items(item_ids: Iterable[str]) -> dict[str, DatasetItem]:
    """Items by id (BatchGetItem in chunks); ids that do not exist are absent."""
    unique = list(dict.fromkeys(item_ids))
    found: dict[str, DatasetItem] = {}
    for start in range(0, len(unique), _BATCH_GET):
        chunk = unique[start : start + _BATCH_GET]
        for model in DatasetItemModel.batch_get(chunk, consistent_read=True):
            found[model.id] = _item(model)
    return found


def update_item(
    current: DatasetItem,
    input: list[dict[str, Any]] | None = None,
    expected_output: Any = UNSET,
    metadata: dict[str, Any] | None = None,
) -> DatasetItem:
    """Replace the given fields of the item; NotFound if it was deleted meanwhile."""
    new_input = [m.model_dump() for m in current.input] if input is None else input
    new_expected = current.expected_output if expected_output is UNSET else expected_output
    new_metadata = current.metadata if metadata is None else metadata
    check_item_content(new_input, new_expected, new_metadata)
    now = clock.now_iso()
    model = DatasetItemModel(id=current.id)
    searched = search_text(new_input, new_expected)
    actions = [
        DatasetItemModel.search_text.set(searched)
        if searched is not None
        else DatasetItemModel.search_text.remove(),
        DatasetItemModel.input.set(new_input),
        DatasetItemModel.expected_output.set(new_expected)
        if new_expected is not None
        else DatasetItemModel.expected_output.remove(),
        DatasetItemModel.metadata.set(new_metadata),
        DatasetItemModel.updated_at.set(now),
    ]
    with conflict_on_lost_race():
        updated = model.update_if(actions, DatasetItemModel.dataset_id == current.dataset_id)
    if not updated:
        raise not_found("dataset_item", current.id)
    return _item(model)


def delete_item(dataset_id: str, item_id: str) -> None:
    try:
        DatasetItemModel(id=item_id).delete(condition=DatasetItemModel.dataset_id == dataset_id)
    except DeleteError as exc:
        if _is_condition_failure(exc):
            raise not_found("dataset_item", item_id) from exc
        raise


def _is_condition_failure(exc: PynamoDBException) -> bool:
    return exc.cause_response_code == "ConditionalCheckFailedException"
