"""Bulk import of dataset items: ``POST /api/v1/datasets/{dataset_id}/items:import``.

The body is JSON Lines: one item per line, each the body ``POST .../items`` takes (or the
same with a string ``input``: one user message), held to the very same checks
(:mod:`chalicelib.api.item_lines`: the JSON rules of :mod:`chalicelib.jsonvalues.json_input`,
the ``CreateItem`` model, the store's content size). Blank lines are skipped; line numbers
count every line of the body, from 1.

All or nothing: every line is checked before anything is written, and the items are
written in one ``TransactWriteItems`` together with the check that the dataset still
exists. One request holds at most :data:`MAX_LINES` items (DynamoDB's 100 operations per
transaction) and :func:`max_bytes` bytes; above either it is refused with 413. A refusal
for bad lines lists each bad line once (its number, the field, what is wrong with it and, for
a line that is not JSON, the parser's column), up to :data:`MAX_REPORTED_LINES`. A body of
another media type is 415, naming the ones taken. ``pawl datasets import`` sends a large
file as many requests.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import BaseModel

from chalicelib.api import item_lines
from chalicelib.api.access import on
from chalicelib.api.datasets import TAG, visible_dataset
from chalicelib.api.routing import Call, endpoint
from chalicelib.errors import PayloadTooLarge, ValidationFailed
from chalicelib.settings import get_settings
from chalicelib.store import datasets
from chalicelib.store.datasets import NewItem

bp = Blueprint(__name__)

PATH = "/api/v1/datasets/{dataset_id}/items:import"
MEDIA_TYPES = ("application/x-ndjson", "application/jsonl", "application/json")
MAX_LINES = datasets.MAX_ITEMS_PER_TRANSACTION
#: A transaction holds at most 4 MB; the body (JSON) stays well under it once stored.
MAX_TRANSACTION_BODY_BYTES = 2_000_000
MAX_REPORTED_LINES = 100


def max_bytes() -> int:
    return min(get_settings().max_body_bytes, MAX_TRANSACTION_BODY_BYTES)


class ImportResult(BaseModel):
    imported: int
    item_ids: list[str]


def _numbered_lines(raw: bytes) -> list[tuple[int, bytes]]:
    if len(raw) > max_bytes():
        raise PayloadTooLarge(
            f"an import body is at most {max_bytes()} bytes; send the rest in another request",
            limit=max_bytes(),
        )
    lines = [(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
    if not lines:
        raise ValidationFailed("the body holds no items (one JSON object per line)", field="body")
    if len(lines) > MAX_LINES:
        raise PayloadTooLarge(
            f"an import holds at most {MAX_LINES} items, this one {len(lines)}; "
            "send the rest in another request",
            limit=MAX_LINES,
        )
    return lines


def parse_lines(raw: bytes) -> list[NewItem]:
    """Every line as an item, or one refusal listing every bad line."""
    items: list[NewItem] = []
    problems: list[dict[str, Any]] = []
    lines = _numbered_lines(raw)
    for number, line in lines:
        try:
            items.append(item_lines.parse_line(line))
        except ValidationFailed as exc:
            problems.append(item_lines.problem(number, exc))
    if problems:
        first = problems[0]
        raise ValidationFailed(
            f"{len(problems)} of {len(lines)} lines are invalid, so nothing was imported; "
            f"line {first['line']}: {first['message']}",
            field="body",
            lines=problems[:MAX_REPORTED_LINES],
            invalid_line_count=len(problems),
        )
    return items


@endpoint(
    bp,
    PATH,
    "POST",
    access=on("evaluations:CreateDataset", "dataset_id"),
    raw_body=MEDIA_TYPES,
    response=ImportResult,
    status=201,
    tag=TAG,
    operation_id="importDatasetItems",
)
def import_items(call: Call[Any, Any]) -> ImportResult:
    """Add up to 99 items from JSON Lines, all or none (a string input: one user message)."""
    dataset = visible_dataset(call.caller, call.path["dataset_id"])
    items = parse_lines(call.raw_body)
    created = datasets.create_items(dataset.id, dataset.project_id, items)
    return ImportResult(imported=len(created), item_ids=[item.id for item in created])
