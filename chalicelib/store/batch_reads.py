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
from chalicelib.store import results, run_counters, runs
from chalicelib.store.base import bind, connection
from chalicelib.store.models import ResultModel, RunModel

#: BatchGetItem reads at most 100 keys; one is the run.
_RESULT_KEYS_WITH_RUN = 99
_UNPROCESSED_RETRIES = 8


def run_and_existing_results(
    run_id: str, result_keys: list[str], shards: int = 1
) -> tuple[RunState | None, set[str]]:
    """The run (None if there is none) and which of ``result_keys`` have a result row.

    ``shards``: the run's shard count as the work message said; a sharded run's counter
    rows are read in the same request. When the run row says otherwise (a message from
    before the run was sharded cannot exist, but a hand-made one can), the results are
    looked up again under the run's own keys.
    """
    bind()
    keys = list(dict.fromkeys(result_keys))
    counter_keys = run_counters.counter_row_keys(run_id, shards)
    room = _RESULT_KEYS_WITH_RUN - len(counter_keys)
    first, rest = keys[:room], keys[room:]
    run_table, results_table = _table_name(RunModel), _table_name(ResultModel)
    run_keys = [{"id": {"S": run_id}}, *counter_keys]
    request: dict[str, Any] = {run_table: {"Keys": run_keys, "ConsistentRead": True}}
    if first:
        request[results_table] = {
            "Keys": [_key(*results.row_key(run_id, k, shards)) for k in first],
            "ConsistentRead": True,
            "ProjectionExpression": "result_key",
        }
    found = _batch_get(request)
    run_rows = {row["id"]["S"]: row for row in found.get(run_table, [])}
    if run_id not in run_rows:
        return None, set()
    model = RunModel.from_raw_data(run_rows.pop(run_id))
    existing = {row["result_key"]["S"] for row in found.get(results_table, [])}
    if rest:
        existing |= results.existing_keys(run_id, rest, shards)
    actual = runs.shard_count_of(model)
    if actual != shards:
        existing = results.existing_keys(run_id, keys, actual)
        return runs.find_run(run_id), existing
    sums = None
    if runs.needs_counter_rows(model):
        sums = run_counters.Sums()
        for row in run_rows.values():
            run_counters.add_row(sums, row)
    return runs.state_from_row(model, sums), existing


def _key(hash_key: str, range_key: str) -> dict[str, Any]:
    return {"run_id": {"S": hash_key}, "result_key": {"S": range_key}}


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
