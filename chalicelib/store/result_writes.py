"""Recording results: each row created once, then counted.

A record is written in three steps, each idempotent or conditional:

1. **The result row, created only if absent** (``store.conditional_puts``: PartiQL
   INSERTs, 25 a call, each a plain write billed once, not inside a transaction). A row
   that already exists (a redelivered or concurrent duplicate) is refused and reported in
   ``duplicates``: nothing more of it is written, its blobs are removed. This condition
   alone makes a result exactly-once; the shard key depends on the item only, so a
   duplicate meets the first row (``store.shards``).
2. **The eval generation's row** for each created result: its metadata and structured
   object, not a second copy of the content the result holds (``generations.to_eval_row``);
   ``BatchWriteItem`` (keyed by the generation's own id: a rewrite is identical).
3. **The counters and the batch's usage row**, in one small ``TransactWriteItems`` with a
   ClientRequestToken derived from the rows it counts (a retry after a timeout applies
   once): on the run row, guarded as before (one shard), or on the batch's counter row
   (``store.run_counters``).

Rows before counters, so the counters never exceed the rows: a settle is never claimed
early. A process that dies between 1 and 3 leaves rows uncounted (and their usage row
unwritten): a redelivery finds the rows and skips them, and the counters are recounted
from the rows by a restart's recovery or the reaper (``engine.settle.recount``). What
this trades: two transactional puts of ~2.5 KB per item (12 write units) become one plain
put and a ~0.5 KB one (4); ``docs/scaling.md`` has the figures.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pynamodb.exceptions import TransactWriteError

from chalicelib.domain.runs import ResultRecord, result_key
from chalicelib.store import (
    blobs,
    conditional_puts,
    generations,
    run_counters,
    side_by_side,
    usage,
)
from chalicelib.store import shards as sharding
from chalicelib.store.base import serialized_writes, transact_write
from chalicelib.store.models import GenerationModel, ResultModel, RunModel
from chalicelib.store.usage_models import UsageModel

log = logging.getLogger("pawl.store.results")

#: Records counted by one counter transaction: three INSERT calls' worth. A caller
#: recording as results arrive commits at this size (the name is kept from when a commit
#: was one transaction of the rows themselves).
RECORDS_PER_TRANSACTION = 3 * conditional_puts.STATEMENTS_PER_CALL
_MAX_BYTES = 3_500_000
#: DynamoDB's limit of rows in one BatchWriteItem.
_ROWS_PER_BATCH_WRITE = 25
_CONFLICT_RETRIES = 8


@dataclass
class RecordOutcome:
    """Which records a :func:`record` call wrote, and which were already there.

    ``may_settle_run``: a commit of this call may have recorded the run's last item (its
    guard failed, or there was none), so the caller should try to claim the settle.
    """

    recorded: list[ResultRecord] = field(default_factory=list)
    duplicates: list[ResultRecord] = field(default_factory=list)
    may_settle_run: bool = False


@dataclass(frozen=True)
class RunProgress:
    """The run as the batch read it, before recording."""

    fanout_done: bool
    item_count: int


@dataclass(frozen=True)
class Counting:
    """Where a batch's results go: the run's shard count, and which counter row it adds to."""

    shards: int = 1
    counter: int = 0


@dataclass(frozen=True)
class _PreparedRecord:
    """A record's rows, serialized once (a retry reuses them)."""

    record: ResultRecord
    result_item: dict[str, Any]
    generation: GenerationModel | None
    blob_keys: list[str]
    size: int

    @property
    def key(self) -> str:
        return str(self.result_item["result_key"]["S"])


def _not_completing_the_set(progress: RunProgress | None, recording: int) -> Any:
    """A condition on the run row that holds only if recording ``recording`` more results
    certainly leaves it not fully recorded; None when that cannot be told from ``progress``.

    Before fan-out ends nothing can complete the recorded set (fan-out tries the settle
    itself as it ends); after, ``item_count`` is fixed, and the run is fully recorded when
    ``recorded_count`` reaches it.
    """
    if progress is None:
        return None
    if not progress.fanout_done:
        return RunModel.fanout_done == False  # noqa: E712 (a DynamoDB condition, not a test)
    return RunModel.recorded_count < progress.item_count - recording


