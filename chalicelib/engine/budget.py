"""The spend guard: a run with ``max_cost_usd`` stops starting items once it is spent.

The run row's ``spent_usd`` is added to in the transaction that records each batch's
results, so it is exact whatever the number of workers. A batch starts from the spend
the run had when the batch read it and adds what its own items spend as they finish;
before starting an item it checks the two. Items already executing when the budget is
reached finish and are recorded (their spend counts); an item not started is recorded
as errored with ``BUDGET_EXCEEDED``, so the run still becomes fully recorded, settles
once through the usual claim, and settles ``failed`` with that code (see
``engine.settle``). The overshoot is at most what the items in flight at that moment
spend: the run's ``max_concurrency`` per worker.
"""

from __future__ import annotations

import threading

from chalicelib.domain.runs import ResultRecord


def record_cost(record: ResultRecord) -> float:
    return sum(entry.cost_usd for entry in record.result.usage)


class Budget:
    """One batch's view of its run's spend (shared by the batch's item threads)."""

    def __init__(self, limit_usd: float | None, spent_usd: float) -> None:
        self.limit_usd = limit_usd
        self._spent = spent_usd
        self._lock = threading.Lock()

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def charge(self, record: ResultRecord) -> None:
        cost = record_cost(record)
        with self._lock:
            self._spent += cost

    def refusal(self) -> str:
        """The message an item that was not started carries."""
        return (
            f"Not started: the run's spend (${self.spent_usd:.6f}) reached its max_cost_usd "
            f"(${self.limit_usd})"
        )
