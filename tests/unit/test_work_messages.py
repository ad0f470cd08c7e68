"""Work messages carry up to ten work items of one run, within SQS's size limits."""

from __future__ import annotations

import json

from chalicelib.domain.runs import INLINE_ITEM_BYTES, FrozenItem, WorkItem
from chalicelib.engine import messages


def _item(n: int, size: int = 10) -> FrozenItem:
    return FrozenItem(
        dataset_item_id=f"dsit_{n:04d}",
        input=[{"role": "user", "content": "x" * size}],
        expected_output="ok",
    )


def test_ten_work_items_to_a_message_in_order() -> None:
    work = list(messages.item_work([_item(n) for n in range(12)], trials=2))
    encoded = list(messages.work_messages("evrun_1", work))
    assert [count for _, count in encoded] == [10, 10, 4]
    decoded = [w for body, _ in encoded for w in messages.decode_work(body)]
    assert [(w.dataset_item_id, w.trial) for w in decoded] == [
        (item.dataset_item_id, trial) for item, trial in work
    ]
    assert all(w.run_id == "evrun_1" and w.item is not None for w in decoded)
    assert decoded[0].item == _item(0)


def test_a_message_closes_before_its_byte_budget_and_large_items_ride_by_id() -> None:
    mid = [_item(n, size=9_000) for n in range(4)]  # ~9 KB each: two to a message
    large = _item(99, size=INLINE_ITEM_BYTES + 1)
    encoded = list(messages.work_messages("evrun_1", [(i, 1) for i in [*mid, large]]))
    assert all(len(body) <= messages.MESSAGE_BYTES for body, _ in encoded)
    # The large item rides as a reference only: small enough to join the last message.
    assert [count for _, count in encoded] == [2, 3]
    by_id = messages.decode_work(encoded[-1][0])[-1]
    assert by_id.item is None and by_id.dataset_item_id == large.dataset_item_id
    assert "item" not in json.loads(encoded[-1][0])["work"][-1]


def test_a_single_item_body_of_an_earlier_release_still_decodes() -> None:
    body = WorkItem(run_id="evrun_1", dataset_item_id="dsit_1", trial=2).model_dump_json()
    [work] = messages.decode_work(body)
    assert (work.run_id, work.dataset_item_id, work.trial, work.item) == (
        "evrun_1",
        "dsit_1",
        2,
        None,
    )