def _reasons(exc: TransactWriteError) -> list[str | None]:
    """Each operation's cancellation reason code, in the order the operations were sent."""
    return [r.code if r else None for r in (getattr(exc, "cancellation_reasons", None) or [])]


def _only_guard_failed(reasons: list[str | None]) -> bool:
    # PynamoDB sends puts before updates, so the run's counter update is the last operation.
    return (
        bool(reasons)
        and reasons[-1] == "ConditionalCheckFailed"
        and "ConditionalCheckFailed" not in reasons[:-1]
    )


# --- conversion -------------------------------------------------------------------------------


def _prepare(record: ResultRecord, shards: int = 1) -> _PreparedRecord:
    """The rows of one record: the result (whole: input, output, scores) and, for an agent
    call, the generation's row without that content; a large output goes to S3 once."""
    result = record.result
    item_id = result.dataset_item_id or ""
    partition = sharding.item_partition(result.run_id, item_id, shards)
    key = result_key(item_id, result.trial)
    gen_row = (
        generations.to_eval_row(record.generation, partition, key) if record.generation else None
    )
    blob_keys = list(gen_row.blob_keys) if gen_row else []
    output, output_s3_key = result.output, None
    if blobs.should_offload(result.output, len(json.dumps(result.input))):
        assert result.output is not None
        output_s3_key = blobs.output_key(result.generation_id or result.id)
        blobs.put_text(output_s3_key, result.output)
        blob_keys.append(output_s3_key)
        output = None
    row = ResultModel(
        run_id=partition,
        result_key=key,
        id=result.id,
        eval_id=record.eval_id,
        dataset_item_id=item_id,
        trial=result.trial,
        input=result.input,
        expected_output=result.expected_output,
        output=output,
        output_s3_key=output_s3_key,
        generation_id=result.generation_id,
        scores=[s.model_dump() for s in result.scores],
        passed=result.passed,
        error=result.error.model_dump() if result.error else None,
        usage=[u.model_dump() for u in result.usage] or None,
        attempts=result.attempts,
        created_at=result.created_at,
    )
    item = row.serialize()
    generation = gen_row.model if gen_row else None
    size = len(json.dumps(item)) + (len(json.dumps(generation.serialize())) if generation else 0)
    return _PreparedRecord(record, item, generation, blob_keys, size)


# --- recording --------------------------------------------------------------------------------


