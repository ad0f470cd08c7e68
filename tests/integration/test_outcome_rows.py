"""Settle's lean readers return what the model readers would, page after page.

Rows are written through the PynamoDB models (as the engine writes them) and read back
through ``store.outcome_rows``: result outcomes across several 1 MB Query pages, and
item metadata across several BatchGetItems with deleted items left out.
"""

from __future__ import annotations

from typing import Any

from chalicelib.store import outcome_rows
from chalicelib.store.base import connection
from chalicelib.store.models import DatasetItemModel, ResultModel

#: Each row carries ~3 KB of input, so 600 rows span two 1 MB Query pages.
ROWS = 600
PADDING = "x" * 3000


def _result(run_id: str, n: int, trial: int) -> ResultModel:
    errored = n % 7 == 0
    return ResultModel(
        run_id=run_id,
        result_key=f"dsit_{n:05d}#{trial:02d}",
        id=f"evres_{n}_{trial}",
        eval_id="eval_x",
        dataset_item_id=f"dsit_{n:05d}",
        trial=trial,
        input=[{"role": "user", "content": PADDING}],
        scores=[] if errored else [{"scorer": "contains", "score": 0.5, "passed": n % 2 == 0}],
        passed=None if errored else n % 2 == 0,
        error={"code": "AGENT_TIMEOUT", "message": "timed out"} if errored else None,
        usage=[{"source": "eval", "input_tokens": n, "output_tokens": 1}] if n % 3 else None,
        created_at="2026-12-01T00:00:00Z",
    )


def test_outcome_rows_stream_every_page_in_key_order(aws_env: None) -> None:
    with ResultModel.batch_write() as batch:
        for n in range(ROWS // 2):
            for trial in (1, 2):
                batch.save(_result("evrun_a", n, trial))
        batch.save(_result("evrun_b", 1, 1))  # another run's row is not read
    pages: list[Any] = []
    connection().client.meta.events.register(
        "before-call.dynamodb.Query", lambda **kwargs: pages.append(kwargs)
    )

    rows = list(outcome_rows.iter_outcome_rows("evrun_a"))

    assert len(pages) >= 2, "the run should span more than one Query page"
    assert [(r.dataset_item_id, r.trial) for r in rows] == [
        (f"dsit_{n:05d}", trial) for n in range(ROWS // 2) for trial in (1, 2)
    ]
    for row in rows:
        n = int(row.dataset_item_id.removeprefix("dsit_"))
        assert row.errored == (n % 7 == 0)
        expected_scores = (
            [] if row.errored else [{"scorer": "contains", "score": 0.5, "passed": n % 2 == 0}]
        )
        assert row.scores == expected_scores
        expected_usage = [{"source": "eval", "input_tokens": n, "output_tokens": 1}]
        assert row.usage == (expected_usage if n % 3 else [])


def test_metadata_is_read_in_pages_and_deleted_items_are_absent(aws_env: None) -> None:
    ids = [f"dsit_{n:05d}" for n in range(250)]
    with DatasetItemModel.batch_write() as batch:
        for n, item_id in enumerate(ids):
            if n % 50 == 0:
                continue  # never written: a deleted item
            batch.save(
                DatasetItemModel(
                    id=item_id,
                    dataset_id="dset_x",
                    project_id="proj_x",
                    input=[{"role": "user", "content": "hi"}],
                    metadata={"kind": f"k{n % 4}"} if n % 5 else {},
                    created_at="2026-12-01T00:00:00Z",
                    updated_at="2026-12-01T00:00:00Z",
                    created_key=f"2026-12-01T00:00:00Z#{item_id}",
                )
            )
    calls: list[Any] = []
    connection().client.meta.events.register(
        "before-call.dynamodb.BatchGetItem", lambda **kwargs: calls.append(kwargs)
    )

    found = outcome_rows.batch_get_metadata([*ids, ids[1]])  # a repeated id is read once

    assert len(calls) == 3  # 250 ids in pages of 100
    assert set(found) == {item_id for n, item_id in enumerate(ids) if n % 50}
    assert found["dsit_00001"] == {"kind": "k1"}
    assert found["dsit_00005"] == {}
