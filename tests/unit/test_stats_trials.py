"""Trial-aware figures: the run's ``trials`` block, the comparison's, their accumulators'
merge and JSON state, and how the aggregator, the comparator and the gate use them."""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.stats import (
    BaselineComparator,
    ItemOutcome,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    merge_join,
    reduce_trials,
    verdict,
)
from chalicelib.stats.pass_at_k import pass_at_k
from chalicelib.stats.trials import PairedTrialTally, TrialTally, flip_rate


def trials_of(item: str, verdicts: str) -> list[TrialOutcome]:
    """``verdicts``: one character per trial, ``1`` passed, ``0`` failed, ``e`` errored."""
    return [
        TrialOutcome(
            dataset_item_id=item,
            trial=number,
            errored=mark == "e",
            scores=() if mark == "e" else (ScorerScore("numeric", float(mark), mark == "1"),),
        )
        for number, mark in enumerate(verdicts, start=1)
    ]


def items_of(patterns: list[str], reducer: str = "all") -> list[ItemOutcome]:
    return [reduce_trials(trials_of(f"dsit_{i:03d}", p), reducer) for i, p in enumerate(patterns)]


def test_a_run_of_five_items_by_hand() -> None:
    tally = TrialTally()
    for c in (5, 3, 0, 4, 1):
        tally.add(c, 5)
    summary = tally.summary(5)
    assert summary["count"] == 5 and summary["item_count"] == 5 and summary["trial_count"] == 25
    assert summary["pass_rate"] == pytest.approx(13 / 25)
    # pass@2 = mean of 1 - C(5-c, 2)/C(5, 2): (1 + 0.9 + 0 + 1 + 0.4) / 5.
    assert summary["pass_at_k"]["2"] == pytest.approx((1 + 0.9 + 0 + 1 + 0.4) / 5)
    # pass^2 = mean of C(c, 2)/C(5, 2): (1 + 0.3 + 0 + 0.6 + 0) / 5.
    assert summary["pass_hat_k"]["2"] == pytest.approx((1 + 0.3 + 0 + 0.6 + 0) / 5)
    assert summary["pass_at_k"]["5"] == 0.8 and summary["pass_hat_k"]["5"] == 0.2
    # Disagreeing pairs of trials: 0, 6, 0, 4, 4 of 10 each.
    assert summary["noise_floor"] == {
        "flip_rate": pytest.approx(14 / 50),
        "items": 5,
        "method": "pairwise_disagreement",
    }
    interval = summary["pass_rate_interval"]
    assert interval["low"] < 13 / 25 < interval["high"]
    assert interval["method"] == "wilson_effective_n" and 5 <= interval["effective_n"] <= 25


def test_flip_rate_is_the_share_of_disagreeing_trial_pairs() -> None:
    rng = random.Random(9)
    for _ in range(200):
        rows = [(rng.randint(1, 10), rng.random()) for _ in range(rng.randint(1, 20))]
        tally = TrialTally()
        shares = []
        for n, p in rows:
            outcomes = [rng.random() < p for _ in range(n)]
            tally.add(sum(outcomes), n)
            if n >= 2:
                pairs = list(itertools.combinations(outcomes, 2))
                shares.append(Fraction(sum(a != b for a, b in pairs), len(pairs)))
        rate, items = flip_rate(tally.counts)
        assert items == len(shares)
        if shares:
            assert rate == pytest.approx(float(sum(shares) / len(shares)), abs=1e-12)
        else:
            assert rate is None


def test_items_with_fewer_usable_trials_than_k_are_left_out_of_pass_at_k() -> None:
    tally = TrialTally()
    tally.add(2, 2)  # two trials of five usable (three errored)
    tally.add(1, 5)
    summary = tally.summary(5)
    assert summary["k_item_count"] == {"1": 2, "2": 2, "3": 1, "4": 1, "5": 1}
    assert summary["pass_at_k"]["3"] == pass_at_k(5, 1, 3)
    assert summary["pass_at_k"]["2"] == pytest.approx((1.0 + pass_at_k(5, 1, 2)) / 2)


