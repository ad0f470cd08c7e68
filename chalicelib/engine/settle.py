"""Settle a fully recorded run: a pipeline of small steps over streamed results.

:func:`maybe_settle` claims the settle (fan-out and the item worker call it): only the
worker (or reaper) that wins the claim goes on to :func:`settle_run`. Each step reads and
extends one :class:`Settlement`; a later addition (another comparison, another gate) is
one more function in :data:`PIPELINE`.

Everything streams: results are queried in key order (item, then trial) as lean rows
(``store.outcome_rows``: no model objects), grouped per item, merge-joined with the
baseline's items (from its outcome digest, or its rows when it has none:
``engine.settled_outcomes``), labelled once per item in pages from the items' *current*
metadata, reduced, and fed to accumulators that keep counters only, so a 100,000-item run
settles in bounded memory: at most one page of each stream and one page of labels at a
time. The run's own reduced items go to its outcome digest, part by part, with their
labels, for the runs that will name it as their baseline and for comparisons on request.

The pass covers an item range (:func:`accumulate`): the whole run, or, for a run over
``PAWL_SETTLE_FANOUT_ITEMS`` items, one slice of it in a worker of its own, whose
partial (``engine.settle_state``) the last slice merges with the others before
:func:`conclude` (``engine.settle_slices``). Both give the same aggregates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar, cast

from chalicelib.domain.runs import RunState
from chalicelib.engine import early_stop, lifecycle
from chalicelib.engine.settle_state import SettlePartial
from chalicelib.engine.settled_outcomes import (
    BaselineItem,
    Trials,
    baseline_items,
    baseline_outcome,
    digest_entry,
    item_id,
    item_trials,
)
from chalicelib.readahead import read_ahead
from chalicelib.stats import group_label, merge_join, reduce_trials, verdict
from chalicelib.store import outcome_rows, results, run_counters, runs, skips
from chalicelib.store.outcome_digest import DigestWriter, write_manifest

#: Items whose labels are read at a time: BatchGetItems of 100 (the limit), as many side by
#: side as ``store.side_by_side`` sends (one after another, 1,000 items' labels were ten
#: round trips, 70 ms of a 1,000-item settle through the local stand-in).
LABEL_PAGE = outcome_rows.METADATA_WAVE

log = logging.getLogger("pawl.engine.settle")
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


def _labels(item_ids: list[str], group_by: str | None) -> dict[str, str | None]:
    """Group labels from the items as they are *now*; a deleted item names no group."""
    if group_by is None:
        return {}
    current = outcome_rows.batch_get_metadata(item_ids)
    return {item_id: group_label(current.get(item_id), group_by) for item_id in item_ids}


def labelled_pairs(
    current: Iterator[Trials], baseline: Iterator[BaselineItem], group_by: str | None
) -> Iterator[tuple[Trials | None, BaselineItem | None, str | None]]:
    """Both runs' items merge-joined in item order, each item labelled once (in pages).

    The join and the next page's labels are worked out in a thread while the caller
    reduces this page."""
    pairs = merge_join(current, baseline, key=item_id)
    labelled = (
        (page, _labels([_pair_id(pair) for pair in page], group_by))
        for page in _pages(pairs, LABEL_PAGE)
    )
    for page, labels in read_ahead(labelled):
        for here, there in page:
            # merge_join hands back the current side's elements as they came: trials.
            yield cast(Trials | None, here), there, labels.get(_pair_id((here, there)))


def _pair_id(pair: tuple[BaselineItem | None, BaselineItem | None]) -> str:
    here, there = pair
    side = here if here is not None else there
    assert side is not None  # merge_join yields no empty pair
    return item_id(side)


# --- the pipeline -------------------------------------------------------------------------------


def accumulate(
    state: RunState, lo: str | None = None, hi: str | None = None, tag: str = ""
) -> SettlePartial:
    """One pass over the run's items whose id is in ``[lo, hi)`` (None: unbounded): every
    accumulator of ``engine.settle_state`` fed, and those items' outcome-digest parts
    written (named with ``tag``; the manifest is the caller's, once every range is done).

    Merge-joined with the baseline's items in the same range (both in item order), so a
    slice reads only its share of either run."""
    snapshot = state.snapshot
    reducer = snapshot.trial_reducer
    partial = SettlePartial.for_run(state)
    digest = DigestWriter(state.id, reducer, snapshot.group_by, tag=tag)
    baseline_id = state.run.baseline_run_id
    previous: Iterator[BaselineItem] = iter(())
    baseline_reducer = reducer
    if baseline_id is not None:
        # The baseline's items reduce as that run's did; its labels are the same current
        # items' (read once per item), so both sides of a group compare the same items.
        baseline_reducer = runs.get_run(baseline_id).snapshot.trial_reducer
        previous = baseline_items(baseline_id, baseline_reducer, lo, hi)
    current = item_trials(state.id, partial.spend, lo, hi, shards=state.shards)
    feeders = partial.feeders()
    for here, there, label in labelled_pairs(current, previous, snapshot.group_by):
        item = reduce_trials(here, reducer, group=label) if here is not None else None
        if item is not None:
            digest.add(digest_entry(item))
        before = baseline_outcome(there, baseline_reducer, label) if there is not None else None
        for feed, accumulator in feeders:
            feed(accumulator, item, before)
    partial.digest_parts = digest.close()
    return partial


def conclude(settlement: Settlement, partial: SettlePartial) -> None:
    """The run's digest made complete and its figures read, from the whole run's partial.

    Every row of the run is recorded (its settle is claimed) and none changes again, so
    the manifest over the parts written is the run's digest."""
    snapshot = settlement.state.snapshot
    write_manifest(
        settlement.state.id, snapshot.trial_reducer, snapshot.group_by, partial.digest_parts
    )
    settlement.aggregate = partial.figures()
    settlement.baseline = settlement.aggregate.get("baseline")
    settlement.not_started = partial.spend.not_started


def aggregate_and_compare(settlement: Settlement) -> None:
    """One pass over this run's results: its aggregate, its spend, its outcome digest
    and, with a baseline, the comparison (merge-joined with the baseline's stream, both in
    item order)."""
    conclude(settlement, accumulate(settlement.state))


def decide_verdict(settlement: Settlement) -> None:
    snapshot = settlement.state.snapshot
    settlement.passed, settlement.verdict_reasons = verdict(
        settlement.aggregate,
        snapshot.pass_threshold,
        snapshot.max_regression,
        settlement.baseline,
        on_inconclusive=snapshot.on_inconclusive,
    )


def early_stop_decision(settlement: Settlement) -> None:
    """An early-stop run: what its test decided goes in the aggregate, and a decision is the
    regression gate's answer (the fixed-size figures over the items that ran stay beside it)."""
    block = early_stop.summary(settlement.state, settlement.aggregate)
    if block is None:
        return
    settlement.aggregate["early_stop"] = block
    if block["decision"] is None:
        return
    item_count = settlement.state.run.item_count
    for reason in settlement.verdict_reasons:
        if reason.get("gate") == "max_regression":
            early_stop.stopped_reason(reason, block, item_count)
    if settlement.verdict_reasons:
        settlement.passed = all(reason["passed"] for reason in settlement.verdict_reasons)


PIPELINE: tuple[Step, ...] = (aggregate_and_compare, decide_verdict, early_stop_decision)


def settle_run(run_id: str) -> bool:
    """Aggregate, compare and decide in one pass, then settle the run as completed.

    False if it ended meanwhile."""
    settlement = Settlement(state=runs.get_run(run_id))
    return finish_settlement(settlement)


def finish_settlement(settlement: Settlement, after: Step | None = None) -> bool:
    """Run the :data:`PIPELINE`'s steps (those after ``after`` only: a sliced settle's
    combine has done the accumulation), then settle the run, once. False if it ended."""
    steps = PIPELINE if after is None else PIPELINE[PIPELINE.index(after) + 1 :]
    for step in steps:
        step(settlement)
    run_id = settlement.state.id
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


def settle_claimed(run_id: str) -> bool:
    """Settle a run whose settle the caller has claimed: in one pass, or, over
    ``PAWL_SETTLE_FANOUT_ITEMS`` items, by enqueueing its slices (``engine.settle_slices``:
    the last slice settles it). True when the run was settled here and now."""
    # Imported here: settle_slices builds on this module's pipeline.
    from chalicelib.engine import settle_slices

    sliced = settle_slices.settle_if_large(run_id)
    return settle_run(run_id) if sliced is None else sliced


def maybe_settle(run_id: str, shards: int = 1, item_count: int | None = None) -> None:
    """Claim and settle the run if every item is recorded; a no-op for everyone but one caller.

    A sharded run (``shards`` > 1) is checked by summing its counter rows (one read; the
    finish check), then claimed with the sums; with ``item_count`` (known once fan-out
    is done) a sum short of it makes no claim at all.
    """
    if not claim(run_id, shards, item_count=item_count):
        return
    try:
        settle_claimed(run_id)
    except Exception:
        # Give the claim back so the redelivery of this batch can settle again, rather
        # than leaving the run to the reaper's grace period.
        runs.release_settle_claim(run_id)
        raise


def claim(
    run_id: str, shards: int, *, stale_before: str | None = None, item_count: int | None = None
) -> bool:
    """The settle claim: one conditional write on the run row, given the counter rows'
    sums for a sharded run (see :func:`chalicelib.store.runs.claim_settle`)."""
    if shards <= 1:
        return runs.claim_settle(run_id, stale_before=stale_before)
    sums = run_counters.read(run_id, shards)
    if item_count is not None and sums["recorded_count"] < item_count:
        return False
    return runs.claim_settle(run_id, stale_before=stale_before, sums=sums)


def recount(state: RunState, *, complete_only: bool = True) -> bool:
    """Count a fanned-out run's result rows into its counters when they fell behind (a worker
    died between writing rows and counting them, ``store.run_counters``). True when the
    counters moved.

    A live worker may be between its rows and its count; recounting then would count its
    rows twice. ``complete_only`` (the reaper, a re-drive with nothing left to send) writes
    only when the rows hold every item: a double count can then only delay nothing, never
    settle early. Without it (after a restart: no worker of the old process is alive)
    any shortfall is recounted.
    """
    if not state.fanout_done or state.settle_claimed:
        return False
    before = run_counters.reconcile_before(state.id, state.shards)
    if before["recorded_count"] >= state.run.item_count:
        return False
    rows = results.count_rows(state.id, state.shards)
    if state.early_stop is not None:
        # An early-stopped run's skip markers count as recorded (each was counted in the
        # transaction that wrote it): the rows and the markers are what the counters hold.
        marked = sum(1 for _ in skips.iter_skipped_keys(state.id, state.shards))
        rows["skipped_count"] = marked
        rows["recorded_count"] += marked
    if rows["recorded_count"] <= before["recorded_count"]:
        return False
    if complete_only and rows["recorded_count"] < state.run.item_count:
        return False
    moved = run_counters.reconcile(state.id, state.shards, rows)
    if moved:
        log.warning(
            "run %s: %d result rows were not counted; counters recounted from the rows",
            state.id,
            int(rows["recorded_count"] - before["recorded_count"]),
        )
    return moved
