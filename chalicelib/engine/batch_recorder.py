"""Record a batch's results while it executes, so a running run shows its progress.

A batch (up to 90 work items) lasts as long as its waves of agent calls. Recorded in one
transaction at its end, it left the run's ``completed_count``, ``errored_count`` and
results at 0 for as long, then jumped by a batch. A :class:`BatchRecorder` takes each
record as its item finishes and, from a thread of its own, commits what is pending as
soon as the oldest pending record has waited ``PAWL_PROGRESS_FLUSH_S`` (0.5 s), or a full
transaction's worth is pending, and what is left when the batch ends. A record is visible
within that interval plus one transaction of its item finishing.

Each commit is one ``store.results.record`` call, so nothing of invariants 2-4 changes:
every result is a conditional create, the counters move in the same transaction as the
results, and the counter update carries the settle guard built from the run as the batch
read it (the guard depends only on the fixed item count, not on what earlier commits
added). The caller claims the settle once, after the last commit, if any commit may have
completed the set. What it costs: a batch that finishes within the interval commits
exactly as before; a longer one commits at most once more per interval.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from types import TracebackType

from chalicelib.domain.runs import ResultRecord
from chalicelib.settings import get_settings
from chalicelib.store import results

log = logging.getLogger("pawl.engine.batch_recorder")


def records_due(pending: int, waited_s: float, *, closing: bool, full: int, after_s: float) -> int:
    """How many of ``pending`` records (the oldest waited ``waited_s``) to commit now.

    All of them once the oldest has waited ``after_s`` or the batch is over; before that,
    only whole transactions' worth (``full`` each), so a fast batch commits no more
    transactions than it would at its end.
    """
    if pending == 0:
        return 0
    if closing or waited_s >= after_s:
        return pending
    return (pending // full) * full


def wait_before_due(pending: int, waited_s: float, *, after_s: float) -> float | None:
    """How long until the pending records are due by age (None: until a record comes)."""
    if pending == 0:
        return None
    return max(0.0, after_s - waited_s)


class BatchRecorder:
    """Commits a batch's records in chunks as they arrive (thread-safe ``add``).

    Use as a context manager around the batch's execution; :meth:`close` commits what is
    left and returns what every commit recorded, or raises the first commit's error (the
    records not committed by then are not written; the batch reports them for
    redelivery, and the redelivery acknowledges those that were).
    """

    def __init__(
        self,
        run_id: str,
        progress: results.RunProgress,
        *,
        flush_after_s: float | None = None,
        full: int = results.RECORDS_PER_TRANSACTION,
        shards: int = 1,
    ) -> None:
        self.run_id = run_id
        # A sharded run's counters: this batch adds to one counter row, chosen at random,
        # so concurrent batches of the run spread over them (store.run_counters).
        self.target = results.Counting(shards, random.randrange(shards) if shards > 1 else 0)
        self.progress = progress
        self.flush_after_s = (
            get_settings().progress_flush_s if flush_after_s is None else flush_after_s
        )
        self.full = full
        self.commits = 0
        #: (when it arrived, the record), oldest first.
        self._pending: list[tuple[float, ResultRecord]] = []
        self._closing = False
        self._error: BaseException | None = None
        self._outcome = results.RecordOutcome()
        self._changed = threading.Condition()
        self._thread = threading.Thread(
            target=self._commit_loop, name=f"pawl-record-{run_id}", daemon=True
        )

    def __enter__(self) -> BatchRecorder:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop()  # after close() a no-op; after a failure, commits what finished

    def add(self, record: ResultRecord) -> None:
        with self._changed:
            self._pending.append((time.monotonic(), record))
            self._changed.notify()

    def close(self) -> results.RecordOutcome:
        """Commit what is pending, stop, and return what was recorded (or raise)."""
        self._stop()
        if self._error is not None:
            raise self._error
        return self._outcome

    def _stop(self) -> None:
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()

    def _next_chunk(self) -> list[ResultRecord] | None:
        """Wait until records are due and take them; None once closed with nothing left."""
        with self._changed:
            while True:
                pending = len(self._pending)
                waited = time.monotonic() - self._pending[0][0] if pending else 0.0
                due = records_due(
                    pending,
                    waited,
                    closing=self._closing,
                    full=self.full,
                    after_s=self.flush_after_s,
                )
                if due:
                    chunk, self._pending = self._pending[:due], self._pending[due:]
                    return [record for _, record in chunk]
                if self._closing:
                    return None
                self._changed.wait(wait_before_due(pending, waited, after_s=self.flush_after_s))

    def _commit_loop(self) -> None:
        while (chunk := self._next_chunk()) is not None:
            if self._error is not None:
                continue  # a commit failed: write nothing more (the batch reports it)
            try:
                outcome = results.record(self.run_id, chunk, self.progress, self.target)
            except Exception as exc:
                log.warning("run %s: recording %d results failed", self.run_id, len(chunk))
                self._error = exc
                continue
            self.commits += 1
            self._outcome.recorded += outcome.recorded
            self._outcome.duplicates += outcome.duplicates
            self._outcome.may_settle_run |= outcome.may_settle_run
