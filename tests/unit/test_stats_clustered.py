"""Intervals over clustered trials: one trial per item is exactly Wilson / Newcombe, the
Wilson step matches statsmodels on the effective n, and seeded simulations show the
coverage (and the naive all-trials Wilson interval's lack of it)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from statsmodels.stats.proportion import proportion_confint

from chalicelib.stats.clustered import (
    Moments,
    clustered_wilson_interval,
    effective_n,
    paired_proportions_interval,
)
from chalicelib.stats.intervals import wilson_interval
from chalicelib.stats.paired_interval import paired_delta_interval
from chalicelib.stats.trials import PairedTrialTally, TrialTally


def moments_of(counts: list[tuple[int, int]]) -> Moments:
    tally = Counter(counts)
    return Moments.of((c / n, k, n * k) for (c, n), k in tally.items())


def simulate_items(rng: random.Random, items: int, trials: int, a: float, b: float) -> list[int]:
    """Passes per item: each item's own pass rate from Beta(a, b), its trials from it."""
    passes = []
    for _ in range(items):
        p = rng.betavariate(a, b)
        passes.append(sum(rng.random() < p for _ in range(trials)))
    return passes


def test_one_trial_per_item_is_wilson() -> None:
    rng = random.Random(1)
    for _ in range(2000):
        n = rng.randint(1, 300)
        passed = rng.randint(0, n)
        interval = clustered_wilson_interval(
            moments_of([(1, 1)] * passed + [(0, 1)] * (n - passed))
        )
        wilson = wilson_interval(passed, n)
        assert wilson is not None
        assert interval["effective_n"] == n
        assert interval["low"] == pytest.approx(wilson["low"], abs=1e-12)
        assert interval["high"] == pytest.approx(wilson["high"], abs=1e-12)


def test_one_trial_per_item_is_newcombe_on_ten_thousand_tables() -> None:
    rng = random.Random(2)
    for _ in range(10_000):
        n = rng.randint(1, 300)
        cuts = sorted(rng.randint(0, n) for _ in range(3))
        both, improved, regressed = cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1]
        tally = PairedTrialTally()
        cells = [((1, 1), (1, 1))] * both + [((1, 1), (0, 1))] * improved
        cells += [((0, 1), (1, 1))] * regressed + [((0, 1), (0, 1))] * (n - cuts[2])
        for here, there in cells:
            tally.add(here, there)
        ours = tally.summary()["pass_rate_delta_interval"]
        newcombe = paired_delta_interval(both, improved, regressed, n)
        assert newcombe is not None
        assert abs(ours["low"] - newcombe["low"]) <= 1e-9
        assert abs(ours["high"] - newcombe["high"]) <= 1e-9


def test_the_wilson_step_is_statsmodels_wilson_on_the_effective_n() -> None:
    rng = random.Random(3)
    for _ in range(10_000):
        trials = rng.randint(2, 10)
        passes = simulate_items(rng, rng.randint(2, 60), trials, rng.uniform(0.2, 3), 1.0)
        moments = moments_of([(c, trials) for c in passes])
        interval = clustered_wilson_interval(moments)
        n_eff = effective_n(moments)
        low, high = proportion_confint(moments.mean * n_eff, n_eff, alpha=0.05, method="wilson")
        assert abs(interval["low"] - max(0.0, low)) <= 1e-9
        assert abs(interval["high"] - min(1.0, high)) <= 1e-9


def test_effective_n_lies_between_items_and_trials() -> None:
    assert effective_n(moments_of([(5, 5)] * 10)) == 10  # all pass: the cautious items
    assert effective_n(moments_of([(0, 5)] * 10)) == 10
    assert effective_n(moments_of([(1, 2)] * 10)) == 20  # no spread inside 0..1: the trials
    assert effective_n(moments_of([(5, 5)] * 5 + [(0, 5)] * 5)) == 10  # all-or-nothing items
    assert effective_n(moments_of([(3, 5)])) == 1
    rng = random.Random(4)
    for _ in range(500):
        passes = simulate_items(rng, rng.randint(2, 50), 5, 1.0, 1.0)
        n_eff = effective_n(moments_of([(c, 5) for c in passes]))
        assert len(passes) <= n_eff <= 5 * len(passes)


def coverage(
    rng: random.Random, runs: int, items: int, trials: int, a: float, b: float
) -> tuple[float, float]:
    """Share of runs whose clustered / naive all-trials Wilson interval holds a/(a+b)."""
    truth = a / (a + b)
    clustered = naive = 0
    for _ in range(runs):
        passes = simulate_items(rng, items, trials, a, b)
        interval = clustered_wilson_interval(moments_of([(c, trials) for c in passes]))
        clustered += interval["low"] <= truth <= interval["high"]
        flat = wilson_interval(sum(passes), items * trials)
        assert flat is not None
        naive += flat["low"] <= truth <= flat["high"]
    return clustered / runs, naive / runs


