"""Exact McNemar p-values: reference figures, agreement with scipy, no underflow."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from chalicelib.stats import mcnemar_exact_p
from chalicelib.stats.mcnemar import EXACT_FLIP_LIMIT


@pytest.mark.parametrize(
    ("improved", "regressed", "expected"),
    [(9, 6, 0.60723876953125), (0, 6, 0.03125), (6, 0, 0.03125), (9, 0, 0.00390625)],
)
def test_reference_figures_exactly(improved: int, regressed: int, expected: float) -> None:
    assert mcnemar_exact_p(improved, regressed) == expected


def test_thousands_of_flips() -> None:
    assert mcnemar_exact_p(2900, 3000) == pytest.approx(0.197439, abs=5e-7)
    assert mcnemar_exact_p(3000, 2900) == mcnemar_exact_p(2900, 3000)


def test_nothing_flipped_and_even_splits_are_one() -> None:
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(1, 1) == 1.0
    assert mcnemar_exact_p(3000, 3000) == 1.0
    assert mcnemar_exact_p(500_000, 500_000) == 1.0


@pytest.mark.parametrize(
    ("improved", "regressed"),
    [
        (1000, 0),
        (0, 1000),
        (1074, 0),
        (5000, 4000),
        (4000, 5000),
        (20_000, 0),
        (10**6, 10**6 - 7000),
    ],
)
def test_many_flips_never_underflow_or_nan(improved: int, regressed: int) -> None:
    p = mcnemar_exact_p(improved, regressed)
    assert math.isfinite(p)
    assert 0.0 < p <= 1.0


def test_lopsided_thousand_is_two_to_the_minus_999() -> None:
    assert mcnemar_exact_p(1000, 0) == pytest.approx(2.0**-999, rel=1e-15)
    # Just past the exact path the log-space sum takes over with the same answer.
    assert mcnemar_exact_p(1001, 0) == pytest.approx(2.0**-1000, rel=1e-12)


def test_more_uneven_splits_are_more_significant() -> None:
    p_values = [mcnemar_exact_p(improved, 20 - improved) for improved in range(10, 21)]
    assert p_values == sorted(p_values, reverse=True)


def test_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 3)


def _random_split(rng: random.Random) -> tuple[int, int]:
    scale = rng.choice([20, 200, EXACT_FLIP_LIMIT, 3000, 20_000])
    n = rng.randint(1, scale)
    # Concentrate near an even split, where p-values are not all ~0.
    spread = max(1, int(3 * math.sqrt(n)))
    smaller = max(0, min(n, n // 2 + rng.randint(-spread, spread)))
    return smaller, n - smaller


def _tolerance(n: int) -> float:
    return 1e-13 if n <= EXACT_FLIP_LIMIT else 1e-9


def test_matches_scipy_binomtest_on_random_splits() -> None:
    rng = random.Random(77)
    for _ in range(250):  # binomtest costs milliseconds a call
        improved, regressed = _random_split(rng)
        n = improved + regressed
        expected = binomtest(min(improved, regressed), n, 0.5).pvalue
        ours = mcnemar_exact_p(improved, regressed)
        assert ours == pytest.approx(expected, rel=_tolerance(n)), (improved, regressed)


def test_matches_scipy_binomial_tail_on_thousands_of_splits() -> None:
    # At p = 1/2 the distribution is symmetric, so binomtest's two-sided p-value is
    # exactly min(1, 2 * cdf(min(b, c))); vectorised, that checks many more cases.
    rng = random.Random(78)
    splits = [_random_split(rng) for _ in range(5000)]
    smaller = np.array([min(split) for split in splits])
    totals = np.array([sum(split) for split in splits])
    expected = np.minimum(1.0, 2.0 * binom.cdf(smaller, totals, 0.5))
    for (improved, regressed), p_expected in zip(splits, expected, strict=True):
        ours = mcnemar_exact_p(improved, regressed)
        n = improved + regressed
        assert ours == pytest.approx(p_expected, rel=_tolerance(n)), (improved, regressed)
