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
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from chalicelib.store.models import DatasetItemModel, ResultModel

#: The attributes a settle reads of each result row (never input or output).
OUTCOME_ATTRIBUTES = ["dataset_item_id", "trial", "scores", "error", "usage"]
#: Items whose metadata one BatchGetItem reads (DynamoDB's limit).
METADATA_PAGE = 100
_METADATA_ATTRIBUTES = ["id", "metadata"]


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


def iter_outcome_pages(run_id: str) -> Iterator[list[OutcomeRow]]:
    """Every result of a run in key order (item, then trial), a Query page at a time."""
    table = ResultModel._get_connection()
    start_key: dict[str, Any] | None = None
    while True:
        page = table.query(
            run_id,
            consistent_read=True,
            attributes_to_get=OUTCOME_ATTRIBUTES,
            exclusive_start_key=start_key,
        )
        yield [_row(item) for item in page.get("Items", [])]
        start_key = page.get("LastEvaluatedKey")
        if not start_key:
            return


def iter_outcome_rows(run_id: str) -> Iterator[OutcomeRow]:
    """Every result of a run in key order, one page in memory at a time."""
    for page in iter_outcome_pages(run_id):
        yield from page


def batch_get_metadata(item_ids: Iterable[str]) -> dict[str, dict[str, Any] | None]:
    """Items' current ``metadata`` by id, in BatchGetItems of :data:`METADATA_PAGE`;
    an id that does not exist (a deleted item) is absent."""
    table = DatasetItemModel._get_connection()
    unique = list(dict.fromkeys(item_ids))
    found: dict[str, dict[str, Any] | None] = {}
    for start in range(0, len(unique), METADATA_PAGE):
        keys: list[Any] = [{"id": item_id} for item_id in unique[start : start + METADATA_PAGE]]
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