@pytest.mark.parametrize(
    ("items", "trials", "a", "b"),
    [(30, 5, 0.7, 0.3), (100, 5, 2.0, 1.0), (20, 10, 0.5, 0.5), (50, 3, 4.0, 4.0)],
)
def test_clustered_interval_covers_where_the_naive_one_does_not(
    items: int, trials: int, a: float, b: float
) -> None:
    # 2,000 seeded runs per configuration: items of differing difficulty (Beta(a, b)), the
    # trials of each from its own pass rate. Coverage within 95% +- 3 SE (or above).
    runs = 2000
    rng = random.Random(items * 1000 + trials)
    clustered, naive = coverage(rng, runs, items, trials, a, b)
    three_se = 3 * math.sqrt(0.95 * 0.05 / runs)
    assert clustered >= 0.95 - three_se, clustered
    assert clustered <= 0.985, clustered
    if a + b < 2:  # strongly clustered items: treating trials as independent undercovers
        assert naive < 0.85, naive


def test_paired_interval_covers_a_real_drop() -> None:
    # Each item's baseline rate from Beta(2, 1); the change multiplies it by 0.8, so the
    # true delta of the mean item rate is -0.2 * 2/3. 2,000 seeded comparisons of 40 items x 5.
    rng = random.Random(41)
    truth = -0.2 * 2 / 3
    runs, covered = 2000, 0
    for _ in range(runs):
        tally = PairedTrialTally()
        for _ in range(40):
            p = rng.betavariate(2.0, 1.0)
            there = sum(rng.random() < p for _ in range(5))
            here = sum(rng.random() < 0.8 * p for _ in range(5))
            tally.add((here, 5), (there, 5))
        interval = tally.summary()["pass_rate_delta_interval"]
        covered += interval["low"] <= truth <= interval["high"]
    assert covered / runs >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / runs)


def test_paired_sides_must_be_the_same_items() -> None:
    with pytest.raises(ValueError):
        paired_proportions_interval(moments_of([(1, 2)]), moments_of([(1, 2)] * 2), 0.0)


def test_trial_tally_pass_rate_is_pass_at_1() -> None:
    tally = TrialTally()
    for c, n in [(5, 5), (3, 5), (0, 5), (2, 4)]:
        tally.add(c, n)
    summary = tally.summary(5)
    assert (
        summary["pass_rate"] == summary["pass_at_k"]["1"] == pytest.approx((1 + 0.6 + 0 + 0.5) / 4)
    )


def test_items_needed_at_one_trial_is_the_tables_items_needed() -> None:
    from chalicelib.stats.paired_interval import items_needed
    from chalicelib.stats.trials import trial_items_needed

    rng = random.Random(6)
    checked = 0
    for _ in range(300):
        n = rng.randint(5, 200)
        cuts = sorted(rng.randint(0, n) for _ in range(3))
        both, improved, regressed = cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1]
        tally = PairedTrialTally()
        cells = [((1, 1), (1, 1))] * both + [((1, 1), (0, 1))] * improved
        cells += [((0, 1), (1, 1))] * regressed + [((0, 1), (0, 1))] * (n - cuts[2])
        for here, there in cells:
            tally.add(here, there)
        margin = rng.choice([0.02, 0.05, 0.1])
        expected = items_needed(both, improved, regressed, n, margin)
        if expected is None or expected > 10**6:
            continue
        found = trial_items_needed(tally.summary()["moments"], margin)
        assert found is not None and abs(found - expected) <= 1, (both, improved, regressed, n)
        checked += 1
    assert checked > 200


def test_items_needed_decides_and_one_fewer_does_not() -> None:
    from chalicelib.stats.trials import trial_items_needed

    tally = PairedTrialTally()
    for now, before in [((3, 5), (4, 5))] * 3 + [((3, 5), (3, 5))] * 5 + [((4, 5), (3, 5))] * 2:
        tally.add(now, before)
    moments = tally.summary()["moments"]
    needed = trial_items_needed(moments, 0.05)
    assert needed is not None and needed > 10
    here, there = Moments(**moments["current"]), Moments(**moments["baseline"])
    covariance = moments["covariance"]
    at = paired_proportions_interval(here.scaled(needed), there.scaled(needed), covariance)
    short = paired_proportions_interval(
        here.scaled(needed - 1), there.scaled(needed - 1), covariance
    )
    assert at["high"] < -0.05 or at["low"] > -0.05
    assert short["low"] <= -0.05 <= short["high"]
