"""Student's t quantile and the paired t interval for a mean score delta, in pure Python.

The interval on a continuous scorer's ``mean_delta`` is the one-sample t interval on the
per-item differences (what ``scipy.stats.ttest_rel(current, baseline).confidence_interval()``
gives): ``mean +- t(1 - alpha/2, n - 1) * sd / sqrt(n)``. By the central limit theorem it
holds for bounded scores well before the differences look normal, and it is the interval a
reader can recompute from the mean and the sd.

The t quantile comes from the t distribution's tail, ``P(T > t) = I_x(df/2, 1/2) / 2`` with
``x = df / (df + t^2)``, where ``I`` is the regularized incomplete beta function, evaluated by
its continued fraction (modified Lentz; Numerical Recipes §6.4, DLMF 8.17.22) to ~1e-15
relative; Newton's method on the tail, kept inside a shrinking bracket, inverts it. Working
with the tail rather than the CDF keeps the precision of small tails. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from statistics import NormalDist
from typing import Any

DEFAULT_LEVEL = 0.95
METHOD = "paired_t"
_TINY = 1e-300
_EPS = 1e-16
_MAX_TERMS = 100_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (converges fast for ``x < (a+1)/(a+b+2)``)."""
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            step = c * d
            fraction *= step
        if abs(step - 1.0) < _EPS:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def _stirling_tail(z: float) -> float:
    """``ln Gamma(z) - ((z - 1/2) ln z - z + ln(2 pi) / 2)``, for ``z >= 20`` (error < 1e-17)."""
    z2 = z * z
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * z2)) / z2) / z2) / z2) / z


def _log_gamma_half_ratio(a: float) -> float:
    """``ln Gamma(a + 1/2) - ln Gamma(a)``. For large ``a`` the two lgammas are huge and
    nearly equal (``a = 5e6``: 7e7 each, so their difference would lose 1e-8), so it is
    taken from Stirling's series, where the large terms cancel analytically."""
    if a < 20.0:
        return math.lgamma(a + 0.5) - math.lgamma(a)
    return (
        (a * math.log1p(0.5 / a) - 0.5)
        + 0.5 * math.log(a)
        + (_stirling_tail(a + 0.5) - _stirling_tail(a))
    )


def _half_beta(a: float, ratio: float) -> float:
    """``I_x(a, 1/2)`` at ``x = 1 / (1 + ratio)``. Taking ``ratio`` rather than ``x`` keeps
    ``a * ln x = -a * log1p(ratio)`` exact where ``x`` rounds to within 1e-16 of 1 (large
    ``a``, moderate ``t``), and ``1 - x = ratio / (1 + ratio)`` without cancellation."""
    b = 0.5
    x = 1.0 / (1.0 + ratio)
    y = ratio / (1.0 + ratio)
    log_front = (
        _log_gamma_half_ratio(a)
        - 0.5 * math.log(math.pi)
        - (a + b) * math.log1p(ratio)
        + b * math.log(ratio)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def _upper_tail(t: float, df: float) -> float:
    """``P(T > t)`` for ``t >= 0``: ``I_x(df/2, 1/2) / 2`` with ``x = df / (df + t^2)``."""
    ratio = t * t / df
    if ratio == 0.0:  # t = 0, or so close that t^2 underflows
        return 0.5
    if math.isinf(ratio):
        return 0.0
    return 0.5 * _half_beta(df / 2.0, ratio)


def t_sf(t: float, df: float) -> float:
    """``P(T > t)`` for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"df must be > 0, got {df}")
    return _upper_tail(t, df) if t >= 0 else 1.0 - _upper_tail(-t, df)


def _t_pdf(t: float, df: float) -> float:
    log_density = (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )
    return math.exp(log_density)


def _cornish_fisher_start(tail: float, df: float) -> float:
    """A first guess at the t quantile: the normal one corrected in powers of ``1/df``
    (Abramowitz & Stegun 26.7.5); within a few percent for ``df >= 3``, so Newton needs two
    or three steps instead of a dozen."""
    z = NormalDist().inv_cdf(1.0 - tail)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


@lru_cache(maxsize=4096)
def t_isf(tail: float, df: float) -> float:
    """The ``t`` with ``P(T > t) = tail``, for ``0 < tail <= 0.5`` (so ``t >= 0``).

    Cached: a settle asks for the same ``(tail, df)`` once per continuous scorer and group."""
    if not 0.0 < tail <= 0.5:
        raise ValueError(f"tail must be within (0, 0.5], got {tail}")
    if df <= 0:
        raise ValueError(f"df must be > 0, got {df}")
    if tail == 0.5:
        return 0.0
    if df == 1.0:
        return 1.0 / math.tan(math.pi * tail)  # Cauchy; exact for tiny tails
    if df == 2.0:
        return (1.0 - 2.0 * tail) * math.sqrt(2.0 / (4.0 * tail * (1.0 - tail)))
    low, high = 0.0, math.inf
    t = _cornish_fisher_start(tail, df)
    if not t > 0.0 or math.isinf(t):
        t = 1.0
    for _ in range(400):
        error = _upper_tail(t, df) - tail
        if error == 0.0:
            return t
        if error > 0:
            low = t
        else:
            high = t
        candidate = t + error / _t_pdf(t, df)  # the tail falls with slope -pdf
        if not low < candidate < high:
            candidate = 2.0 * t if math.isinf(high) else (low + high) / 2.0
        if abs(candidate - t) <= 4 * _EPS * t:
            return candidate
        t = candidate
    raise ArithmeticError(f"t quantile did not converge for tail={tail}, df={df}")


def paired_t_interval(
    differences: Mapping[float, int], level: float = DEFAULT_LEVEL
) -> dict[str, Any] | None:
    """The t interval for the mean of ``differences`` (``value -> count``); None below two
    differences, where no spread is measured."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    n = sum(differences.values())
    if n < 2:
        return None
    mean = math.fsum(value * count for value, count in differences.items()) / n
    # One refinement step: ``value * count`` rounds, and identical differences must give
    # their own value back with a spread of exactly 0.
    mean += math.fsum(count * (value - mean) for value, count in differences.items()) / n
    squares = math.fsum(count * (value - mean) ** 2 for value, count in differences.items())
    standard_error = math.sqrt(squares / (n - 1) / n)
    half = t_isf((1.0 - level) / 2.0, n - 1.0) * standard_error
    return {"low": mean - half, "high": mean + half, "level": level, "method": METHOD}
