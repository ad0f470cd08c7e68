"""The planner's power figures (``chalicelib.stats.power``): Connor's formula, its inverse,
and a seeded simulation of the tests it plans for."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from chalicelib.stats import power
from chalicelib.stats.mcnemar import mcnemar_exact_p

Z975 = NormalDist().inv_cdf(0.975)
Z80 = NormalDist().inv_cdf(0.8)


def test_connors_formula_by_hand() -> None:
    # psi0 = 0.10, a 5-point drop: psi = 0.15 under the alternative.
    by_hand = (Z975 * math.sqrt(0.15) + Z80 * math.sqrt(0.15 - 0.05**2)) ** 2 / 0.05**2
    assert power.exact_items_needed(0.05, 0.10, 0.05, 0.8) == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(468.568, abs=0.001)
    assert power.items_needed(0.05, 0.10, 0.05, 0.8) == 469
    # Nothing flips without a change: the drop's own flips are the discordance.
    assert power.items_needed(0.05, 0.0, 0.05, 0.8) == 155


@pytest.mark.parametrize("noise", [0.0, 0.02, 0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("drop", [0.01, 0.05, 0.1, 0.25])
def test_items_needed_is_the_first_n_with_the_power(noise: float, drop: float) -> None:
    n = power.items_needed(drop, noise, 0.05, 0.8)
    assert n is not None
    assert power.power_at(n, drop, noise, 0.05) >= 0.8 - 1e-9
    if n > 1:
        assert power.power_at(n - 1, drop, noise, 0.05) < 0.8


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.2, 0.5])
@pytest.mark.parametrize("items", [20, 100, 400, 5000])
def test_the_smallest_detectable_regression_inverts_items_needed(noise: float, items: int) -> None:
    mdr = power.min_detectable_regression(items, noise, 0.05, 0.8)
    assert mdr is not None and 0 < mdr < 1
    needed = power.items_needed(mdr, noise, 0.05, 0.8)
    assert needed is not None and needed <= items  # the drop it names is detected...
    smaller = power.items_needed(mdr - 1e-4, noise, 0.05, 0.8)
    assert smaller is not None and smaller >= items - 1  # ...and 1e-4 less is not (rounding)


def test_it_moves_the_way_it_must() -> None:
    base = power.exact_items_needed(0.05, 0.1, 0.05, 0.8)
    assert power.exact_items_needed(0.05, 0.2, 0.05, 0.8) > base  # noisier: more items
    assert power.exact_items_needed(0.10, 0.1, 0.05, 0.8) < base  # larger drop: fewer
    assert power.exact_items_needed(0.05, 0.1, 0.01, 0.8) > base  # stricter alpha: more
    assert power.exact_items_needed(0.05, 0.1, 0.05, 0.9) > base  # more power: more
    mdrs = [power.min_detectable_regression(n, 0.1, 0.05, 0.8) for n in (50, 200, 800)]
    assert mdrs[0] > mdrs[1] > mdrs[2]  # type: ignore[operator]
    # Four times the items halve the detectable drop, roughly (sqrt(n) scaling).
    assert mdrs[1] / mdrs[2] == pytest.approx(2.0, rel=0.2)  # type: ignore[operator]


def test_edges() -> None:
    assert power.min_detectable_regression(0, 0.1, 0.05, 0.8) is None
    # One item detects nothing: not even every item lost is significant.
    assert power.min_detectable_regression(1, 0.1, 0.05, 0.8) is None
    assert power.items_needed(1e-5, 0.5, 0.05, 0.8) is None  # beyond a billion
    assert power.alternative_discordance(0.98, 0.05) == 1.0
    assert power.noise_from_trials(0.3, 3) == pytest.approx(0.1)
    for bad in (
        lambda: power.items_needed(0.0, 0.1, 0.05, 0.8),
        lambda: power.items_needed(0.05, 1.5, 0.05, 0.8),
        lambda: power.items_needed(0.05, 0.1, 0.5, 0.8),
        lambda: power.items_needed(0.05, 0.1, 0.05, 1.0),
        lambda: power.items_needed(0.05, 0.1, 0.05, 0.4),
        lambda: power.noise_from_trials(0.3, 0),
        lambda: power.noise_from_trials(1.2, 3),
    ):
        with pytest.raises(ValueError):
            bad()


# --- simulation ------------------------------------------------------------------------------

SIMULATIONS = 4000
#: 3 standard errors of a simulated power of 0.8, plus what Connor's normal approximation may
#: be off by (its own error at these sizes is about 0.01-0.02).
TOLERANCE = 3 * math.sqrt(0.8 * 0.2 / SIMULATIONS) + 0.02


def _tables(n: int, noise: float, drop: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``SIMULATIONS`` paired tables of n items: regressed and improved counts."""
    rng = np.random.default_rng(seed)
    regressed_p, improved_p = noise / 2 + drop, noise / 2
    draws = rng.multinomial(n, [regressed_p, improved_p, 1 - regressed_p - improved_p], SIMULATIONS)
    return draws[:, 0], draws[:, 1]


