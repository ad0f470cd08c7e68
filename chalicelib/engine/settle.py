"""Settle a fully recorded run: a pipeline of small steps over streamed results.

:func:`maybe_settle` claims the settle (fan-out and the item worker call it): only the
worker (or reaper) that wins the claim goes on to :func:`settle_run`. Each step reads and
extends one :class:`Settlement`; a later addition (another comparison, another gate) is
one more function in :data:`PIPELINE`.

Everything streams: results are queried in key order (item, then trial), grouped per item
and reduced, labelled in pages from the items' *current* metadata, and fed to
accumulators that keep counters only, so a 100,000-item run settles in bounded memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar

from chalicelib.domain.runs import EvalResult, RunState
from chalicelib.engine import lifecycle
from chalicelib.engine.spend import SpendTally
from chalicelib.stats import (
    BaselineComparator,
    ItemOutcome,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    group_consecutive,
    group_label,
    merge_join,
    reduce_trials,
    verdict,
)
from chalicelib.store import datasets, results, runs

#: Items whose labels are read with one BatchGetItem.
LABEL_PAGE = 100

T = TypeVar("T")


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


def trial_outcome(result: EvalResult) -> TrialOutcome:
    scores = tuple(ScorerScore(key=s.scorer, score=s.score, passed=s.passed) for s in result.scores)
    return TrialOutcome(
        dataset_item_id=result.dataset_item_id or "",
        trial=result.trial,
        errored=result.errored,
        scores=scores,
    )


def _labels(item_ids: list[str], group_by: str | None) -> dict[str, str | None]:
    """Group labels from the items as they are *now*; a deleted item names no group."""
    if group_by is None:
        return {}
    current = datasets.batch_get_items(item_ids)
    return {
        dataset_item_id: group_label(
            current[dataset_item_id].metadata if dataset_item_id in current else None, group_by
        )
        for dataset_item_id in item_ids
    }


def item_outcomes(
    run_id: str,
    reducer: str,
    group_by: str | None,
    on_result: Callable[[EvalResult], None] | None = None,
) -> Iterator[ItemOutcome]:
    """A run's items, in item order, each with its trials reduced and its group label.

    ``on_result`` sees every result row as it streams past (the spend tally uses it).
    """
    rows = results.iter_outcomes(run_id)
    if on_result is not None:
        rows = _tapped(rows, on_result)
    trials = (trial_outcome(r) for r in rows)
    for page in _pages(group_consecutive(trials), LABEL_PAGE):
        labels = _labels([item_trials[0].dataset_item_id for item_trials in page], group_by)
        for item_trials in page:
            label = labels.get(item_trials[0].dataset_item_id)
            yield reduce_trials(item_trials, reducer, group=label)


def _tapped(rows: Iterable[T], tap: Callable[[T], None]) -> Iterator[T]:
    for row in rows:
        tap(row)
        yield row


# --- the pipeline -------------------------------------------------------------------------------


def aggregate_and_compare(settlement: Settlement) -> None:
    """One pass over this run's results: its aggregate, its spend and, with a baseline,
    the comparison (merge-joined with the baseline's stream, both in item order)."""
    snapshot = settlement.state.snapshot
    aggregator = RunAggregator(snapshot.group_by)
    spend = SpendTally()
    current = item_outcomes(
        settlement.state.id, snapshot.trial_reducer, snapshot.group_by, on_result=spend.add
    )
    baseline_id = settlement.state.run.baseline_run_id
    if baseline_id is None:
        for item in current:
            aggregator.add(item)
    else:
        comparator = BaselineComparator(baseline_id, snapshot.group_by)
        baseline_state = runs.get_run(baseline_id)
        # The baseline's trials reduce as that run's did; its labels come from the same
        # current items, so both sides of a group compare the same kind of item.
        previous = item_outcomes(
            baseline_id, baseline_state.snapshot.trial_reducer, snapshot.group_by
        )
        for here, there in merge_join(current, previous):
            if here is not None:
                aggregator.add(here)
            comparator.add(here, there)
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
