"""Settle a fully recorded run: a pipeline of small steps over streamed results.

:func:`maybe_settle` claims the settle (fan-out and the item worker call it): only the
worker (or reaper) that wins the claim goes on to :func:`settle_run`. Each step reads and
extends one :class:`Settlement`; a later addition (another comparison, another gate) is
one more function in :data:`PIPELINE`.

Everything streams: results are queried in key order (item, then trial) as lean rows
(``store.outcome_rows``: no model objects), grouped per item, merge-joined with the
baseline's, labelled once per item in pages from the items' *current* metadata, reduced,
and fed to accumulators that keep counters only, so a 100,000-item run settles in
bounded memory: at most one page of each stream and one page of labels at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any, TypeVar

from chalicelib.domain.runs import RunState
from chalicelib.engine import lifecycle
from chalicelib.engine.readahead import read_ahead
from chalicelib.engine.spend import SpendTally
from chalicelib.stats import (
    BaselineComparator,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    group_consecutive,
    group_label,
    merge_join,
    reduce_trials,
    verdict,
)
from chalicelib.store import outcome_rows, runs
from chalicelib.store.outcome_rows import OutcomeRow

#: Items whose labels are read with one BatchGetItem (its limit).
LABEL_PAGE = outcome_rows.METADATA_PAGE

T = TypeVar("T")
Trials = list[TrialOutcome]


@dataclass
class Settlement:
    """What the settle pipeline has worked out so far."""

    state: RunState
    aggregate: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] | None = None
    passed: bool | None = None
    verdict_reasons: list[dict[str, Any]] = field(default_factory=list)
    #: Items the spend guard did not start: the run settles failed, ``BUDGET_EXCEEDED``.
    not_started: int = 0


Step = Callable[[Settlement], None]


def _pages(values: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(values)
    while page := list(islice(iterator, size)):
        yield page


def trial_outcome(row: OutcomeRow) -> TrialOutcome:
    scores = tuple(
        ScorerScore(key=s["scorer"], score=float(s["score"]), passed=bool(s["passed"]))
        for s in row.scores
    )
    return TrialOutcome(
        dataset_item_id=row.dataset_item_id, trial=row.trial, errored=row.errored, scores=scores
    )


def _labels(item_ids: list[str], group_by: str | None) -> dict[str, str | None]:
    """Group labels from the items as they are *now*; a deleted item names no group."""
    if group_by is None:
        return {}
    current = outcome_rows.batch_get_metadata(item_ids)
    return {item_id: group_label(current.get(item_id), group_by) for item_id in item_ids}


def item_trials(run_id: str, spend: SpendTally | None = None) -> Iterator[Trials]:
    """A run's trials grouped per item, in item order; ``spend`` sums every row's usage."""
    # The next page is read while this one is reduced (engine.readahead).
    pages = read_ahead(outcome_rows.iter_outcome_pages(run_id))
    rows: Iterable[OutcomeRow] = chain.from_iterable(pages)
    if spend is not None:
        rows = _tapped(rows, spend)
    return group_consecutive(trial_outcome(row) for row in rows)


def _tapped(rows: Iterable[OutcomeRow], spend: SpendTally) -> Iterator[OutcomeRow]:
    for row in rows:
        spend.add_usage(row.usage, row.error_code)
        yield row


def _item_id(trials: Trials) -> str:
    return trials[0].dataset_item_id


def labelled_pairs(
    current: Iterator[Trials], baseline: Iterator[Trials], group_by: str | None
) -> Iterator[tuple[Trials | None, Trials | None, str | None]]:
    """Both runs' items merge-joined in item order, each item labelled once (in pages).

    The join and the next page's labels are worked out in a thread while the caller
    reduces this page."""
    pairs = merge_join(current, baseline, key=_item_id)
    labelled = (
        (page, _labels([_item_id(here or there or []) for here, there in page], group_by))
        for page in _pages(pairs, LABEL_PAGE)
    )
    for page, labels in read_ahead(labelled):
        for here, there in page:
            yield here, there, labels.get(_item_id(here or there or []))


# --- the pipeline -------------------------------------------------------------------------------


def aggregate_and_compare(settlement: Settlement) -> None:
    """One pass over this run's results: its aggregate, its spend and, with a baseline,
    the comparison (merge-joined with the baseline's stream, both in item order)."""
    snapshot = settlement.state.snapshot
    aggregator = RunAggregator(snapshot.group_by)
    spend = SpendTally()
    current = item_trials(settlement.state.id, spend)
    baseline_id = settlement.state.run.baseline_run_id
    reducer = snapshot.trial_reducer
    if baseline_id is None:
        for here, _, label in labelled_pairs(current, iter(()), snapshot.group_by):
            assert here is not None
            aggregator.add(reduce_trials(here, reducer, group=label))
    else:
        comparator = BaselineComparator(baseline_id, snapshot.group_by)
        # The baseline's trials reduce as that run's did; its labels are the same current
        # items' (read once per item), so both sides of a group compare the same items.
        baseline_reducer = runs.get_run(baseline_id).snapshot.trial_reducer
        previous = item_trials(baseline_id)
        for here, there, label in labelled_pairs(current, previous, snapshot.group_by):
            item = reduce_trials(here, reducer, group=label) if here is not None else None
            if item is not None:
                aggregator.add(item)
            before = (
                reduce_trials(there, baseline_reducer, group=label) if there is not None else None
            )
            comparator.add(item, before)
        settlement.baseline = comparator.result()
    settlement.aggregate = aggregator.result()
    # Errored items count in no figure, but what they spent was spent: usage sums every row.
    settlement.aggregate["usage"] = spend.result()
    settlement.not_started = spend.not_started
    if settlement.baseline is not None:
        settlement.aggregate["baseline"] = settlement.baseline


def decide_verdict(settlement: Settlement) -> None:
    snapshot = settlement.state.snapshot
    settlement.passed, settlement.verdict_reasons = verdict(
        settlement.aggregate, snapshot.pass_threshold, snapshot.max_regression, settlement.baseline
    )


PIPELINE: tuple[Step, ...] = (aggregate_and_compare, decide_verdict)


def settle_run(run_id: str) -> bool:
    """Aggregate, compare and decide, then settle the run as completed.

    False if it ended meanwhile."""
    settlement = Settlement(state=runs.get_run(run_id))
    for step in PIPELINE:
        step(settlement)
    if settlement.not_started:
        return lifecycle.settle_over_budget(
            run_id, settlement.aggregate, _over_budget_reason(settlement)
        )
    return lifecycle.settle_completed(
        run_id, settlement.aggregate, settlement.passed, settlement.verdict_reasons
    )


def _over_budget_reason(settlement: Settlement) -> str:
    state = settlement.state
    spent = settlement.aggregate["usage"]["total"]["cost_usd"]
    return (
        f"the run spent ${spent} and reached its max_cost_usd (${state.snapshot.max_cost_usd}) "
        f"before every item started: {settlement.not_started} of {state.run.item_count} "
        "were not started; the aggregates cover the items that ran"
    )


def maybe_settle(run_id: str) -> None:
    """Claim and settle the run if every item is recorded; a no-op for everyone but one caller."""
    if not runs.claim_settle(run_id):
        return
    try:
        settle_run(run_id)
    except Exception:
        # Give the claim back so the redelivery of this batch can settle again, rather
        # than leaving the run to the reaper's grace period.
        runs.release_settle_claim(run_id)
        raise
