"""Confidence intervals for a pass rate.

The Wilson score interval is used rather than the textbook normal ("Wald") interval
because it stays inside 0..1 and keeps close to its nominal coverage on a handful of
items, which is exactly where eval datasets live.
"""

from __future__ import annotations

import math
from statistics import NormalDist

DEFAULT_LEVEL = 0.95


def _two_sided_z(level: float) -> float:
    """The standard-normal quantile that leaves ``(1 - level) / 2`` in each tail."""
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson_interval(
    successes: int, n: int, level: float = DEFAULT_LEVEL
) -> dict[str, float] | None:
    """The Wilson score interval for ``successes`` out of ``n``.

    Returns ``{"low", "high", "level"}``, or ``None`` when ``n == 0`` (a pass rate over
    nothing has no interval). The bounds are clamped to 0..1, and an extreme count gets
    an exact bound: ``0/n`` has ``low == 0.0`` and ``n/n`` has ``high == 1.0``.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    if n == 0:
        return None
    z = _two_sided_z(level)
    z2_over_n = z * z / n
    rate = successes / n
    centre = (rate + z2_over_n / 2.0) / (1.0 + z2_over_n)
    half_width = (z / (1.0 + z2_over_n)) * math.sqrt(
        rate * (1.0 - rate) / n + z2_over_n / (4.0 * n)
    )
    # Rounding can leave 1e-17 of slack at the extremes; the exact bound is known there.
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == n else min(1.0, centre + half_width)
    return {"low": low, "high": high, "level": level}