def test_no_item_has_no_figures() -> None:
    summary = TrialTally().summary(3)
    assert summary["pass_rate"] is None and summary["pass_rate_interval"] is None
    assert summary["pass_at_k"] == {"1": None, "2": None, "3": None}
    assert summary["noise_floor"]["flip_rate"] is None and summary["noise_floor"]["items"] == 0
    paired = PairedTrialTally().summary()
    assert paired["item_count"] == 0 and paired["pass_rate_delta"] is None
    assert paired["p_value"] is None and paired["pass_rate_delta_interval"] is None


def random_pairs(rng: random.Random, size: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    found = []
    for _ in range(size):
        n1, n0 = rng.randint(1, 5), rng.randint(1, 5)
        found.append(((rng.randint(0, n1), n1), (rng.randint(0, n0), n0)))
    return found


def test_halves_merge_into_one_pass_and_state_is_plain_json() -> None:
    rng = random.Random(21)
    pairs = random_pairs(rng, 301)
    whole, first, second = TrialTally(), TrialTally(), TrialTally()
    paired, paired_first, paired_second = PairedTrialTally(), PairedTrialTally(), PairedTrialTally()
    for index, (here, there) in enumerate(pairs):
        whole.add(*here)
        paired.add(here, there)
        (first if index < 150 else second).add(*here)
        (paired_first if index < 150 else paired_second).add(here, there)
    first.merge(second)
    paired_first.merge(paired_second)
    assert first.summary(5) == whole.summary(5)
    assert paired_first.summary() == paired.summary()
    restored = TrialTally.from_state(json.loads(json.dumps(whole.to_state())))
    assert restored.summary(5) == whole.summary(5)
    paired_restored = PairedTrialTally.from_state(json.loads(json.dumps(paired.to_state())))
    assert paired_restored.summary() == paired.summary()
    # The state is compact: distinct (c, n) pairs, not items.
    assert len(whole.to_state()["items"]) <= 20


def test_state_with_impossible_counts_is_refused() -> None:
    with pytest.raises(ValueError):
        TrialTally.from_state({"items": [[3, 2, 1]]})
    with pytest.raises(ValueError):
        PairedTrialTally.from_state({"pairs": [[1, 1, 1, 0, 4]]})
    with pytest.raises(ValueError):
        TrialTally().add(0, 0)


def test_a_paired_comparison_by_hand() -> None:
    tally = PairedTrialTally()
    # Differences: -0.6, -0.4, 0, -0.2, +0.2 (five trials each side).
    for here, there in [(2, 5), (1, 3), (4, 4), (0, 1), (3, 2)]:
        tally.add((here, 5), (there, 5))
    summary = tally.summary()
    assert summary["item_count"] == 5 and summary["unit"] == "trial_proportion"
    assert summary["pass_rate_delta"] == pytest.approx(-0.2)
    assert summary["current_pass_rate"] == pytest.approx(0.4)
    assert summary["baseline_pass_rate"] == pytest.approx(0.6)
    assert summary["improved_item_count"] == 1 and summary["regressed_item_count"] == 3
    assert summary["difference_sd"] == pytest.approx(
        math.sqrt(((-0.4) ** 2 + (-0.2) ** 2 + 0.2**2 + 0 + 0.4**2) / 4)
    )
    # Sign patterns of (3, 2, 1, 1) (x 1/5) with |sum| >= 5: +-(3+2+1-1), +-(3+2+1+1),
    # +-(3+2-1+1): 6 of 16.
    assert summary["p_value"] == 6 / 16
    assert summary["exact"] is True and summary["p_value_method"] == "sign_flip_exact"
    interval = summary["pass_rate_delta_interval"]
    assert interval["low"] < -0.2 < interval["high"]
    assert interval["method"] == "mover_clustered_wilson"


def test_aggregator_adds_the_trials_block_only_with_trials() -> None:
    items = items_of(["11111", "1e010", "eeeee", "00000"])
    one, many = RunAggregator(None), RunAggregator(None, trials=5)
    for item in items:
        one.add(item)
        many.add(item)
    assert "trials" not in one.result()
    block = many.result()["trials"]
    # The errored item counts nowhere; "1e010" has 4 usable trials, 2 passed.
    assert block["item_count"] == 3 and block["trial_count"] == 14
    assert block["pass_rate"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert block["k_item_count"]["5"] == 2
    assert many.result()["errored_item_count"] == 1


def compare(current: list[ItemOutcome], baseline: list[ItemOutcome]) -> dict[str, Any]:
    comparator = BaselineComparator("evrun_base", None, trials=5)
    for here, there in merge_join(current, baseline):
        comparator.add(here, there)
    return comparator.result()


def test_comparator_pairs_items_compared_in_both_runs() -> None:
    baseline = items_of(["11111", "11100", "00000", "11111"])
    current = items_of(["11111", "10000", "00000"])  # the fourth item is gone
    trials = compare(current, baseline)["trials"]
    assert trials["item_count"] == 3 and trials["uncounted_item_count"] == 0
    assert trials["pass_rate_delta"] == pytest.approx((0 - 0.4 + 0) / 3)
    # An outcome without its trial counts (a digest from before they were kept) is left out.
    unknown = ItemOutcome("dsit_000", errored=False, passed=True, trial_count=5)
    trials = compare([unknown, *current[1:]], baseline)["trials"]
    assert trials["item_count"] == 2 and trials["uncounted_item_count"] == 1


def test_the_gate_decides_on_the_trial_figures() -> None:
    # 200 items, the baseline passes 4 of 5 trials of each, the run 2 of 5: a 40-point drop
    # in trial proportions while the "any" reducer sees every item pass in both runs.
    baseline = items_of(["11110"] * 200, reducer="any")
    current = items_of(["11000"] * 200, reducer="any")
    comparison = compare(current, baseline)
    assert comparison["pass_rate_delta"] == 0.0  # the reduced items did not move
    passed, reasons = verdict({}, None, 0.1, comparison)
    assert passed is False
    assert reasons[0]["unit"] == "trial_proportion"
    assert reasons[0]["conclusion"] == "regressed"
    assert reasons[0]["pass_rate_delta"] == pytest.approx(-0.4)
    assert "per-item trial pass proportions" in reasons[0]["explanation"]


def test_the_gate_names_the_sign_flip_test_when_it_decides() -> None:
    interval = {"low": -0.4, "high": -0.05, "level": 0.95}
    comparison = {
        "trials": {
            "item_count": 30,
            "pass_rate_delta": -0.2,
            "pass_rate_delta_interval": interval,
            "p_value": 0.01,
            "difference_sd": 0.3,
        }
    }
    passed, reasons = verdict({}, None, 0.1, comparison)
    assert passed is False and reasons[0]["conclusion"] == "regressed"
    assert "the sign-flip p = 0.01 < 0.05" in reasons[0]["explanation"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.integers(1, 10).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
        min_size=1,
        max_size=30,
    )
)
def test_pass_at_k_rises_and_pass_hat_k_falls_with_k(items: list[tuple[int, int]]) -> None:
    tally = TrialTally()
    for c, n in items:
        tally.add(c, n)
    summary = tally.summary(10)
    assert summary["pass_at_k"]["1"] == pytest.approx(summary["pass_hat_k"]["1"])
    assert summary["pass_at_k"]["1"] == pytest.approx(summary["pass_rate"])
    interval = summary["pass_rate_interval"]
    assert 0.0 <= interval["low"] <= summary["pass_rate"] <= interval["high"] <= 1.0
    previous_at, previous_hat = 0.0, 1.0
    for k in range(1, 11):
        at_k, hat_k = summary["pass_at_k"][str(k)], summary["pass_hat_k"][str(k)]
        if summary["k_item_count"][str(k)] != summary["item_count"]:
            break  # fewer items from here on: the averages are over other items
        assert at_k >= previous_at - 1e-12 and hat_k <= previous_hat + 1e-12
        assert hat_k <= at_k + 1e-12
        previous_at, previous_hat = at_k, hat_k
    rate = summary["noise_floor"]["flip_rate"]
    assert rate is None or 0.0 <= rate <= 1.0
