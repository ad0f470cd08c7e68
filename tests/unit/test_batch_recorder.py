"""When a batch's pending records are committed (pure)."""

from __future__ import annotations

import pytest

from chalicelib.engine.batch_recorder import records_due, wait_before_due

FULL, AFTER = 49, 0.5


@pytest.mark.parametrize(
    ("pending", "waited", "closing", "due"),
    [
        (0, 9.0, True, 0),  # nothing to commit, even at the end
        (3, 0.1, False, 0),  # young and few: wait for more
        (3, 0.5, False, 3),  # the oldest waited long enough: all of them
        (60, 9.0, False, 60),
        (49, 0.0, False, 49),  # a whole transaction's worth goes at once
        (60, 0.1, False, 49),  # only whole transactions before the wait is over
        (98, 0.1, False, 98),
        (3, 0.0, True, 3),  # the batch is over: everything left
    ],
)
def test_records_due(pending: int, waited: float, closing: bool, due: int) -> None:
    assert records_due(pending, waited, closing=closing, full=FULL, after_s=AFTER) == due


def test_wait_before_due() -> None:
    assert wait_before_due(0, 0.0, after_s=AFTER) is None  # until a record arrives
    assert wait_before_due(2, 0.2, after_s=AFTER) == pytest.approx(0.3)
    assert wait_before_due(2, 0.9, after_s=AFTER) == 0.0
