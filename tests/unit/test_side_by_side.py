"""Independent store calls run side by side, answer in order, and fail only once all ended."""

from __future__ import annotations

import threading
import time

import pytest

from chalicelib.store import side_by_side


def test_calls_overlap_and_answer_in_the_order_given() -> None:
    # Each call waits for the other: run one after another, the barrier breaks.
    barrier = threading.Barrier(2, timeout=5)

    def call(value: int) -> int:
        barrier.wait()
        return value

    assert side_by_side.run_all([lambda: call(1), lambda: call(2)]) == [1, 2]


def test_the_first_failure_is_raised_after_every_call_has_ended() -> None:
    ended: list[str] = []

    def slow() -> str:
        time.sleep(0.05)
        ended.append("slow")
        return "slow"

    def failing() -> str:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        side_by_side.run_all([failing, slow])
    assert ended == ["slow"]


def test_one_call_runs_in_the_callers_thread() -> None:
    assert side_by_side.run_all([threading.current_thread]) == [threading.current_thread()]
