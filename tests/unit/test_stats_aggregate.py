"""The run aggregate: pass rate over scored items, per-scorer figures, groups."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.stats import ItemOutcome, RunAggregator, ScorerScore


def scored(
    dataset_item_id: str, passed: bool, group: Any = None, flaky: bool = False, **scores: float
) -> ItemOutcome:
    """An item scored by each ``scorer=score`` given; a scorer passes at score 1."""
    return ItemOutcome(
        dataset_item_id=dataset_item_id,
        errored=False,
        passed=passed,
        scores={key: ScorerScore(key, value, value == 1.0) for key, value in scores.items()},
        flaky=flaky,
        group=group,
    )


def errored(dataset_item_id: str, group: Any = None) -> ItemOutcome:
    return ItemOutcome(dataset_item_id=dataset_item_id, errored=True, passed=None, group=group)


def aggregate(items: list[ItemOutcome], group_by: str | None = None) -> dict[str, Any]:
    aggregator = RunAggregator(group_by)
    for item in items:
        aggregator.add(item)
    return aggregator.result()


def test_pass_rate_is_passed_over_scored_and_errors_are_not_zeros() -> None:
    items = [scored(f"i{n}", passed=n < 45, contains=1.0 if n < 45 else 0.0) for n in range(60)]
    items += [errored(f"e{n}") for n in range(7)]
    result = aggregate(items)
    assert result["pass_rate"] == 0.75
    assert result["scored_item_count"] == 60
    assert result["errored_item_count"] == 7
    assert round(result["pass_rate_interval"]["low"], 6) == 0.627679
    assert round(result["pass_rate_interval"]["high"], 6) == 0.842235
    assert result["scorers"] == {"contains": {"mean": 0.75, "pass_rate": 0.75}}
    assert "grouping" not in result


def test_nothing_scored_has_no_pass_rate() -> None:
    result = aggregate([errored("a"), errored("b")])
    assert result["pass_rate"] is None
    assert result["pass_rate_interval"] is None
    assert result["scored_item_count"] == 0
    assert result["errored_item_count"] == 2
    assert result["scorers"] == {}
    assert aggregate([])["pass_rate"] is None


def test_scorer_mean_is_not_the_verdict() -> None:
    items = [
        scored("a", passed=False, judge=0.9, contains=0.0),
        scored("b", passed=True, judge=1.0, contains=1.0),
        scored("c", passed=False, judge=0.2, contains=1.0),
    ]
    result = aggregate(items)
    assert result["pass_rate"] == pytest.approx(1 / 3)
    assert result["scorers"]["judge"] == {
        "mean": pytest.approx(0.7),
        "pass_rate": pytest.approx(1 / 3),
    }
    assert result["scorers"]["contains"]["pass_rate"] == pytest.approx(2 / 3)


def test_means_do_not_drift_over_many_items() -> None:
    result = aggregate([scored(f"i{n}", passed=False, judge=0.1) for n in range(10)])
    assert result["scorers"]["judge"]["mean"] == 0.1


def test_flaky_items_are_counted() -> None:
    items = [scored("a", True, flaky=True), scored("b", False), scored("c", True, flaky=True)]
    assert aggregate(items)["flaky_item_count"] == 2


def test_grouping_follows_the_spec_example() -> None:
    items = [
        scored("1", True, group="multi_step", contains=1.0),
        scored("2", True, group="refusal", contains=1.0),
        scored("3", False, group="refusal", contains=0.0),
        scored("4", True, group=None, contains=1.0),
        scored("5", False, group=None, contains=0.0),
    ]
    result = aggregate(items, group_by="kind")
    assert result["pass_rate"] == 0.6
    grouping = result["grouping"]
    assert grouping["group_by"] == "kind"
    assert grouping["ungrouped_item_count"] == 2
    assert list(grouping["groups"]) == ["multi_step", "refusal"]
    refusal = grouping["groups"]["refusal"]
    assert refusal["pass_rate"] == 0.5
    assert refusal["scored_item_count"] == 2
    assert refusal["scorers"] == {"contains": {"mean": 0.5, "pass_rate": 0.5}}
    assert round(refusal["pass_rate_interval"]["low"], 2) == 0.09
    multi_step = grouping["groups"]["multi_step"]
    assert multi_step["pass_rate"] == 1
    assert multi_step["pass_rate_interval"]["high"] == 1.0
    assert round(multi_step["pass_rate_interval"]["low"], 2) == 0.21


def test_non_string_labels_are_ungrouped_and_never_coerced() -> None:
    labels: list[Any] = ["1", 1, True, {"k": "v"}, None]
    items = [scored(f"i{n}", True, group=label) for n, label in enumerate(labels)]
    grouping = aggregate(items, group_by="kind")["grouping"]
    assert list(grouping["groups"]) == ["1"]
    assert grouping["groups"]["1"]["scored_item_count"] == 1
    assert grouping["ungrouped_item_count"] == 4


def test_errored_items_count_in_no_group() -> None:
    items = [scored("a", True, group="refusal"), errored("b", group="refusal"), errored("c")]
    result = aggregate(items, group_by="kind")
    assert result["grouping"]["groups"]["refusal"]["scored_item_count"] == 1
    assert result["grouping"]["ungrouped_item_count"] == 0
    assert result["errored_item_count"] == 2


def test_group_by_set_with_no_scored_item_reports_empty_grouping() -> None:
    result = aggregate([errored("a", group="x")], group_by="kind")
    assert result["grouping"] == {"group_by": "kind", "groups": {}, "ungrouped_item_count": 0}


def test_result_can_be_read_while_streaming() -> None:
    aggregator = RunAggregator(None)
    aggregator.add(scored("a", True))
    assert aggregator.result()["pass_rate"] == 1.0
    aggregator.add(scored("b", False))
    assert aggregator.result()["pass_rate"] == 0.5
