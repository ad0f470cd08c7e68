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
        item_id = f"dsit_{n:08d}"
        if value < 20:
            yield ItemOutcome(item_id=item_id, errored=True, passed=None)
        else:
            yield ItemOutcome(
                item_id=item_id,
                errored=False,
                passed=value >= 300,
                scores=SCORES[value],
                group=KINDS[n % 4] if n % 7 else None,
            )


def settle(aggregator: RunAggregator, comparator: BaselineComparator) -> None:
    def counted(items: Iterator[ItemOutcome]) -> Iterator[ItemOutcome]:
        for item in items:
            aggregator.add(item)
            yield item

    current = counted(synthetic_items(ITEMS, multiplier=7919))
    baseline = synthetic_items(ITEMS, multiplier=104729)
    for here, there in merge_join(current, baseline):
        comparator.add(here, there)


def test_two_hundred_thousand_items_settle_in_bounded_memory() -> None:
    aggregator = RunAggregator("kind")
    comparator = BaselineComparator("evrun_base", "kind")
    tracemalloc.start()
    try:
        settle(aggregator, comparator)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    aggregate = aggregator.result()
    comparison = comparator.result()
    # The work really happened...
    assert aggregate["scored_item_count"] + aggregate["errored_item_count"] == ITEMS
    assert aggregate["scored_item_count"] > 190_000
    assert set(aggregate["grouping"]["groups"]) == set(KINDS)
    assert comparison["compared_item_count"] > 180_000
    assert comparison["flipped"]["improved"] > 0 and comparison["flipped"]["regressed"] > 0
    # ...in memory bounded by groups x scorers: 200,000 items held at once would need
    # well over 100 MB; a few hundred KB of counters and one item per side is the budget.
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes"
