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


def test_calls_made_from_the_pools_own_threads_run_there_instead_of_waiting_on_it() -> None:
    # Each outer call runs an inner batch; were the inner calls queued on the pool while
    # every pool thread waits for them, this would never end.
    def outer(n: int) -> list[int]:
        return side_by_side.run_all([lambda: n, lambda: n + 1])

    calls = [lambda n=n: outer(n) for n in range(side_by_side.MAX_CALLS * 2)]
    assert side_by_side.run_all(calls) == [[n, n + 1] for n in range(side_by_side.MAX_CALLS * 2)]
