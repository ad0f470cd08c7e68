"""The signed-rank test and the t interval by their properties, the method scipy's ``auto``
would pick at each boundary, brute-force enumeration, a mergeable tally, and the baseline
comparison that carries them per continuous scorer and per group with Holm."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.stats import BaselineComparator, ItemOutcome, ScorerScore, merge_join
from chalicelib.stats.holm import holm_adjust
from chalicelib.stats.student_t import paired_t_interval, t_isf, t_sf
from chalicelib.stats.tally import PairedScorerTally
from chalicelib.stats.wilcoxon import (
    EXACT,
    EXACT_PERMUTATION,
    NORMAL,
    _signed_rank_counts,
    signed_rank_test,
)

# Differences on a coarse grid, so ties and zeros are common.
grid_differences = st.lists(st.integers(-6, 6).map(lambda k: k / 8), min_size=1, max_size=70)


def brute_force_p(differences: list[float]) -> float:
    """Two-sided p over every sign pattern of the non-zero |d| (average ranks), by listing."""
    nonzero = [d for d in differences if d != 0]
    sizes = sorted(abs(d) for d in nonzero)
    rank = {size: (2 * sizes.index(size) + sizes.count(size) + 1) / 2 for size in sizes}
    observed = sum(rank[abs(d)] for d in nonzero if d > 0)
    totals = [
        sum(rank[abs(d)] for d, sign in zip(nonzero, signs, strict=True) if sign)
        for signs in itertools.product((0, 1), repeat=len(nonzero))
    ]
    at_most = sum(total <= observed for total in totals)
    at_least = sum(total >= observed for total in totals)
    return min(1.0, 2 * min(at_most, at_least) / len(totals))


# --- which method, where scipy's auto picks it ----------------------------------------------


@pytest.mark.parametrize(
    ("differences", "method"),
    [
        ([float(k) for k in range(1, 51)], EXACT),  # 50 distinct, no zero
        ([float(k) for k in range(1, 52)], NORMAL),  # 51: asymptotic whatever the data
        ([1.0, 2.0, 2.0] + [float(k) for k in range(3, 13)], EXACT_PERMUTATION),  # 13, a tie
        ([1.0, 2.0, 2.0] + [float(k) for k in range(3, 14)], NORMAL),  # 14, a tie
        ([0.0] + [float(k) for k in range(1, 13)], EXACT_PERMUTATION),  # 13 with a zero
        ([0.0] + [float(k) for k in range(1, 14)], NORMAL),  # 14 with a zero
        ([0.0] * 3 + [float(k) for k in range(1, 11)], EXACT_PERMUTATION),
    ],
)
def test_method_follows_scipys_auto(differences: list[float], method: str) -> None:
    assert signed_rank_test(differences).method == method


def test_a_zero_counts_towards_the_size_limit_though_it_is_dropped() -> None:
    # 50 non-zero distinct differences and one zero: 51 values, so scipy goes asymptotic.
    result = signed_rank_test([0.0] + [float(k) for k in range(1, 51)])
    assert (result.method, result.n, result.zero_count) == (NORMAL, 50, 1)


def test_no_non_zero_difference_is_p_one() -> None:
    for size in (1, 13, 14, 80):
        result = signed_rank_test([0.0] * size)
        assert (result.p_value, result.n, result.statistic) == (1.0, 0, 0.0)
        assert result.effect_size is None and result.z is None


def test_empty_sample_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        signed_rank_test([])
    with pytest.raises(ValueError, match="finite"):
        signed_rank_test([math.nan])


# --- exact values ----------------------------------------------------------------------------


def test_exact_distribution_counts_are_symmetric_and_sum_to_two_to_the_n() -> None:
    for n in (1, 2, 5, 10, 20, 50):
        counts = _signed_rank_counts(n)
        assert sum(counts) == 2**n
        assert len(counts) == n * (n + 1) // 2 + 1
        assert counts == counts[::-1]


def test_all_positive_small_sample_is_two_over_two_to_the_n() -> None:
    result = signed_rank_test([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert result.p_value == 2 / 2**6 and result.statistic == 0.0
    assert result.effect_size == 1.0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-4, 4).map(lambda k: k / 4), min_size=1, max_size=12))
def test_small_samples_match_brute_force_enumeration(differences: list[float]) -> None:
    result = signed_rank_test(differences)
    if result.n:
        assert result.method in (EXACT, EXACT_PERMUTATION)
        assert result.p_value == pytest.approx(brute_force_p(differences), rel=1e-12)


# --- properties --------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(grid_differences)
def test_flipping_every_sign_keeps_the_test_and_negates_the_effect(d: list[float]) -> None:
    here, there = signed_rank_test(d), signed_rank_test([-x for x in d])
    assert here.p_value == pytest.approx(there.p_value, rel=1e-12)
    assert here.statistic == there.statistic and here.method == there.method
    if here.effect_size is not None:
        assert there.effect_size == pytest.approx(-here.effect_size)
    assert 0.0 < here.p_value <= 1.0


@settings(max_examples=100, deadline=None)
@given(grid_differences, st.sampled_from([0.25, 2.0, 8.0]))
def test_the_test_reads_ranks_only(d: list[float], scale: float) -> None:
    # Scaling by a power of two changes no tie and no order.
    assert signed_rank_test([x * scale for x in d]) == signed_rank_test(d)


@settings(max_examples=100, deadline=None)
@given(grid_differences)
def test_a_counter_and_the_values_give_the_same_test(d: list[float]) -> None:
    assert signed_rank_test(Counter(d)) == signed_rank_test(d)


def test_a_consistent_drop_becomes_significant_as_items_accrue() -> None:
    rng = random.Random(7)
    p_values = []
    for n in (10, 40, 160, 640):
        d = [rng.gauss(-0.1, 0.2) for _ in range(n)]
        p_values.append(signed_rank_test(d).p_value)
    assert p_values[-1] < 1e-6 and p_values[-1] < p_values[0]


# --- t interval and quantile -----------------------------------------------------------------


def test_t_tails_match_closed_forms() -> None:
    for t in (0.1, 1.0, 3.0, 40.0, 1e6):
        assert t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-12)
        assert t_sf(t, 2) == pytest.approx(0.5 - t / (2 * math.sqrt(2 + t * t)), rel=1e-12)
        assert t_sf(-t, 3) == pytest.approx(1 - t_sf(t, 3), rel=1e-14)


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-12, 0.5), st.floats(0.5, 1e6))
def test_t_quantile_inverts_the_tail(tail: float, df: float) -> None:
    assert t_sf(t_isf(tail, df), df) == pytest.approx(tail, rel=1e-9)


def test_t_quantile_tends_to_the_normal_one() -> None:
    assert t_isf(0.025, 1e9) == pytest.approx(1.959963984540054, rel=1e-8)
    assert t_isf(0.025, 29) == pytest.approx(2.045229642132703, rel=1e-12)


def test_paired_t_interval_figures() -> None:
    interval = paired_t_interval(Counter([0.1, -0.2, 0.3, 0.0, -0.1]))
    assert interval is not None and interval["method"] == "paired_t"
    # mean 0.02, sd 0.19235, se 0.086023, t(0.975, 4) 2.776445
    assert interval["low"] == pytest.approx(0.02 - 2.7764451051977987 * 0.0860232526704263)
    assert interval["high"] == pytest.approx(0.02 + 2.7764451051977987 * 0.0860232526704263)
    assert paired_t_interval(Counter([0.4])) is None
    assert paired_t_interval(Counter({0.4: 3})) == {
        "low": 0.4,
        "high": 0.4,
        "level": 0.95,
        "method": "paired_t",
    }


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=40), st.floats(-1, 1))
def test_t_interval_holds_the_mean_and_shifts_with_it(d: list[float], shift: float) -> None:
    interval = paired_t_interval(Counter(d))
    assert interval is not None
    mean = math.fsum(d) / len(d)
    assert interval["low"] <= mean + 1e-12 and mean - 1e-12 <= interval["high"]
    wider = paired_t_interval(Counter(d), level=0.99)
    assert wider is not None and wider["low"] <= interval["low"] + 1e-12
    moved = paired_t_interval(Counter(x + shift for x in d))
    assert moved is not None
    assert moved["low"] == pytest.approx(interval["low"] + shift, abs=1e-9)


# --- the tally: continuous or not, mergeable ---------------------------------------------------


def _fill(tally: PairedScorerTally, pairs: list[tuple[float, float]]) -> PairedScorerTally:
    for here, there in pairs:
        tally.add(here, here >= 0.5, there, there >= 0.5)
    return tally


def test_a_binary_scorer_carries_no_continuous_figures() -> None:
    summary = _fill(PairedScorerTally(), [(1.0, 0.0), (0.0, 0.0), (1.0, 1.0)]).summary()
    assert set(summary) == {"mean_delta", "pass_rate_delta"}


def test_one_fractional_score_makes_a_scorer_continuous() -> None:
    summary = _fill(PairedScorerTally(), [(1.0, 0.0), (0.0, 0.5), (1.0, 1.0)]).summary()
    assert summary["continuous"] is True
    assert summary["wilcoxon"] == signed_rank_test([1.0, -0.5, 0.0]).as_dict()
    assert summary["mean_delta_interval"] == paired_t_interval(Counter([1.0, -0.5, 0.0]))


def test_float_noise_neither_breaks_ties_nor_makes_zeros() -> None:
    tally = _fill(PairedScorerTally(), [(0.3, 0.2), (0.2, 0.1), (0.1 + 0.2, 0.3)])
    assert tally.differences == Counter({0.1: 2, 0.0: 1})


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=60),
    st.integers(0, 60),
)
def test_merging_the_halves_of_a_stream_is_one_pass(
    pairs: list[tuple[float, float]], cut: int
) -> None:
    whole = _fill(PairedScorerTally(), pairs)
    first = _fill(PairedScorerTally(), pairs[:cut])
    first.merge(_fill(PairedScorerTally(), pairs[cut:]))
    merged, single = first.summary(), whole.summary()
    assert merged["mean_delta"] == pytest.approx(single["mean_delta"], rel=1e-15, abs=1e-15)
    assert {k: v for k, v in merged.items() if k != "mean_delta"} == {
        k: v for k, v in single.items() if k != "mean_delta"
    }
    # The state is plain JSON and rebuilds the same tally.
    rebuilt = PairedScorerTally.from_state(json.loads(json.dumps(first.state())))
    assert rebuilt.summary() == merged


# --- the baseline comparison ---------------------------------------------------------------------


def scored(item: str, group: str | None = None, **scores: float) -> ItemOutcome:
    return ItemOutcome(
        dataset_item_id=item,
        errored=False,
        passed=all(value >= 0.5 for value in scores.values()),
        scores={key: ScorerScore(key, value, value >= 0.5) for key, value in scores.items()},
        group=group,
    )


def compare(
    current: list[ItemOutcome], baseline: list[ItemOutcome], group_by: str | None = None
) -> dict[str, Any]:
    comparator = BaselineComparator("evrun_base", group_by)
    for here, there in merge_join(current, baseline):
        comparator.add(here, there)
    return comparator.result()


def test_the_comparison_tests_each_continuous_scorer() -> None:
    rng = random.Random(3)
    before = [round(rng.uniform(0.3, 1.0), 2) for _ in range(30)]
    after = [round(score - 0.1 + rng.uniform(-0.05, 0.05), 2) for score in before]
    items = [f"dsit_{i:02d}" for i in range(30)]
    flags = [float(i % 2) for i in range(30)]
    baseline = [scored(i, judge=b, exact=f) for i, b, f in zip(items, before, flags, strict=True)]
    current = [scored(i, judge=a, exact=f) for i, a, f in zip(items, after, flags, strict=True)]
    scorers = compare(current, baseline)["scorers"]
    assert "wilcoxon" not in scorers["exact"]
    judge = scorers["judge"]
    d = [round(a - b, 12) for a, b in zip(after, before, strict=True)]
    assert judge["wilcoxon"] == signed_rank_test(d).as_dict()
    assert judge["wilcoxon"]["p_value"] < 1e-5
    interval = judge["mean_delta_interval"]
    assert interval["low"] < judge["mean_delta"] < interval["high"] < 0


def test_groups_get_the_test_with_holm_per_scorer() -> None:
    rng = random.Random(5)
    current: list[ItemOutcome] = []
    baseline: list[ItemOutcome] = []
    for i in range(90):
        group = ("lookup", "refusal", "smalltalk")[i % 3]
        drop = {"lookup": 0.2, "refusal": 0.0, "smalltalk": 0.05}[group]
        before = round(rng.uniform(0.4, 0.9), 2)
        after = round(before - drop + rng.uniform(-0.1, 0.1), 2)
        # smalltalk's "exact" scorer is fractional there only: only that group tests it.
        exact = 0.5 if group == "smalltalk" and i % 2 else 1.0
        baseline.append(scored(f"dsit_{i:03d}", group, judge=before, exact=1.0))
        current.append(scored(f"dsit_{i:03d}", group, judge=after, exact=exact))
    groups = compare(current, baseline, "kind")["grouping"]["groups"]
    tests = [groups[label]["scorers"]["judge"]["wilcoxon"] for label in sorted(groups)]
    assert [t["p_value_adjusted"] for t in tests] == holm_adjust([t["p_value"] for t in tests])
    assert tests[0]["p_value_adjusted"] < 0.001  # lookup dropped 0.2
    assert "wilcoxon" not in groups["lookup"]["scorers"]["exact"]
    exact = groups["smalltalk"]["scorers"]["exact"]["wilcoxon"]
    assert exact["p_value_adjusted"] == exact["p_value"]  # a family of one