def _chunks(prepared: list[_PreparedRecord]) -> Iterator[list[_PreparedRecord]]:
    chunk: list[_PreparedRecord] = []
    size = 0
    for item in prepared:
        too_many = len(chunk) + 1 > RECORDS_PER_TRANSACTION
        if chunk and (too_many or size + item.size > _MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += item.size
    if chunk:
        yield chunk


def record(
    run_id: str,
    records: list[ResultRecord],
    progress: RunProgress | None = None,
    target: Counting | None = None,
) -> RecordOutcome:
    """Record results with their generations, then count them on the run (see the module).

    A record whose result row already exists is a duplicate: nothing of it is written (its
    blobs are removed) and it is reported in ``duplicates``. Without ``progress`` every
    call may complete the recorded set.
    """
    target = target or Counting()
    outcome = RecordOutcome()
    prepared = [_prepare(r, target.shards) for r in records]
    table = ResultModel._get_connection().table_name
    for chunk in _chunks(prepared):
        try:
            created = conditional_puts.insert_many(table, [p.result_item for p in chunk])
        except conditional_puts.InsertFailed as exc:
            # Count what did land before giving up: the redelivery will skip those rows.
            landed = [chunk[i] for i in exc.created]
            if landed:
                _finish(run_id, landed, progress, target, outcome)
            raise
        for prepared_record, made in zip(chunk, created, strict=True):
            if not made:
                blobs.delete(prepared_record.blob_keys)
                outcome.duplicates.append(prepared_record.record)
        landed = [p for p, made in zip(chunk, created, strict=True) if made]
        if landed:
            _finish(run_id, landed, progress, target, outcome)
        if len(landed) < len(chunk):
            log.info("run %s: %d duplicates skipped", run_id, len(chunk) - len(landed))
    return outcome


def _finish(
    run_id: str,
    landed: list[_PreparedRecord],
    progress: RunProgress | None,
    target: Counting,
    outcome: RecordOutcome,
) -> None:
    """The generations of created results, then their count."""
    rows = [p.generation for p in landed if p.generation is not None]
    chunks = [
        rows[i : i + _ROWS_PER_BATCH_WRITE] for i in range(0, len(rows), _ROWS_PER_BATCH_WRITE)
    ]
    side_by_side.run_all([partial(_write_generations, chunk) for chunk in chunks])
    outcome.may_settle_run |= _count(run_id, landed, progress, target)
    outcome.recorded.extend(p.record for p in landed)


def _write_generations(rows: list[GenerationModel]) -> None:
    """One BatchWriteItem's worth of generation rows (keyed by their own ids: a rewrite is
    identical, so a chunk sent again after a failure changes nothing)."""
    with serialized_writes(), GenerationModel.batch_write() as batch:
        for row in rows:
            batch.save(row)


def _count(
    run_id: str, landed: list[_PreparedRecord], progress: RunProgress | None, target: Counting
) -> bool:
    """Add ``landed`` to the counters (and write the usage row) in one transaction.

    Returns whether the run may now be fully recorded: for one shard, whether the guard
    (:func:`_not_completing_the_set`) had to be dropped; for a sharded run, whether fan-out
    is done (its counter rows cannot carry the guard: the caller sums them). A
    TransactionConflict (another writer of the same row at the same moment) is retried
    with jittered backoff.
    """
    if target.shards > 1:
        guard, may_complete = None, progress is None or progress.fanout_done
    else:
        guard, may_complete = _not_completing_the_set(progress, len(landed)), False
    # Built once: a retried transaction writes the same usage row, never a second one.
    usage_row = usage.batch_row(run_id, (p.record for p in landed))
    keys = [p.key for p in landed]
    for attempt in range(_CONFLICT_RETRIES):
        flavour = "guarded" if guard is not None else "unguarded"
        try:
            _transact(run_id, landed, guard, usage_row, target, [*keys, flavour])
            return may_complete if target.shards > 1 else guard is None
        except TransactWriteError as exc:
            reasons = _reasons(exc)
            if guard is not None and _only_guard_failed(reasons):
                guard = None  # this one may record the last item: commit it unguarded
                continue
            if "TransactionConflict" in reasons and "ConditionalCheckFailed" not in reasons:
                log.info("run %s: transaction conflict, retrying (attempt %d)", run_id, attempt + 1)
                time.sleep(min(0.05 * 2**attempt, 1.0) * random.random())
                continue
            raise
    raise RuntimeError(f"run {run_id}: counting kept conflicting with other writers")


def _transact(
    run_id: str,
    landed: list[_PreparedRecord],
    guard: Any,
    usage_row: UsageModel | None,
    target: Counting,
    token_keys: list[str],
) -> None:
    counts = run_counters.tally(
        (p.record.result for p in landed),
        usage.row_cost(usage_row),
        # An early-stop run's paired counts, counted with the rows they count (invariant 3).
        (p.record.paired for p in landed),
    )
    counters = run_counters.update_of(run_id, target.shards, target.counter, counts, guard)
    puts = [usage_row.get_save_kwargs_from_instance()] if usage_row is not None else []
    transact_write(puts, [counters], token=run_counters.token_of(run_id, token_keys))
