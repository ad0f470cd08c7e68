"""The one read a work batch starts with: its run, and which of its results already exist.

Both are strongly consistent reads by key, so one BatchGetItem across the runs and
results tables serves them (a batch of 98 items costs one read instead of a GetItem
plus a BatchGetItem). Keys beyond what one request holds are read by
:func:`chalicelib.store.results.existing_keys`.
"""

from __future__ import annotations

import time
from typing import Any

from chalicelib.domain.runs import RunState
from chalicelib.store import results, runs
from chalicelib.store.base import bind, connection
from chalicelib.store.models import ResultModel, RunModel

#: BatchGetItem reads at most 100 keys; one is the run.
_RESULT_KEYS_WITH_RUN = 99
_UNPROCESSED_RETRIES = 8


def run_and_existing_results(
    run_id: str, result_keys: list[str]
) -> tuple[RunState | None, set[str]]:
    """The run (None if there is none) and which of ``result_keys`` have a result row."""
    bind()
    keys = list(dict.fromkeys(result_keys))
    first, rest = keys[:_RESULT_KEYS_WITH_RUN], keys[_RESULT_KEYS_WITH_RUN:]
    run_table, results_table = _table_name(RunModel), _table_name(ResultModel)
    request: dict[str, Any] = {run_table: {"Keys": [{"id": {"S": run_id}}], "ConsistentRead": True}}
    if first:
        request[results_table] = {
            "Keys": [{"run_id": {"S": run_id}, "result_key": {"S": k}} for k in first],
            "ConsistentRead": True,
            "ProjectionExpression": "result_key",
        }
    found = _batch_get(request)
    run_rows = found.get(run_table, [])
    state = runs.state_from_row(RunModel.from_raw_data(run_rows[0])) if run_rows else None
    existing = {row["result_key"]["S"] for row in found.get(results_table, [])}
    if rest:
        existing |= results.existing_keys(run_id, rest)
    return state, existing


def _table_name(model: type[Any]) -> str:
    meta: Any = model.Meta  # table_name is set by bind(), not declared on the class
    return str(meta.table_name)


def _batch_get(request: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every item asked for, by table, following UnprocessedKeys (throttling) with backoff."""
    client = connection().client
    found: dict[str, list[dict[str, Any]]] = {}
    for attempt in range(_UNPROCESSED_RETRIES):
        answer = client.batch_get_item(RequestItems=request)
        for table, rows in answer.get("Responses", {}).items():
            found.setdefault(table, []).extend(rows)
        request = answer.get("UnprocessedKeys") or {}
        if not request:
            return found
        time.sleep(min(0.05 * 2**attempt, 1.0))
    raise RuntimeError("BatchGetItem left keys unprocessed after retries")
