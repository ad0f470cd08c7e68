"""Intervals for pass rates whose trials are clustered in items.

With ``k`` trials per item the trials of one item are not independent draws: an item the
agent cannot do fails all ``k``. A Wilson interval over all ``n * k`` trials treats them as
independent and is too narrow (the tests show it covering far below 95% when items differ);
one over the items alone throws the trials away. Both intervals here take the item as the
unit, each item's pass proportion over its usable trials:

- :func:`clustered_wilson_interval`: Wilson's score interval on the *effective* sample size
  (Kish's design effect): ``n_eff = p(1 - p) / var``, where ``var`` is the cluster-robust
  variance of the mean of the item proportions (their sample variance over the items,
  divided by the items). ``n_eff`` is clamped to ``[items, trials]``: between "each item is
  one draw" and "every trial is independent". When the proportions do not vary it is the
  trials if the rate is strictly inside 0..1 (items that all pass exactly half their trials
  are less variable than independent trials), and the items at a rate of exactly 0 or 1,
  where the data cannot tell how alike trials of one item are (the cautious choice).
  With one trial per item it is exactly Wilson's interval.
- :func:`paired_proportions_interval`: the MOVER ("method of variance estimates recovery",
  Zou & Donner 2008, Stat Med 27:1693) for the difference of two correlated means: those two
  clustered Wilson intervals combined by square-and-add with the correlation of the paired
  item proportions, corrected towards 0 as Newcombe corrects his (a positive covariance
  below ``1 / 2n`` counts as none, larger ones are reduced by it). With one trial per item
  it is exactly Newcombe's hybrid score interval (:mod:`~chalicelib.stats.paired_interval`),
  so runs with and without trials read the same way.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

DEFAULT_LEVEL = 0.95
WILSON_METHOD = "wilson_effective_n"
MOVER_METHOD = "mover_clustered_wilson"


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _wilson(rate: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score bounds for a rate over a (real-valued) sample size; extremes exact."""
    z2_over_n = z * z / n
    centre = (rate + z2_over_n / 2.0) / (1.0 + z2_over_n)
    half = (z / (1.0 + z2_over_n)) * math.sqrt(rate * (1.0 - rate) / n + z2_over_n / (4.0 * n))
    low = 0.0 if rate <= 0.0 else max(0.0, centre - half)
    high = 1.0 if rate >= 1.0 else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Moments:
    """Per-item proportions summarised: how many items and usable trials, their mean and
    population variance (divided by the items)."""

    items: float
    trials: float
    mean: float
    variance: float

    @classmethod
    def of(cls, values: Iterable[tuple[float, int, int]]) -> Moments:
        """``values``: ``(item proportion, how many items have it, their usable trials)``."""
        rows = [(value, count, trials) for value, count, trials in values if count]
        items = sum(count for _, count, _ in rows)
        if not items:
            raise ValueError("no item to take moments of")
        mean = math.fsum(value * count for value, count, _ in rows) / items
        variance = math.fsum(count * (value - mean) ** 2 for value, count, _ in rows) / items
        return cls(items, sum(trials for _, _, trials in rows), mean, variance)

    def scaled(self, items: float) -> Moments:
        """The same items' proportions, as if there were ``items`` of them."""
        return Moments(items, self.trials * items / self.items, self.mean, self.variance)


def effective_n(moments: Moments) -> float:
    """Kish's effective sample size of the mean item proportion, clamped to [items, trials]."""
    items, trials, rate = moments.items, moments.trials, moments.mean
    if items < 2:
        return float(items)
    # The cluster-robust variance of the mean: the sample variance of the items over items.
    variance = moments.variance / (items - 1)
    spread = rate * (1.0 - rate)
    if variance <= 0.0:
        return float(trials) if spread > 0.0 else float(items)
    return min(float(trials), max(float(items), spread / variance))


def clustered_wilson_interval(moments: Moments, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """The mean item proportion's interval: ``{"low", "high", "level", "method",
    "effective_n"}``."""
    n_eff = effective_n(moments)
    low, high = _wilson(moments.mean, n_eff, _z(level))
    return {
        "low": low,
        "high": high,
        "level": level,
        "method": WILSON_METHOD,
        "effective_n": n_eff,
    }


def corrected_correlation(covariance: float, sd_here: float, sd_there: float, n: float) -> float:
    """Pearson's correlation from population moments with Newcombe's correction."""
    if sd_here <= 0.0 or sd_there <= 0.0:
        return 0.0
    slack = 1.0 / (2.0 * n)
    if covariance > slack:
        covariance -= slack
    elif covariance >= 0.0:
        covariance = 0.0
    return max(-1.0, min(1.0, covariance / (sd_here * sd_there)))


def paired_proportions_interval(
    here: Moments, there: Moments, covariance: float, level: float = DEFAULT_LEVEL
) -> dict[str, Any]:
    """The interval for ``here.mean - there.mean`` over the same items (``covariance``:
    the population covariance of the paired proportions)."""
    if here.items != there.items:
        raise ValueError(f"paired sides need the same items, got {here.items} / {there.items}")
    low, high = _paired_bounds(here, there, covariance, _z(level))
    return {"low": low, "high": high, "level": level, "method": MOVER_METHOD}


def _paired_bounds(
    here: Moments, there: Moments, covariance: float, z: float
) -> tuple[float, float]:
    low_1, high_1 = _wilson(here.mean, effective_n(here), z)
    low_2, high_2 = _wilson(there.mean, effective_n(there), z)
    r = corrected_correlation(
        covariance, math.sqrt(here.variance), math.sqrt(there.variance), here.items
    )
    delta = here.mean - there.mean
    down_1, up_2 = here.mean - low_1, high_2 - there.mean
    down_2, up_1 = there.mean - low_2, high_1 - here.mean
    # max(0, .): |r| <= 1, so only rounding takes a radicand below zero.
    low = delta - math.sqrt(max(0.0, down_1**2 - 2.0 * r * down_1 * up_2 + up_2**2))
    high = delta + math.sqrt(max(0.0, down_2**2 - 2.0 * r * down_2 * up_1 + up_1**2))
    return max(-1.0, low), min(1.0, high)


#: The largest number of items :func:`paired_items_needed` searches (as the table's search).
ITEMS_NEEDED_CEILING = 10**9


def paired_items_needed(
    here: Moments, there: Moments, covariance: float, margin: float, level: float = DEFAULT_LEVEL
) -> int | None:
    """The smallest number of compared items at which, with the items' proportions held to
    the same means, variances and covariance, :func:`paired_proportions_interval` clears
    ``-margin`` (its low above when the delta is above, its high below when below). None
    when the delta sits on ``-margin`` or the answer is past :data:`ITEMS_NEEDED_CEILING`.
    Doubling, then bisection: the interval narrows as the items grow."""
    z = _z(level)
    delta = here.mean - there.mean
    if delta == -margin:
        return None
    above = delta > -margin

    def decided(items: int) -> bool:
        low, high = _paired_bounds(here.scaled(items), there.scaled(items), covariance, z)
        return low > -margin if above else high < -margin

    high = 1
    while not decided(high):
        if high >= ITEMS_NEEDED_CEILING:
            return None
        high = min(high * 2, ITEMS_NEEDED_CEILING)
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        if decided(middle):
            high = middle
        else:
            low = middle
    return high
