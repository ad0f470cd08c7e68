"""Eval results: one row per (run, item, trial), and the transaction that records them.

A result row is created with "must not exist", never overwritten, and its generation and
the run's counters are written in the same ``TransactWriteItems``: the counters always
match the rows (``completed + errored == rows``), and a late duplicate changes nothing.
A whole batch is recorded in one transaction (one counter update); only when a duplicate
makes it fail are the records retried one at a time, so the duplicate alone is dropped.

Given the run's progress as the batch read it, the counter update also carries a guard
that holds only while the run cannot be fully recorded by this transaction (fan-out still
running, or the count staying below the item count). While it holds, the worker knows
without another call that there is no settle to claim; when it fails, the same writes
are committed without it and the caller tries the claim.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import TransactWriteError

from chalicelib.domain.runs import (
    EvalResult,
    RecordedError,
    ResultRecord,
    RunState,
    ScoreEntry,
    UsageEntry,
    result_key,
)
from chalicelib.store import blobs, generations, run_counters, runs, usage
from chalicelib.store import shards as sharding
from chalicelib.store.base import serialized_writes, transact_write
from chalicelib.store.models import ResultModel, RunModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.sharded_query import MergedPartitions
from chalicelib.store.usage_models import UsageModel

log = logging.getLogger("pawl.store.results")

_RESULT_KEYS = frozenset({"run_id", "result_key"})
_BATCH_GET = 100
#: TransactWriteItems accepts 100 operations and 4 MB. A chunk of 49 records is 98 puts,
#: the usage row and the counter update: exactly 100, so metering costs no extra call.
_TXN_MAX_OPS = 100
#: Records that fill one transaction (a result and a generation each, beside the usage row
#: and the counter update): a caller recording as results arrive commits at this size.
RECORDS_PER_TRANSACTION = (_TXN_MAX_OPS - 2) // 2
_TXN_MAX_BYTES = 3_500_000
_CONFLICT_RETRIES = 8
#: What outcome readers read of a result: enough for the statistics, nothing of the content.
OUTCOME_ATTRIBUTES = [
    "run_id",
    "result_key",
    "dataset_item_id",
    "trial",
    "scores",
    "passed",
    "error",
    "usage",
]


@dataclass
class RecordOutcome:
    """Which records a :func:`record` call wrote, and which were already there.

    ``may_settle_run``: a transaction of this call may have recorded the run's last item
    (its guard failed, or there was none), so the caller should try to claim the settle.
    """

    recorded: list[ResultRecord] = field(default_factory=list)
    duplicates: list[ResultRecord] = field(default_factory=list)
    may_settle_run: bool = False


@dataclass(frozen=True)
class RunProgress:
    """The run as the batch read it, before recording."""

    fanout_done: bool
    item_count: int


def _not_completing_the_set(progress: RunProgress | None, recording: int) -> Any:
    """A condition on the run row that holds only if recording ``recording`` more results
    certainly leaves it not fully recorded; None when that cannot be told from ``progress``.

    Before fan-out ends nothing can complete the recorded set (fan-out tries the settle itself as it
    ends); after, ``item_count`` is fixed, and the run is fully recorded when
    ``recorded_count`` reaches it.
    """
    if progress is None:
        return None
    if not progress.fanout_done:
        return RunModel.fanout_done == False  # noqa: E712 (a DynamoDB condition, not a test)
    return RunModel.recorded_count < progress.item_count - recording


@dataclass(frozen=True)
class _PreparedRecord:
    """A record's rows, serialized once into the puts of a transaction (a retry reuses them)."""

    record: ResultRecord
    puts: list[dict[str, Any]]
    blob_keys: list[str]
    size: int


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
    """Rows for one record; a large output goes to S3 once, shared by result and generation."""
    gen_row = generations.to_row(record.generation) if record.generation else None
    blob_keys = list(gen_row.blob_keys) if gen_row else []
    result = record.result
    output, output_s3_key = result.output, None
    if gen_row and gen_row.model.output_s3_key and result.output is not None:
        output, output_s3_key = None, gen_row.model.output_s3_key
    elif blobs.should_offload(result.output, len(json.dumps(result.input))):
        assert result.output is not None
        output_s3_key = blobs.output_key(result.generation_id or result.id)
        blobs.put_text(output_s3_key, result.output)
        blob_keys.append(output_s3_key)
        output = None
    row = ResultModel(
        run_id=sharding.item_partition(result.run_id, result.dataset_item_id or "", shards),
        result_key=result_key(result.dataset_item_id or "", result.trial),
        id=result.id,
        eval_id=record.eval_id,
        dataset_item_id=result.dataset_item_id or "",
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
    puts = [row.get_save_kwargs_from_instance(condition=ResultModel.result_key.does_not_exist())]
    if gen_row is not None:
        puts.append(gen_row.model.get_save_kwargs_from_instance())
    size = sum(len(json.dumps(put["Item"])) for put in puts)
    return _PreparedRecord(record, puts, blob_keys, size)


def from_model(model: ResultModel, with_output: bool = True) -> EvalResult:
    output = model.output
    if output is None and model.output_s3_key and with_output:
        output = blobs.get_text(model.output_s3_key)
    return EvalResult(
        id=model.id,
        run_id=sharding.run_id_of(model.run_id),
        dataset_item_id=model.dataset_item_id,
        trial=int(model.trial or 1),
        input=list(model.input or []),
        expected_output=model.expected_output,
        output=output,
        generation_id=model.generation_id,
        scores=[ScoreEntry.model_validate(s) for s in model.scores or []],
        passed=model.passed,
        error=RecordedError.model_validate(model.error) if model.error else None,
        usage=[UsageEntry.model_validate(u) for u in model.usage or []],
        attempts=int(model.attempts) if model.attempts is not None else None,
        created_at=model.created_at,
    )


# --- recording --------------------------------------------------------------------------------


def _commit(
    run_id: str, records: list[_PreparedRecord], progress: RunProgress | None, target: Counting
) -> bool:
    """One transaction: every result (if absent), its generation, one counter update.

    Returns whether the run may now be fully recorded (see :func:`_not_completing_the_set`).
    Retries a TransactionConflict (another worker's transaction on the run row at the
    same moment) with jittered backoff; raises anything else.
    """
    may_complete = False
    if target.shards > 1:
        # Counter rows cannot carry the guard: the caller sums them once fan-out is done.
        guard = None
        may_complete = progress is None or progress.fanout_done
    else:
        guard = _not_completing_the_set(progress, len(records))
    # Built once: a retried transaction writes the same usage row, never a second one.
    usage_row = usage.batch_row(run_id, (p.record for p in records))
    for attempt in range(_CONFLICT_RETRIES):
        try:
            _transact(run_id, records, guard, usage_row, target)
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
    raise RuntimeError(f"run {run_id}: recording kept conflicting with other writers")


def _transact(
    run_id: str,
    records: list[_PreparedRecord],
    guard: Any,
    usage_row: UsageModel | None,
    target: Counting,
) -> None:
    counts = run_counters.tally((p.record.result for p in records), usage.row_cost(usage_row))
    counters = run_counters.update_of(run_id, target.shards, target.counter, counts, guard)
    puts = [put for prepared in records for put in prepared.puts]
    if usage_row is not None:
        puts.append(usage_row.get_save_kwargs_from_instance())
    transact_write(puts, [counters])


def _usage_bytes(chunk: list[_PreparedRecord], item: _PreparedRecord) -> int:
    """A generous bound on the chunk's usage row if ``item`` joins it."""
    entries = sum(len(p.record.result.usage) for p in chunk) + len(item.record.result.usage)
    return 400 * entries


def _chunks(prepared: list[_PreparedRecord]) -> Iterator[list[_PreparedRecord]]:
    chunk: list[_PreparedRecord] = []
    size = 0
    for item in prepared:
        # Per record a result and a generation; per chunk a usage row and the counters.
        too_many = len(chunk) + 1 > RECORDS_PER_TRANSACTION
        if chunk and (too_many or size + item.size + _usage_bytes(chunk, item) > _TXN_MAX_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += item.size
    if chunk:
        yield chunk


def _is_duplicate(exc: TransactWriteError) -> bool:
    return "ConditionalCheckFailed" in _reasons(exc)


@dataclass(frozen=True)
class Counting:
    """Where a batch's results go: the run's shard count, and which counter row it adds to."""

    shards: int = 1
    counter: int = 0


def record(
    run_id: str,
    records: list[ResultRecord],
    progress: RunProgress | None = None,
    target: Counting | None = None,
) -> RecordOutcome:
    """Record results with their generations and count them on the run, atomically.

    A record whose result row already exists is a duplicate: nothing of it is written
    (its blobs are removed) and it is reported in ``duplicates``. Without ``progress``
    every call may complete the recorded set.
    """
    target = target or Counting()
    outcome = RecordOutcome()
    prepared = [_prepare(r, target.shards) for r in records]
    for chunk in _chunks(prepared):
        try:
            outcome.may_settle_run |= _commit(run_id, chunk, progress, target)
            outcome.recorded.extend(p.record for p in chunk)
            continue
        except TransactWriteError as exc:
            if not _is_duplicate(exc):
                raise
            log.info(
                "run %s: a duplicate in a batch of %d; recording one by one", run_id, len(chunk)
            )
        for single in chunk:  # a duplicate in the chunk: find it by recording one at a time
            try:
                outcome.may_settle_run |= _commit(run_id, [single], progress, target)
                outcome.recorded.append(single.record)
            except TransactWriteError as exc:
                if not _is_duplicate(exc):
                    raise
                blobs.delete(single.blob_keys)
                outcome.duplicates.append(single.record)
    return outcome


# --- reading ----------------------------------------------------------------------------------


def row_key(run_id: str, key: str, shards: int) -> tuple[str, str]:
    """The (hash key, range key) of a result row by its result key (``<item>#<trial>``)."""
    item_id = key.rpartition("#")[0]
    return sharding.item_partition(run_id, item_id, shards), key


def existing_keys(run_id: str, result_keys: Iterable[str], shards: int = 1) -> set[str]:
    """Which of these result keys already have a row (one BatchGetItem per 100)."""
    unique = list(dict.fromkeys(result_keys))
    found: set[str] = set()
    for start in range(0, len(unique), _BATCH_GET):
        keys = [row_key(run_id, k, shards) for k in unique[start : start + _BATCH_GET]]
        for model in ResultModel.batch_get(
            keys, consistent_read=True, attributes_to_get=["run_id", "result_key"]
        ):
            found.add(model.result_key)
    return found


@dataclass(frozen=True)
class _RunResults(Partition):
    """A run's result rows, counted by the run's own counters (no COUNT query)."""

    recorded: int = 0

    def count(self) -> int:
        return self.recorded


@dataclass(frozen=True)
class _FilteredResults(Partition):
    """A run's result rows of one outcome (a filter after the key range: each page reads and
    bills the rows the filter drops), or of one item (a key range). Counted by the run's
    outcome counter when it has one, else by a COUNT query over the run's rows."""

    counted: int | None = None

    def count(self) -> int:
        return self.counted if self.counted is not None else super().count()


#: ``?outcome=``: which result rows each outcome is. An errored result has an error and no
#: pass; a scored one has no error and a pass (``passed`` null: no scorer decided).
OUTCOMES = ("passed", "failed", "errored")


def _outcome_condition(outcome: str) -> Any:
    if outcome == "errored":
        return ResultModel.error.exists()
    if outcome == "passed":
        return ResultModel.passed == True  # noqa: E712 (a PynamoDB condition, not a test)
    if outcome == "failed":
        return ResultModel.passed == False  # noqa: E712
    raise ValueError(f"unknown outcome {outcome!r}")


def list_results(
    run: RunState, window: Window, outcome: str | None = None, item_id: str | None = None
) -> Listing[EvalResult]:
    """One page of a run's results, in item then trial order, outputs read back whole.

    The total is the run's ``completed_count + errored_count`` (with ``outcome``, that
    outcome's counter), which the recording transaction keeps equal to its result rows.
    ``outcome``: only the rows of that outcome (:data:`OUTCOMES`); ``item_id``: only that
    dataset item's trials (a range of the run's keys, read alone). The cursor is bound to
    both.
    """
    only = _outcome_condition(outcome) if outcome is not None else None
    recorded = run.run.completed_count + run.run.errored_count
    if run.shards > 1 and item_id is None:
        # Every shard, merged in item order (store.sharded_query).
        counted = recorded if outcome is None else None
        if outcome is not None and run.outcome_counts is not None:
            counted = run.outcome_counts[outcome]
        merged = MergedPartitions(
            ResultModel,
            tuple(sharding.partitions(run.id, run.shards)),
            "result_key",
            only=only,
            counted=counted,
        )
        return page_of(merged, window, from_model)
    # One hash key: the run's own, or the one shard an item's trials all live in.
    hash_key = sharding.item_partition(run.id, item_id, run.shards) if item_id else run.id
    if outcome is not None or item_id is not None:
        within = ResultModel.result_key.startswith(f"{item_id}#") if item_id else None
        counted = None
        if outcome is not None and item_id is None and run.outcome_counts is not None:
            counted = run.outcome_counts[outcome]
        filtered = _FilteredResults(
            ResultModel,
            hash_key,
            _RESULT_KEYS,
            consistent=True,
            only=only,
            within=within,
            counted=counted,
        )
        return page_of(filtered, window, from_model)
    rows = _RunResults(ResultModel, run.id, _RESULT_KEYS, consistent=True, recorded=recorded)
    return page_of(rows, window, from_model)


def iter_rows(
    run_id: str, shards: int, attributes: list[str] | None = None, *, consistent: bool = True
) -> Iterator[ResultModel]:
    """Every result row of a run as models, in key order (item, then trial): the shards'
    queries read side by side and merged. ``attributes``: a projection (None: all)."""
    streams = [
        ResultModel.query(key, consistent_read=consistent, attributes_to_get=attributes)
        for key in sharding.partitions(run_id, shards)
    ]
    if len(streams) == 1:
        return iter(streams[0])
    pages = [sharding.paged(iter(stream), 500) for stream in streams]
    return sharding.merge_sorted(sharding.read_ahead_each(pages), key=lambda m: m.result_key)


def iter_scored(run_id: str, shards: int | None = None) -> Iterator[EvalResult]:
    """Every result of a run in key order, without content, with each result's generation
    id and creation time (what ``/v2`` events and summaries need). Settle reads leaner
    rows (:mod:`chalicelib.store.outcome_rows`). ``shards``: the run's (None: read it)."""
    wanted = [*OUTCOME_ATTRIBUTES, "generation_id", "created_at"]
    count = shards if shards is not None else runs.read_shards(run_id)
    for model in iter_rows(run_id, count, wanted):
        yield _without_content(
            model, generation_id=model.generation_id, created_at=model.created_at
        )


def _without_content(
    model: ResultModel, *, generation_id: str | None = None, created_at: str = ""
) -> EvalResult:
    """A result read with only its outcome attributes (``OUTCOME_ATTRIBUTES``), as a domain
    object: no id, input or output; what was not read is passed in or left empty."""
    return EvalResult(
        id="",
        run_id=sharding.run_id_of(model.run_id),
        dataset_item_id=model.dataset_item_id,
        trial=int(model.trial or 1),
        input=[],
        generation_id=generation_id,
        scores=[ScoreEntry.model_validate(s) for s in model.scores or []],
        passed=model.passed,
        error=RecordedError.model_validate(model.error) if model.error else None,
        usage=[UsageEntry.model_validate(u) for u in model.usage or []],
        created_at=created_at,
    )


def iter_result_keys(run_id: str, shards: int | None = None) -> Iterator[str]:
    """Every result key of a run, in order (recovery merges it with the frozen item set).
    ``shards``: the run's (None: read it)."""
    count = shards if shards is not None else runs.read_shards(run_id)
    for model in iter_rows(run_id, count, ["run_id", "result_key"], consistent=False):
        yield model.result_key


def count_rows(run_id: str, shards: int) -> dict[str, float]:
    """The counters as the run's result rows add them up (``run_counters.COUNTER_NAMES``;
    ``spent_usd`` left at 0): what a recount compares the counters with."""
    counts = dict.fromkeys(run_counters.COUNTER_NAMES, 0.0)
    for model in iter_rows(run_id, shards, ["run_id", "result_key", "passed", "error"]):
        counts["errored_count" if model.error is not None else "completed_count"] += 1
        counts["recorded_count"] += 1
        if model.passed is True:
            counts["passed_count"] += 1
        elif model.passed is False:
            counts["failed_count"] += 1
    return counts


def get_many(
    wanted: list[tuple[str, str]], shards: dict[str, int], attributes: list[str] | None = None
) -> Iterator[ResultModel]:
    """Result rows by (run id, result key), any runs (``shards``: each run's count; a run not
    in it has one), in BatchGetItems of 100 (consistent)."""
    keys = [row_key(run_id, key, shards.get(run_id, 1)) for run_id, key in wanted]
    for start in range(0, len(keys), _BATCH_GET):
        yield from ResultModel.batch_get(
            keys[start : start + _BATCH_GET], consistent_read=True, attributes_to_get=attributes
        )


def clear_output_for_generation(generation_id: str) -> int:
    """Clear ``output`` on every result of that generation (a content purge). Returns how many."""
    cleared = 0
    for key in ResultModel.by_generation.query(generation_id):
        with serialized_writes():
            ResultModel(run_id=key.run_id, result_key=key.result_key).update(
                actions=[ResultModel.output.remove(), ResultModel.output_s3_key.remove()],
                condition=ResultModel.result_key.exists(),
            )
        cleared += 1
    return cleared
