"""The paired sign-flip test: against a brute-force enumeration of the 2^m sign patterns,
against scipy's exact ``permutation_test(..., permutation_type="samples")``, its Monte
Carlo branch's error bound, and its type I error under no change."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import permutation_test

from chalicelib.stats import sign_flip
from chalicelib.stats.sign_flip import EXACT_GUARANTEED, sign_flip_test


def brute_force(values: list[Fraction]) -> Fraction:
    observed = abs(sum(values, Fraction(0)))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        total = sum((s * v for s, v in zip(signs, values, strict=True)), Fraction(0))
        hits += abs(total) >= observed
    return Fraction(hits, 2 ** len(values))


def random_differences(rng: random.Random, size: int, trials: int = 5) -> list[Fraction]:
    """Per-item differences of trial pass proportions, some items with errored trials."""
    found = []
    for _ in range(size):
        n1, n0 = rng.randint(1, trials), rng.randint(1, trials)
        found.append(Fraction(rng.randint(0, n1), n1) - Fraction(rng.randint(0, n0), n0))
    return found


def test_matches_brute_force_enumeration() -> None:
    rng = random.Random(7)
    for case in range(400):
        values = random_differences(rng, rng.randint(1, 10), trials=rng.choice([2, 3, 5, 10]))
        result = sign_flip_test(Counter(values))
        assert result.exact, case
        assert result.p_value == float(brute_force(values)), (case, values)
        assert result.nonzero == sum(1 for v in values if v)


def scipy_exact_p(values: list[Fraction]) -> float:
    """scipy's exact p on the differences scaled by their common denominator: the same test
    (scaling changes no pattern's order), with sums exact in floats. On the raw fractions'
    floats, scipy's tie tolerance (100 ulps of the observed sum) misses patterns whose sum
    equals it exactly but rounds differently (e.g. 1/120 observed, p 0.998 for 1.0)."""
    scale = math.lcm(*(v.denominator for v in values))
    reference = permutation_test(
        (np.array([float(v * scale) for v in values]),),
        lambda x, axis: np.sum(x, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
        alternative="two-sided",
    )
    return float(reference.pvalue)


def test_matches_scipy_exact_permutation_test() -> None:
    rng = random.Random(11)
    for _ in range(300):
        values = random_differences(rng, rng.randint(2, 12), trials=rng.choice([3, 5, 10]))
        assert abs(sign_flip_test(Counter(values)).p_value - scipy_exact_p(values)) <= 1e-9, values


@pytest.mark.slow
def test_matches_scipy_on_ten_thousand_random_cases() -> None:
    rng = random.Random(10_000)
    for _ in range(10_000):
        values = random_differences(rng, rng.randint(2, 10), trials=rng.choice([2, 3, 5, 10]))
        assert abs(sign_flip_test(Counter(values)).p_value - scipy_exact_p(values)) <= 1e-9, values


def test_nothing_changed_is_p_one() -> None:
    assert sign_flip_test(Counter({Fraction(0): 40})).p_value == 1.0
    assert sign_flip_test(Counter()).p_value == 1.0
    balanced = sign_flip_test(Counter({Fraction(1, 5): 3, Fraction(-1, 5): 3}))
    assert balanced.p_value == 1.0 and balanced.nonzero == 6


def test_one_trial_per_item_is_exact_mcnemar() -> None:
    # With 0/1 proportions the sign-flip test is the exact (binomial) McNemar test.
    from chalicelib.stats.mcnemar import mcnemar_exact_p

    for improved, regressed in [(6, 0), (9, 6), (0, 12), (30, 10), (100, 130)]:
        differences = Counter({Fraction(1): improved, Fraction(-1): regressed, Fraction(0): 50})
        assert sign_flip_test(differences).p_value == pytest.approx(
            mcnemar_exact_p(improved, regressed), rel=1e-12
        )


def test_up_to_twenty_nonzero_differences_is_always_exact() -> None:
    # The worst case for the convolution: twenty distinct magnitudes (2^20 sums).
    rng = random.Random(3)
    for _ in range(3):
        magnitudes = rng.sample(range(1, 2520), EXACT_GUARANTEED)
        values = [Fraction(m * rng.choice((1, -1)), 2520) for m in magnitudes]
        assert sign_flip_test(Counter(values)).exact


def test_large_comparisons_stay_exact_with_small_denominators() -> None:
    # 400 items of 5 trials each: the typical eval is far inside the budget.
    rng = random.Random(5)
    values = [Fraction(rng.randint(0, 5) - rng.randint(0, 5), 5) for _ in range(400)]
    result = sign_flip_test(Counter(values))
    assert result.exact and result.mc_error == 0.0 and result.resamples is None


def test_monte_carlo_beyond_the_budget_is_seeded_and_within_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(13)
    values = random_differences(rng, 16, trials=5)
    exact = sign_flip_test(Counter(values))
    assert exact.exact
    monkeypatch.setattr(sign_flip, "EXACT_BUDGET", 0)
    estimate = sign_flip_test(Counter(values))
    assert not estimate.exact and estimate.resamples == sign_flip.MONTE_CARLO_RESAMPLES
    assert estimate.mc_error > 0
    assert abs(estimate.p_value - exact.p_value) <= 4 * estimate.mc_error + 1e-4
    # Deterministic: the same input settles to the same figure.
    assert sign_flip_test(Counter(values)) == estimate
    assert estimate.as_dict()["p_value_method"] == "sign_flip_monte_carlo"


def test_monte_carlo_error_bound_holds_across_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reported standard error is honest: over many cases, |MC - exact| stays within
    # 3 standard errors (plus the +1 correction) in at least 97% of them.
    rng = random.Random(17)
    pairs = []
    for case in range(60):
        values = random_differences(rng, rng.randint(8, 18), trials=4)
        pairs.append((values, sign_flip_test(Counter(values)).p_value, case))
    monkeypatch.setattr(sign_flip, "EXACT_BUDGET", 0)
    within = 0
    for values, exact, case in pairs:
        estimate = sign_flip_test(Counter(values), resamples=4000, seed=case)
        within += abs(estimate.p_value - exact) <= 3 * estimate.mc_error + 1 / 4001
    assert within >= 58


def test_type_one_error_under_no_change_is_at_most_alpha() -> None:
    # 2,000 seeded comparisons of an unchanged agent (each item's true pass rate drawn once,
    # both runs' 5 trials drawn from it): rejections at 0.05 stay within 0.05 + 3 SE.
    rng = random.Random(29)
    rejections, runs = 0, 2000
    for _ in range(runs):
        differences: Counter[Fraction] = Counter()
        for _ in range(30):
            p = rng.betavariate(0.8, 0.5)
            here = sum(rng.random() < p for _ in range(5))
            there = sum(rng.random() < p for _ in range(5))
            differences[Fraction(here - there, 5)] += 1
        rejections += sign_flip_test(differences).p_value < 0.05
    assert rejections / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)


def test_refuses_a_negative_count() -> None:
    with pytest.raises(ValueError):
        sign_flip_test(Counter({Fraction(1, 2): -1}))
