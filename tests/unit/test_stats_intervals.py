"""Wilson score interval: the spec's reference figures and agreement with statsmodels."""

from __future__ import annotations

import random

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from chalicelib.stats import wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [(45, 60, 0.627679, 0.842235), (6, 12, 0.253782, 0.746218), (0, 10, 0.0, 0.277533)],
)
def test_reference_figures(successes: int, n: int, low: float, high: float) -> None:
    interval = wilson_interval(successes, n)
    assert interval is not None
    assert round(interval["low"], 6) == low
    assert round(interval["high"], 6) == high
    assert interval["level"] == 0.95


def test_no_items_no_interval() -> None:
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize("n", [1, 2, 5, 12, 100, 10_000])
def test_extremes_are_exact_and_inside_unit_range(n: int) -> None:
    none_passed = wilson_interval(0, n)
    all_passed = wilson_interval(n, n)
    assert none_passed is not None and all_passed is not None
    assert none_passed["low"] == 0.0 and 0.0 < none_passed["high"] < 1.0
    assert all_passed["high"] == 1.0 and 0.0 < all_passed["low"] < 1.0
    # Symmetry: k/n mirrors (n-k)/n.
    assert none_passed["high"] == pytest.approx(1.0 - all_passed["low"], abs=1e-15)


def test_interval_contains_the_rate_and_narrows_with_more_items() -> None:
    small = wilson_interval(6, 12)
    large = wilson_interval(600, 1200)
    assert small is not None and large is not None
    assert small["low"] < 0.5 < small["high"]
    assert large["high"] - large["low"] < small["high"] - small["low"]


@pytest.mark.parametrize(("successes", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_impossible_counts_are_refused(successes: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1])
def test_level_must_be_a_probability(level: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(3, 10, level)


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_matches_statsmodels_on_random_counts(level: float) -> None:
    rng = random.Random(20240611 + int(level * 100))
    cases = []
    for _ in range(2500):
        n = rng.choice([rng.randint(1, 30), rng.randint(1, 500), rng.randint(1, 50_000)])
        cases.append((rng.randint(0, n), n))
    counts = np.array([k for k, _ in cases])
    totals = np.array([n for _, n in cases])
    lows, highs = proportion_confint(counts, totals, alpha=1 - level, method="wilson")
    for (k, n), expected_low, expected_high in zip(cases, lows, highs, strict=True):
        interval = wilson_interval(k, n, level)
        assert interval is not None
        assert interval["low"] == pytest.approx(expected_low, abs=1e-12), (k, n)
        assert interval["high"] == pytest.approx(expected_high, abs=1e-12), (k, n)
        assert 0.0 <= interval["low"] <= k / n <= interval["high"] <= 1.0
