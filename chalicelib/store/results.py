"""Eval results: one row per (run, item, trial), created once, never overwritten.

Writing them (the conditional create, the generation, the counters) is
:mod:`chalicelib.store.result_writes`, whose names are re-exported here. Reading them is
here: a run's results list (a sharded run's shards merged in item order,
``store.sharded_query``), the rows settle, ``/v2`` and recovery stream, lookups by key.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from chalicelib.domain.runs import (
    EvalResult,
    RecordedError,
    RunState,
    ScoreEntry,
    UsageEntry,
)
from chalicelib.store import blobs, run_counters, runs
from chalicelib.store import shards as sharding
from chalicelib.store.base import serialized_writes
from chalicelib.store.models import ResultModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.result_writes import (
    RECORDS_PER_TRANSACTION,
    Counting,
    RecordOutcome,
    RunProgress,
    record,
)
from chalicelib.store.sharded_query import MergedPartitions

__all__ = ["RECORDS_PER_TRANSACTION", "Counting", "RecordOutcome", "RunProgress", "record"]

log = logging.getLogger("pawl.store.results")

_RESULT_KEYS = frozenset({"run_id", "result_key"})
_BATCH_GET = 100
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


# --- conversion -------------------------------------------------------------------------------


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
    if attributes is not None:
        attributes = list(dict.fromkeys(attributes))  # a projection may not name one twice
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
    # Not the paired counts (a row does not keep the baseline's outcome) nor skipped_count
    # (skip markers, counted with their markers: ``engine.settle.recount`` adds them).
    counted = [name for name in run_counters.COUNTER_NAMES if name not in run_counters.PAIRED]
    counts = dict.fromkeys(counted, 0.0)
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
