"""Unbiased pass@k and pass^k (Chen et al. 2021) against the formula evaluated directly in
exact fractions, and against the paper's numerically stable product form."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from chalicelib.stats.pass_at_k import pass_at_k, pass_hat_k


def chen_product_form(n: int, c: int, k: int) -> float:
    """The paper's numpy estimator (Chen et al. 2021, figure 3), verbatim in spirit."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_hat_product_form(n: int, c: int, k: int) -> float:
    return float(np.prod([(c - i) / (n - i) for i in range(k)]))


def direct(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    at_k = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    return at_k, Fraction(math.comb(c, k), math.comb(n, k))


def test_every_case_up_to_ten_trials_is_the_correctly_rounded_formula() -> None:
    for n in range(1, 11):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at_k, hat_k = direct(n, c, k)
                assert pass_at_k(n, c, k) == float(at_k), (n, c, k)
                assert pass_hat_k(n, c, k) == float(hat_k), (n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(chen_product_form(n, c, k), abs=1e-12)
                assert pass_hat_k(n, c, k) == pytest.approx(
                    pass_hat_product_form(n, c, k), abs=1e-12
                )


def test_ten_thousand_random_cases_match_the_product_forms() -> None:
    rng = random.Random(2021)
    for _ in range(10_000):
        n = rng.randint(1, 200)
        c = rng.randint(0, n)
        k = rng.randint(1, n)
        assert abs(pass_at_k(n, c, k) - chen_product_form(n, c, k)) <= 1e-9
        assert abs(pass_hat_k(n, c, k) - pass_hat_product_form(n, c, k)) <= 1e-9


def test_known_values() -> None:
    # k = 1 is the plain pass share; k = n is "any passed" / "all passed".
    assert pass_at_k(5, 2, 1) == 0.4 and pass_hat_k(5, 2, 1) == 0.4
    assert pass_at_k(5, 2, 5) == 1.0 and pass_hat_k(5, 2, 5) == 0.0
    assert pass_at_k(5, 0, 3) == 0.0 and pass_hat_k(5, 5, 3) == 1.0
    # 2 of 4 passed: pairs with a pass are 5 of 6; pairs both passing, 1 of 6.
    assert pass_at_k(4, 2, 2) == 5 / 6 and pass_hat_k(4, 2, 2) == 1 / 6


def test_unbiased_against_the_binomial_truth() -> None:
    # E[estimate] over c ~ Binomial(n, p) is exactly 1 - (1-p)^k and p^k.
    p, n = Fraction(3, 10), 7
    for k in range(1, n + 1):
        expected_at = sum(
            Fraction(math.comb(n, c)) * p**c * (1 - p) ** (n - c) * direct(n, c, k)[0]
            for c in range(n + 1)
        )
        expected_hat = sum(
            Fraction(math.comb(n, c)) * p**c * (1 - p) ** (n - c) * direct(n, c, k)[1]
            for c in range(n + 1)
        )
        assert expected_at == 1 - (1 - p) ** k
        assert expected_hat == p**k


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)
