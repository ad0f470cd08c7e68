"""How many compared items a regression test needs, and what a given number can detect.

The regression gate's significance route is a two-sided McNemar test on the paired
outcomes (``p < alpha``). Its power follows Connor (1987, *Biometrics* 43:207): with
``psi`` the share of compared items that flip either way and ``delta`` the true drop (the
share that regressed minus the share that improved), a test at two-sided level ``alpha``
detects ``delta`` with power ``1 - beta`` once

    n >= (z(1 - alpha/2) * sqrt(psi) + z(1 - beta) * sqrt(psi - delta^2))^2 / delta^2

The flips an unchanged agent shows anyway (its noise, ``psi0``) and the ones a regression
adds are told apart: a regression of ``delta`` turns ``delta`` more passes into fails, so
the discordance under the alternative is ``psi = psi0 + delta`` (capped at 1). ``psi0`` is
the observed discordance of a comparison (one trial per item), or, with ``T`` trials per
item, the noise floor's flip rate ``f`` over ``T``: an unchanged item's two ``T``-trial
pass proportions differ with variance ``f / T`` (each has ``q(1-q)/T`` and
``f = 2q(1-q)``), which is what ``psi0`` is at ``T = 1``; the same formula is then the
normal approximation of the paired test on per-item proportions. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

#: Above this many items the answer is "not reachable" rather than a number.
MAX_ITEMS = 10**9
METHOD = "mcnemar_connor_1987"
TRIALS_METHOD = "mcnemar_connor_1987_trial_proportions"
SIDES = "two-sided"
_STANDARD = NormalDist()
#: Bisection steps for the smallest detectable regression (2**-50 of the unit interval).
_STEPS = 50


@dataclass(frozen=True)
class PowerInputs:
    """What the plan is computed from; ``noise_discordance`` is ``psi0`` above."""

    noise_discordance: float
    alpha: float
    power: float


def _check(noise_discordance: float, alpha: float, power: float) -> None:
    if not 0.0 <= noise_discordance <= 1.0:
        raise ValueError(f"noise_discordance must be within 0..1, got {noise_discordance}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be within (0, 0.5), got {alpha}")
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power must be within [0.5, 1), got {power}")


def noise_from_trials(flip_rate: float, trials: int) -> float:
    """``psi0`` for per-item pass proportions over ``trials`` trials: ``f / T``."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if not 0.0 <= flip_rate <= 1.0:
        raise ValueError(f"flip_rate must be within 0..1, got {flip_rate}")
    return flip_rate / trials


def alternative_discordance(noise_discordance: float, drop: float) -> float:
    """``psi`` when the agent regressed by ``drop``: its noise plus the flips the drop adds."""
    return min(1.0, noise_discordance + drop)


def exact_items_needed(drop: float, noise_discordance: float, alpha: float, power: float) -> float:
    """Connor's ``n`` before rounding up (``inf`` where the drop is impossible)."""
    _check(noise_discordance, alpha, power)
    if not 0.0 < drop < 1.0:
        raise ValueError(f"drop must be within (0, 1), got {drop}")
    psi = alternative_discordance(noise_discordance, drop)
    spread = psi - drop * drop
    if spread < 0.0:  # cannot happen with psi >= drop; guards rounding at the edges
        spread = 0.0
    z_alpha = _STANDARD.inv_cdf(1.0 - alpha / 2.0)
    z_beta = _STANDARD.inv_cdf(power)
    return (z_alpha * math.sqrt(psi) + z_beta * math.sqrt(spread)) ** 2 / (drop * drop)


def items_needed(drop: float, noise_discordance: float, alpha: float, power: float) -> int | None:
    """Compared items that detect a regression of ``drop``; ``None`` beyond a billion."""
    n = exact_items_needed(drop, noise_discordance, alpha, power)
    # A hair below an integer is that integer (the float arithmetic, not the formula).
    needed = max(1, math.ceil(n - 1e-9))
    return needed if needed <= MAX_ITEMS else None


def min_detectable_regression(
    items: int, noise_discordance: float, alpha: float, power: float
) -> float | None:
    """The smallest drop ``items`` compared items detect (Connor's formula inverted).

    ``None`` with no items, or when not even a drop to 0 (every item lost) would be
    detected. Connor's ``n`` falls as the drop grows, so a bisection finds the drop at
    which it meets ``items``; the answer is rounded up to the next 1e-4 so that the items
    it names are always enough.
    """
    _check(noise_discordance, alpha, power)
    if items < 1:
        return None
    low, high = 0.0, 1.0 - 1e-12
    if exact_items_needed(high, noise_discordance, alpha, power) > items:
        return None
    for _ in range(_STEPS):
        middle = (low + high) / 2.0
        if exact_items_needed(middle, noise_discordance, alpha, power) > items:
            low = middle
        else:
            high = middle
    return min(1.0, math.ceil(high * 10_000 - 1e-9) / 10_000)


def power_at(items: int, drop: float, noise_discordance: float, alpha: float) -> float:
    """The power ``items`` compared items have against ``drop`` (Connor, solved for beta)."""
    if not 0.0 < alpha < 0.5 or not 0.0 < drop < 1.0 or items < 1:
        raise ValueError("need 0 < alpha < 0.5, 0 < drop < 1 and items >= 1")
    psi = alternative_discordance(noise_discordance, drop)
    spread = max(psi - drop * drop, 1e-300)
    z_alpha = _STANDARD.inv_cdf(1.0 - alpha / 2.0)
    z_beta = (drop * math.sqrt(items) - z_alpha * math.sqrt(psi)) / math.sqrt(spread)
    return _STANDARD.cdf(z_beta)