@pytest.mark.parametrize(
    ("noise", "drop"), [(0.1, 0.05), (0.2, 0.1), (0.05, 0.02), (0.3, 0.05), (0.5, 0.1)]
)
def test_a_seeded_simulation_detects_the_drop_with_the_planned_power(
    noise: float, drop: float
) -> None:
    """At the planned n, McNemar's test on simulated tables (the noise flipping both ways,
    the drop adding regressions) rejects at the planned rate: the asymptotic test Connor's
    formula is built on within the tolerance, the exact test the gate runs a little below
    (it is conservative), never far."""
    n = power.items_needed(drop, noise, 0.05, 0.8)
    assert n is not None
    regressed, improved = _tables(n, noise, drop, seed=int(noise * 1000 + drop * 100))
    flips = np.maximum(regressed + improved, 1)
    asymptotic = float(np.mean((regressed - improved) / np.sqrt(flips) > Z975))
    assert abs(asymptotic - 0.8) <= TOLERANCE, (n, asymptotic)
    exact = float(
        np.mean(
            [
                r > i and mcnemar_exact_p(int(i), int(r)) < 0.05
                for r, i in zip(regressed, improved, strict=True)
            ]
        )
    )
    assert 0.8 - 0.05 <= exact <= 0.8 + TOLERANCE, (n, exact)


def test_under_no_change_the_planned_test_rejects_at_alpha() -> None:
    n = power.items_needed(0.05, 0.1, 0.05, 0.8)
    assert n is not None
    regressed, improved = _tables(n, 0.1, 0.0, seed=11)
    pairs = zip(regressed, improved, strict=True)
    exact = np.mean([mcnemar_exact_p(int(i), int(r)) < 0.05 for r, i in pairs])
    assert exact <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / SIMULATIONS)


def test_with_trials_the_per_item_proportions_test_has_the_planned_power() -> None:
    """T trials per item, each item passing with probability q: the noise floor's flip rate
    is 2q(1-q), psi0 = f/T. The regression collapses a random share of items to always
    failing, dropping the mean pass rate by the margin. At the planned n the paired z test
    on per-item proportion differences detects it about as often as planned (the plan's
    variance under the alternative is an upper bound here, so at or a little above)."""
    trials, q, drop = 3, 0.8, 0.05
    flip_rate = 2 * q * (1 - q)
    n = power.items_needed(drop, power.noise_from_trials(flip_rate, trials), 0.05, 0.8)
    assert n is not None
    rng = np.random.default_rng(26)
    before = rng.binomial(trials, q, (SIMULATIONS, n)) / trials
    after = rng.binomial(trials, q, (SIMULATIONS, n)) / trials
    collapsed = rng.random((SIMULATIONS, n)) < drop / q
    after = np.where(collapsed, 0.0, after)
    differences = before - after
    z = differences.mean(axis=1) / (differences.std(axis=1, ddof=1) / math.sqrt(n))
    detected = float(np.mean(z > Z975))
    assert 0.8 - TOLERANCE <= detected <= 0.92, (n, detected)
