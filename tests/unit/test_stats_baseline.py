"""Baseline comparison: the item intersection, flips, McNemar, groups with Holm."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from chalicelib.stats import BaselineComparator, ItemOutcome, ScorerScore, merge_join
from chalicelib.stats.paired_interval import paired_delta_interval


def scored(dataset_item_id: str, passed: bool, group: Any = None, **scores: float) -> ItemOutcome:
    return ItemOutcome(
        dataset_item_id=dataset_item_id,
        errored=False,
        passed=passed,
        scores={key: ScorerScore(key, value, value == 1.0) for key, value in scores.items()},
        group=group,
    )


def errored(dataset_item_id: str, group: Any = None) -> ItemOutcome:
    return ItemOutcome(dataset_item_id=dataset_item_id, errored=True, passed=None, group=group)


def compare(
    current: Iterable[ItemOutcome], baseline: Iterable[ItemOutcome], group_by: str | None = None
) -> dict[str, Any]:
    comparator = BaselineComparator("evrun_base", group_by)
    for here, there in merge_join(current, baseline):
        comparator.add(here, there)
    return comparator.result()


def ids(n: int) -> list[str]:
    return [f"dsit_{i:03d}" for i in range(n)]


def test_the_spec_reference_fix_of_six_items() -> None:
    # 12 items; the baseline failed 6 of them, this run passes exactly those 6 and still
    # fails the other 6: a pass rate of 6/12 now, 0/12 before.
    items = ids(12)
    baseline = [scored(i, passed=False, contains=0.0) for i in items]
    current = [scored(i, passed=n < 6, contains=1.0 if n < 6 else 0.0) for n, i in enumerate(items)]
    result = compare(current, baseline)
    assert result["run_id"] == "evrun_base"
    assert result["compared_item_count"] == 12
    assert result["pass_rate_delta"] == 0.5
    assert result["flipped"] == {"improved": 6, "regressed": 0}
    assert result["p_value"] == 0.03125
    assert result["scorers"] == {"contains": {"mean_delta": 0.5, "pass_rate_delta": 0.5}}
    assert result["added_item_count"] == result["removed_item_count"] == 0
    assert "grouping" not in result


def test_no_shared_item_means_null_delta_and_p_value() -> None:
    result = compare([scored("a", True), scored("c", True)], [scored("b", False)])
    assert result["compared_item_count"] == 0
    assert result["pass_rate_delta"] is None
    assert result["p_value"] is None
    assert result["flipped"] == {"improved": 0, "regressed": 0}
    assert result["added_item_count"] == 2
    assert result["removed_item_count"] == 1
    assert result["scorers"] == {}


def test_nothing_flipped_has_p_value_one() -> None:
    items = ids(5)
    result = compare([scored(i, True) for i in items], [scored(i, True) for i in items])
    assert result["pass_rate_delta"] == 0
    assert result["p_value"] == 1.0


def test_errored_on_either_side_is_added_or_removed_never_compared() -> None:
    current = [scored("a", True), errored("b"), scored("c", False), errored("d"), scored("f", True)]
    baseline = [
        scored("a", False),
        scored("b", True),
        errored("c"),
        errored("d"),
        scored("e", True),
    ]
    result = compare(current, baseline)
    assert result["compared_item_count"] == 1  # only "a"
    assert result["added_item_count"] == 2  # "c" errored there, "f" new
    assert result["removed_item_count"] == 2  # "b" errored here, "e" gone
    assert result["flipped"] == {"improved": 1, "regressed": 0}
    assert result["pass_rate_delta"] == 1.0


def test_deltas_recompute_both_sides_over_the_intersection() -> None:
    # Baseline's extra failing items must not flatter the current run.
    current = [scored("a", True, judge=1.0), scored("b", False, judge=0.5)]
    baseline = [
        scored("a", True, judge=1.0),
        scored("b", True, judge=1.0),
        scored("x", False, judge=0.0),
        scored("y", False, judge=0.0),
    ]
    result = compare(current, baseline)
    assert result["compared_item_count"] == 2
    assert result["pass_rate_delta"] == -0.5
    assert result["flipped"] == {"improved": 0, "regressed": 1}
    assert result["scorers"]["judge"]["mean_delta"] == pytest.approx(-0.25)
    assert result["scorers"]["judge"]["pass_rate_delta"] == -0.5


def test_a_scorer_only_one_side_ran_is_omitted() -> None:
    current = [
        scored("a", True, contains=1.0, judge=1.0),
        scored("b", False, contains=0.0, judge=0.0),
    ]
    baseline = [
        scored("a", True, contains=1.0, exact=1.0),
        scored("b", True, contains=1.0, exact=1.0),
    ]
    scorers = compare(current, baseline)["scorers"]
    assert list(scorers) == ["contains"]
    assert scorers["contains"] == {"mean_delta": -0.5, "pass_rate_delta": -0.5}


def test_a_scorer_present_only_on_items_not_compared_is_omitted() -> None:
    current = [scored("a", True, contains=1.0), scored("new", True, judge=1.0)]
    baseline = [scored("a", True, contains=1.0), scored("gone", True, judge=1.0)]
    assert list(compare(current, baseline)["scorers"]) == ["contains"]


def test_grouped_comparison_with_holm_and_ungrouped_compared_items() -> None:
    current: list[ItemOutcome] = []
    baseline: list[ItemOutcome] = []
    # "refusal": 8 items that all regressed. "lookup": 9 improved, 6 regressed.
    for n in range(8):
        current.append(scored(f"r{n}", False, group="refusal"))
        baseline.append(scored(f"r{n}", True, group="refusal"))
    for n in range(15):
        current.append(scored(f"l{n:02d}", n < 9, group="lookup"))
        baseline.append(scored(f"l{n:02d}", n >= 9, group="lookup"))
    # Ungrouped: one compared item with a non-string label, one added with none.
    current += [scored("u1", True, group=3), scored("u2", True)]
    baseline.append(scored("u1", True, group=3))
    key = lambda item: item.dataset_item_id  # noqa: E731
    result = compare(sorted(current, key=key), sorted(baseline, key=key), group_by="kind")
    grouping = result["grouping"]
    assert grouping["group_by"] == "kind"
    assert grouping["ungrouped_item_count"] == 1  # only compared items count
    refusal = grouping["groups"]["refusal"]
    assert refusal["flipped"] == {"improved": 0, "regressed": 8}
    assert refusal["p_value"] == 2 / 256
    assert refusal["p_value_adjusted"] == 4 / 256  # two groups tested
    lookup = grouping["groups"]["lookup"]
    assert lookup["p_value"] == 0.60723876953125
    assert lookup["p_value_adjusted"] == 0.60723876953125
    assert lookup["pass_rate_delta"] == pytest.approx(3 / 15)
    assert (
        set(lookup)
        == set(refusal)
        == {
            "compared_item_count",
            "added_item_count",
            "removed_item_count",
            "pass_rate_delta",
            "pass_rate_delta_interval",
            "flipped",
            "both_passed_count",
            "p_value",
            "scorers",
            "p_value_adjusted",
        }
    )
    assert result["added_item_count"] == 1
    assert result["compared_item_count"] == 24
    assert result["flipped"] == {"improved": 9, "regressed": 14}
    # The paired interval reads the full table: u1 passed in both runs.
    assert result["both_passed_count"] == 1
    assert result["pass_rate_delta_interval"] == paired_delta_interval(1, 9, 14, 24)
    assert refusal["pass_rate_delta_interval"] == paired_delta_interval(0, 0, 8, 8)


def test_group_label_comes_from_the_current_side_and_counts_drift_per_group() -> None:
    current = [scored("a", True, group="new_label"), scored("b", True, group="x")]
    baseline = [scored("a", False, group="old_label"), scored("c", True, group="x")]
    groups = compare(current, baseline, group_by="kind")["grouping"]["groups"]
    assert set(groups) == {"new_label", "x"}
    assert groups["new_label"]["compared_item_count"] == 1
    assert groups["x"]["added_item_count"] == 1
    assert groups["x"]["removed_item_count"] == 1  # "c", labelled from the baseline side
    assert groups["x"]["pass_rate_delta"] is None
    assert groups["x"]["p_value"] is None
    assert groups["x"]["p_value_adjusted"] is None


def test_merge_join_is_a_full_outer_join() -> None:
    current = [scored(i, True) for i in ["a", "c", "d"]]
    baseline = [scored(i, True) for i in ["b", "c", "e"]]
    pairs = [
        (here.dataset_item_id if here else None, there.dataset_item_id if there else None)
        for here, there in merge_join(iter(current), iter(baseline))
    ]
    assert pairs == [("a", None), (None, "b"), ("c", "c"), ("d", None), (None, "e")]
    assert list(merge_join([], [])) == []


@pytest.mark.parametrize("order", [["b", "a"], ["a", "a"]])
def test_merge_join_refuses_unsorted_or_duplicate_ids(order: list[str]) -> None:
    with pytest.raises(ValueError):
        list(merge_join([scored(i, True) for i in order], []))
    with pytest.raises(ValueError):
        list(merge_join([], [scored(i, True) for i in order]))


def test_comparator_refuses_an_empty_or_mismatched_pair() -> None:
    comparator = BaselineComparator("evrun_base", None)
    with pytest.raises(ValueError):
        comparator.add(None, None)
    with pytest.raises(ValueError):
        comparator.add(scored("a", True), scored("b", True))
