"""An eval's runs as lists: whole (the API's list) or as summaries (a runs table, a chart).

Both read one page of the eval's ``by_eval`` index, newest first, and name the attributes
they read (a ProjectionExpression), so a page never carries what no run on the wire
shows: the eval snapshot, the tool context, the causation. A summary reads the run's
``headline`` (the figures of ``aggregate_scores`` a table shows, written beside it at
settle) instead of the whole aggregate, about a tenth of its size; a run settled before
the headline existed has its aggregate read by id (one BatchGetItem for those rows of the
page) and reduced the same way.

A list's ``total`` is the eval row's ``run_count`` when the eval has counted its runs
from its creation (``runs_counted``), passed in as ``run_count``; otherwise (an eval
created before the counter) a COUNT query over the partition, as before. Both lists share
one cursor scope, so a cursor of either pages the other. Access patterns:
``docs/dynamodb.md``.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.runs import ACTIVE_STATUSES, EvalRun, headline_of
from chalicelib.store import run_counters
from chalicelib.store.models import RunModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.runs import fold_into, needs_counter_rows, run_from_row, shard_count_of

#: The attributes of a ``by_eval`` index key: what a list cursor holds.
EVAL_INDEX_KEYS = frozenset({"id", "eval_id", "created_key"})
#: What :func:`~chalicelib.store.runs.run_from_row` makes a run from.
RUN_ATTRIBUTES = frozenset(
    {
        "id",
        "eval_id",
        "agent_version",
        "decider_versions",
        "status",
        "baseline_run_id",
        "trigger_id",
        "aggregate_scores",
        "passed",
        "verdict_reasons",
        "failure_reason",
        "failure_code",
        "item_count",
        "completed_count",
        "errored_count",
        "metadata",
        "started_at",
        "finished_at",
        "created_at",
        # An early-stop run's settings, decision and counters (``EvalRun.early_stop``).
        "early_stop",
        "stop_decision",
        "stop_detail",
        "skipped_count",
        "pair_both",
        "pair_improved",
        "pair_regressed",
        "pair_neither",
        # A sharded run's counters are on its counter rows until its settle is claimed.
        "shards",
        "counters_folded",
    }
)
#: A summary: the same, with the headline for the aggregate.
SUMMARY_ATTRIBUTES = (RUN_ATTRIBUTES - {"aggregate_scores"}) | {"headline"}
_BATCH_GET = 100


def _newest_first(eval_id: str, projected: frozenset[str]) -> Partition:
    return Partition(RunModel.by_eval, eval_id, EVAL_INDEX_KEYS, forward=False, projected=projected)


def list_runs(eval_id: str, window: Window, run_count: int | None = None) -> Listing[EvalRun]:
    """Runs of one eval, newest first, whole; ``run_count``: the eval's counter, if kept."""
    return page_of(_newest_first(eval_id, RUN_ATTRIBUTES), window, _counted_run, run_count)


def _counted_run(model: RunModel) -> EvalRun:
    """A run as listed; a sharded one still recording with its counter rows summed (one
    BatchGetItem for each such run on the page)."""
    if needs_counter_rows(model):
        fold_into(model, run_counters.read(model.id, shard_count_of(model)))
    return run_from_row(model)


def list_run_summaries(
    eval_id: str, window: Window, run_count: int | None = None
) -> Listing[EvalRun]:
    """Runs of one eval, newest first, each whole but for ``aggregate_scores``: only its
    headline (:func:`~chalicelib.domain.runs.headline_of`)."""
    listing = page_of(_newest_first(eval_id, SUMMARY_ATTRIBUTES), window, _Summary, run_count)
    missing = [s.run.id for s in listing.items if s.unsettled_headline]
    aggregates = _aggregates_of(missing) if missing else {}
    return listing.map(lambda summary: summary.with_aggregate(aggregates))


class _Summary:
    """A summary row as read: the run, and its headline (None: not written at its settle)."""

    def __init__(self, model: RunModel) -> None:
        self.run = _counted_run(model)
        self.headline: dict[str, Any] | None = model.headline

    @property
    def unsettled_headline(self) -> bool:
        """Settled before headlines existed: its aggregate must be read to make one."""
        return self.headline is None and self.run.status not in ACTIVE_STATUSES

    def with_aggregate(self, aggregates: dict[str, dict[str, Any] | None]) -> EvalRun:
        headline = self.headline
        if headline is None:
            headline = headline_of(aggregates.get(self.run.id))
        return self.run.model_copy(update={"aggregate_scores": headline or None})


def _aggregates_of(run_ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """The ``aggregate_scores`` of runs by id (BatchGetItem, that attribute alone)."""
    found: dict[str, dict[str, Any] | None] = {}
    for start in range(0, len(run_ids), _BATCH_GET):
        for model in RunModel.batch_get(
            run_ids[start : start + _BATCH_GET], attributes_to_get=["id", "aggregate_scores"]
        ):
            found[model.id] = model.aggregate_scores
    return found
