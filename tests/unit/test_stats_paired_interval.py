"""The paired pass-rate delta's interval (Newcombe's hybrid score, method 10) and the items
it needs: a published worked example, statsmodels where it computes the same figure, the
properties, exact and simulated coverage, and the items-needed search."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep

from chalicelib.stats.intervals import wilson_interval
from chalicelib.stats.paired_interval import (
    ITEMS_NEEDED_CEILING,
    _phi,
    items_needed,
    normal_items_needed,
    paired_delta_interval,
)


def bounds(both: float, improved: float, regressed: float, n: float) -> tuple[float, float]:
    interval = paired_delta_interval(both, improved, regressed, n)
    assert interval is not None
    return float(interval["low"]), float(interval["high"])


def random_table(rng: random.Random, max_n: int = 300) -> tuple[int, int, int, int]:
    n = rng.randint(1, max_n)
    cuts = sorted(rng.randint(0, n) for _ in range(3))
    both, improved, regressed = cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1]
    return both, improved, regressed, n


def test_published_example_cavo_2012() -> None:
    # Fagerland, Lydersen & Laake, Statistical Analysis of Contingency Tables (2017), ch. 8:
    # complete response before/after consolidation therapy (Cavo et al. 2012), table
    # [[59, 6], [16, 80]]: estimate -0.0621, Newcombe square-and-add 95% CI -0.1186 to -0.0046.
    interval = paired_delta_interval(59, 6, 16, 161)
    assert interval is not None
    assert interval["method"] == "newcombe_hybrid_score" and interval["level"] == 0.95
    assert round(float(interval["low"]), 4) == -0.1186
    assert round(float(interval["high"]), 4) == -0.0046


def test_matches_statsmodels_newcombe_where_the_table_is_uncorrelated() -> None:
    # With phi = 0 (an empty margin, or an association Newcombe's correction zeroes) the
    # paired interval IS the independent Newcombe interval on the two marginal rates, which
    # statsmodels computes: 10,000 random such tables agree within 1e-9.
    rng = random.Random(26)
    tables: list[tuple[int, int, int, int]] = []
    while len(tables) < 10_000:
        both, improved, regressed, n = random_table(rng, 200)
        if rng.random() < 0.2:  # make empty margins common, not only rare
            both, regressed = n - improved, 0
        if _phi(both, improved, regressed, n - both - improved - regressed) == 0.0:
            tables.append((both, improved, regressed, n))
    both, improved, regressed, n = (np.array(column) for column in zip(*tables, strict=True))
    lows, highs = confint_proportions_2indep(
        both + improved, n, both + regressed, n, method="newcomb", compare="diff"
    )
    for table, low, high in zip(tables, lows, highs, strict=True):
        assert bounds(*table) == pytest.approx((low, high), abs=1e-9), table


def test_nothing_flipped_still_has_an_interval_that_shrinks() -> None:
    # All passed in both runs: the interval is +-(1 - the Wilson low of n/n), by the formula.
    for n in (1, 5, 20, 400):
        wilson = wilson_interval(n, n)
        assert wilson is not None
        assert bounds(n, 0, 0, n) == pytest.approx((wilson["low"] - 1.0, 1.0 - wilson["low"]))
    assert bounds(10, 0, 0, 20)[1] > bounds(100, 0, 0, 200)[1] > 0


def test_nothing_compared_has_no_interval_and_bad_tables_are_refused() -> None:
    assert paired_delta_interval(0, 0, 0, 0) is None
    for table in ((-1, 0, 0, 3), (2, 2, 2, 5)):
        with pytest.raises(ValueError, match="need 0 <="):
            paired_delta_interval(*table)
    with pytest.raises(ValueError, match="level"):
        paired_delta_interval(1, 1, 1, 5, level=1.0)


def test_contains_the_estimate_and_stays_within_minus_one_one() -> None:
    rng = random.Random(7)
    for _ in range(5_000):
        both, improved, regressed, n = random_table(rng)
        low, high = bounds(both, improved, regressed, n)
        delta = (improved - regressed) / n
        assert -1.0 <= low <= delta <= high <= 1.0, (both, improved, regressed, n)
    assert bounds(0, 5, 0, 5)[1] == 1.0 and bounds(0, 0, 5, 5)[0] == -1.0


def test_monotone_in_n_at_fixed_proportions() -> None:
    rng = random.Random(11)
    for _ in range(200):
        table = random_table(rng, 60)
        previous = bounds(*table)
        for k in range(2, 25):
            low, high = bounds(*(k * count for count in table))
            # Nested: more items at the same proportions never widen either side.
            assert low >= previous[0] - 1e-12 and high <= previous[1] + 1e-12, (table, k)
            previous = (low, high)


def _exact_coverage(n: int, shares: tuple[float, float, float]) -> float:
    """P(interval covers the true delta), summed over every table of n items."""
    p_both, p_up, p_down = shares
    probabilities = (p_both, p_up, p_down, 1.0 - p_both - p_up - p_down)
    truth, covered = p_up - p_down, 0.0
    for both in range(n + 1):
        for up in range(n + 1 - both):
            for down in range(n + 1 - both - up):
                counts = (both, up, down, n - both - up - down)
                log_p = math.lgamma(n + 1) + sum(
                    count * math.log(p) - math.lgamma(count + 1)
                    for count, p in zip(counts, probabilities, strict=True)
                )
                low, high = bounds(both, up, down, n)
                if low <= truth <= high:
                    covered += math.exp(log_p)
    return covered


@pytest.mark.parametrize(
    ("n", "shares"),
    [(20, (0.7, 0.05, 0.15)), (30, (0.4, 0.1, 0.2)), (25, (0.6, 0.1, 0.1)), (40, (0.5, 0.2, 0.1))],
)
def test_exact_small_sample_coverage_is_near_nominal(
    n: int, shares: tuple[float, float, float]
) -> None:
    coverage = _exact_coverage(n, shares)
    assert 0.94 <= coverage <= 0.99, coverage


def test_simulated_coverage_is_near_nominal() -> None:
    # A seeded simulation (no clock): 4,000 runs of 100 items drawn from a known table.
    rng = random.Random(2026)
    p_both, p_up, p_down = 0.6, 0.08, 0.14
    truth, covered, runs = p_up - p_down, 0, 4_000
    for _ in range(runs):
        counts = [0, 0, 0, 0]
        for _ in range(100):
            u = rng.random()
            counts[0 if u < p_both else 1 if u < p_both + p_up else 2 if u < 0.82 else 3] += 1
        low, high = bounds(counts[0], counts[1], counts[2], 100)
        covered += low <= truth <= high
    # 95% +- 3 binomial standard errors of a 4,000-run estimate.
    assert abs(covered / runs - 0.95) < 3 * math.sqrt(0.95 * 0.05 / runs), covered / runs


@pytest.mark.parametrize(
    ("table", "margin"),
    [((16, 0, 2, 20), 0.05), ((10, 0, 0, 10), 0.05), ((18, 1, 1, 20), 0.1), ((5, 1, 6, 20), 0.1)],
)
def test_items_needed_clears_the_margin_at_n_and_not_at_n_minus_one(
    table: tuple[int, int, int, int], margin: float
) -> None:
    both, improved, regressed, n = table
    needed = items_needed(both, improved, regressed, n, margin)
    assert needed is not None and needed > n
    shares = [count / n for count in (both, improved, regressed)]
    above = (improved - regressed) / n > -margin

    def decided(size: int) -> bool:
        low, high = bounds(*(share * size for share in shares), size)
        return low > -margin if above else high < -margin

    assert decided(needed) and not decided(needed - 1)


def test_items_needed_edges() -> None:
    # Exactly on the margin: no sample size moves the interval off its own estimate.
    assert items_needed(8, 0, 1, 10, 0.1) is None
    assert items_needed(0, 0, 0, 0, 0.05) is None
    # An already decided table needs no more than it has.
    needed = items_needed(300, 10, 10, 400, 0.05)
    assert needed is not None and needed <= 400
    # A hair above the margin: past the search's ceiling.
    assert items_needed(0, 1_000_000_001, 1_000_000_000 + 100_000_000, 10**10, 0.01) is None
    assert ITEMS_NEEDED_CEILING == 10**9


def test_normal_items_needed() -> None:
    # z * sd / sqrt(n) < |delta + margin|  <=>  n > (1.96 * 0.3 / 0.05)^2 = 138.3
    assert normal_items_needed(0.0, 0.3, 0.05) == 139
    assert normal_items_needed(-0.1, 0.3, 0.05) == 139
    assert normal_items_needed(-0.05, 0.3, 0.05) is None
    with pytest.raises(ValueError):
        normal_items_needed(0.0, -1.0, 0.05)
