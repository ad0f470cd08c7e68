"""The settle pipeline streams: memory stays bounded however many items a run has."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

from chalicelib.stats import (
    BaselineComparator,
    ItemOutcome,
    RunAggregator,
    ScorerScore,
    merge_join,
)

ITEMS = 200_000
KINDS = ("lookup", "refusal", "multi_step", "smalltalk")


def _scores_by_value() -> list[dict[str, ScorerScore]]:
    # Items share these read-only score maps: the test measures the pipeline's memory,
    # and building 400,000 fresh dicts would only slow it down.
    return [
        {
            "judge": ScorerScore("judge", value / 1000, value >= 300),
            "contains": ScorerScore("contains", float(value % 2), value % 2 == 1),
        }
        for value in range(1000)
    ]


SCORES = _scores_by_value()


def synthetic_items(count: int, multiplier: int) -> Iterator[ItemOutcome]:
    """Deterministic pseudo-random items sorted by id; 2% errored, 1 in 7 ungrouped."""
    for n in range(count):
        value = (n * multiplier) % 1000
        dataset_item_id = f"dsit_{n:08d}"
        if value < 20:
            yield ItemOutcome(dataset_item_id=dataset_item_id, errored=True, passed=None)
        else:
            yield ItemOutcome(
                dataset_item_id=dataset_item_id,
                errored=False,
                passed=value >= 300,
                scores=SCORES[value],
                group=KINDS[n % 4] if n % 7 else None,
            )


# Tracing every allocation slows Python several-fold, so only the last items of the run
# are traced. That still catches any per-item retention: a pipeline that kept items
# would keep the window's 2 x 20,000 items too, several MB of them.
TRACED_TAIL = 20_000
PEAK_BUDGET = 1024 * 1024


def settle_tail_traced(aggregator: RunAggregator, comparator: BaselineComparator) -> int:
    """Stream the whole run through both accumulators; the traced peak of the tail."""

    def counted(items: Iterator[ItemOutcome]) -> Iterator[ItemOutcome]:
        for position, item in enumerate(items):
            if position == ITEMS - TRACED_TAIL:
                tracemalloc.start()
            aggregator.add(item)
            yield item

    current = counted(synthetic_items(ITEMS, multiplier=7919))
    baseline = synthetic_items(ITEMS, multiplier=104729)
    try:
        for here, there in merge_join(current, baseline):
            comparator.add(here, there)
        aggregator.result()
        comparator.result()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_two_hundred_thousand_items_settle_in_bounded_memory() -> None:
    aggregator = RunAggregator("kind")
    comparator = BaselineComparator("evrun_base", "kind")
    peak = settle_tail_traced(aggregator, comparator)
    aggregate = aggregator.result()
    comparison = comparator.result()
    # The work really happened...
    assert aggregate["scored_item_count"] + aggregate["errored_item_count"] == ITEMS
    assert aggregate["scored_item_count"] > 190_000
    assert set(aggregate["grouping"]["groups"]) == set(KINDS)
    assert comparison["compared_item_count"] > 180_000
    assert comparison["flipped"]["improved"] > 0 and comparison["flipped"]["regressed"] > 0
    # ...in memory bounded by groups x scorers, not by items.
    assert 0 < peak < PEAK_BUDGET, f"peak {peak} bytes"


def test_the_memory_check_catches_a_pipeline_that_keeps_items() -> None:
    # The same measurement around a consumer that keeps what it sees must blow the budget,
    # or the test above proves nothing.
    kept: list[ItemOutcome] = []
    tracemalloc.start()
    try:
        for item in synthetic_items(TRACED_TAIL, multiplier=7919):
            kept.append(item)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == TRACED_TAIL
    assert peak > PEAK_BUDGET, f"peak {peak} bytes"
