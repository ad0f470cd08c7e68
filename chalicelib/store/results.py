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

from chalicelib import clock
from chalicelib.domain.runs import (
    EvalResult,
    RecordedError,
    ResultRecord,
    RunState,
    ScoreEntry,
    UsageEntry,
    result_key,
)
from chalicelib.store import blobs, generations, usage
from chalicelib.store.base import serialized_writes, transact_write
from chalicelib.store.models import ResultModel, RunModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
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


def _prepare(record: ResultRecord) -> _PreparedRecord:
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
        run_id=result.run_id,
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
        run_id=model.run_id,
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


def _counter_actions(records: list[_PreparedRecord], spent_usd: float) -> list[Any]:
    errored = sum(1 for p in records if p.record.result.errored)
    completed = len(records) - errored
    passed = sum(1 for p in records if p.record.result.passed is True)
    failed = sum(1 for p in records if p.record.result.passed is False)
    actions = [
        RunModel.completed_count.add(completed),
        RunModel.errored_count.add(errored),
        RunModel.recorded_count.add(completed + errored),
        # What ``?outcome=passed`` / ``failed`` select (``_outcome_condition``): their totals.
        RunModel.passed_count.add(passed),
        RunModel.failed_count.add(failed),
        RunModel.last_activity_at.set(clock.now_iso()),
    ]
    if spent_usd:
        # DynamoDB adds decimals exactly; rounding drops the float's binary noise.
        actions.append(RunModel.spent_usd.add(round(spent_usd, 9)))
    actions += _pair_actions(records)
    return actions


def _pair_actions(records: list[_PreparedRecord]) -> list[Any]:
    """An early-stop run's paired counts, added with the rows they count (invariant 3)."""
    table = {
        (True, True): RunModel.pair_both,
        (False, True): RunModel.pair_improved,
        (True, False): RunModel.pair_regressed,
        (False, False): RunModel.pair_neither,
    }
    counts: dict[tuple[bool, bool], int] = {}
    for prepared in records:
        pair = prepared.record.paired
        if pair is not None:
            counts[pair] = counts.get(pair, 0) + 1
    return [table[pair].add(n) for pair, n in counts.items()]


def _commit(run_id: str, records: list[_PreparedRecord], progress: RunProgress | None) -> bool:
    """One transaction: every result (if absent), its generation, one counter update.

    Returns whether the run may now be fully recorded (see :func:`_not_completing_the_set`).
    Retries a TransactionConflict (another worker's transaction on the run row at the
    same moment) with jittered backoff; raises anything else.
    """
    guard = _not_completing_the_set(progress, len(records))
    # Built once: a retried transaction writes the same usage row, never a second one.
    usage_row = usage.batch_row(run_id, (p.record for p in records))
    for attempt in range(_CONFLICT_RETRIES):
        try:
            _transact(run_id, records, guard, usage_row)
            return guard is None
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
    run_id: str, records: list[_PreparedRecord], guard: Any, usage_row: UsageModel | None
) -> None:
    condition = RunModel.id.exists()
    if guard is not None:
        condition = condition & guard
    counters = RunModel(id=run_id).get_update_kwargs_from_instance(
        actions=_counter_actions(records, usage.row_cost(usage_row)), condition=condition
    )
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


def record(
    run_id: str, records: list[ResultRecord], progress: RunProgress | None = None
) -> RecordOutcome:
    """Record results with their generations and count them on the run, atomically.

    A record whose result row already exists is a duplicate: nothing of it is written
    (its blobs are removed) and it is reported in ``duplicates``. Without ``progress``
    every call may complete the recorded set.
    """
    outcome = RecordOutcome()
    prepared = [_prepare(r) for r in records]
    for chunk in _chunks(prepared):
        try:
            outcome.may_settle_run |= _commit(run_id, chunk, progress)
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
                outcome.may_settle_run |= _commit(run_id, [single], progress)
                outcome.recorded.append(single.record)
            except TransactWriteError as exc:
                if not _is_duplicate(exc):
                    raise
                blobs.delete(single.blob_keys)
                outcome.duplicates.append(single.record)
    return outcome


# --- reading ----------------------------------------------------------------------------------


def existing_keys(run_id: str, result_keys: Iterable[str]) -> set[str]:
    """Which of these result keys already have a row (one BatchGetItem per 100)."""
    unique = list(dict.fromkeys(result_keys))
    found: set[str] = set()
    for start in range(0, len(unique), _BATCH_GET):
        keys = [(run_id, k) for k in unique[start : start + _BATCH_GET]]
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
    if outcome is not None or item_id is not None:
        only = _outcome_condition(outcome) if outcome is not None else None
        within = ResultModel.result_key.startswith(f"{item_id}#") if item_id else None
        counted = None
        if outcome is not None and item_id is None and run.outcome_counts is not None:
            counted = run.outcome_counts[outcome]
        filtered = _FilteredResults(
            ResultModel,
            run.id,
            _RESULT_KEYS,
            consistent=True,
            only=only,
            within=within,
            counted=counted,
        )
        return page_of(filtered, window, from_model)
    recorded = run.run.completed_count + run.run.errored_count
    rows = _RunResults(ResultModel, run.id, _RESULT_KEYS, consistent=True, recorded=recorded)
    return page_of(rows, window, from_model)


def iter_scored(run_id: str) -> Iterator[EvalResult]:
    """Every result of a run in key order, without content, with each result's generation
    id and creation time (what ``/v2`` events and summaries need). Settle reads leaner
    rows (:mod:`chalicelib.store.outcome_rows`)."""
    wanted = [*OUTCOME_ATTRIBUTES, "generation_id", "created_at"]
    for model in ResultModel.query(run_id, consistent_read=True, attributes_to_get=wanted):
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
        run_id=model.run_id,
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


def iter_result_keys(run_id: str) -> Iterator[str]:
    """Every result key of a run, in order (recovery merges it with the frozen item set)."""
    for model in ResultModel.query(run_id, attributes_to_get=["run_id", "result_key"]):
        yield model.result_key


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
