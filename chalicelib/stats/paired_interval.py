"""A confidence interval for the paired difference of two pass rates, and the sample it needs.

Two runs scored on the same ``n`` items give a 2x2 table: ``both`` passed in both runs,
``improved`` (passes now, failed before), ``regressed`` (failed now, passed before) and the
rest failed in both. The pass-rate delta is ``(improved - regressed) / n``.

The interval is Newcombe's hybrid score interval for paired data (Newcombe 1998, Stat Med
17:2635, method 10; Fagerland, Lydersen & Laake's "Newcombe square-and-add"): a Wilson
interval for each run's pass rate, combined by "square and add" with the correlation of the
two rates estimated from the table (``phi``, with Newcombe's correction towards 0 when the
table is positively associated by less than ``n / 2``). Why this one: it needs no iteration,
its bounds stay inside -1..1, it has near-nominal coverage down to n of about 10, and it is
not degenerate when nothing flipped (``0/0`` discordant pairs still gives an interval whose
width shrinks with ``n``), which is exactly the inconclusive small-eval case the verdict
must describe. ``docs/statistics.md`` says more, with the alternatives.

Every function also accepts real-valued counts: :func:`items_needed` scales the observed
table to other sizes with its proportions held fixed. Pure: no I/O.
"""

from __future__ import annotations

import math
from statistics import NormalDist

DEFAULT_LEVEL = 0.95
METHOD = "newcombe_hybrid_score"
#: The largest number of compared items :func:`items_needed` searches; beyond it the margin
#: is called unreachable (an observed delta a hair from the margin needs an absurd sample).
ITEMS_NEEDED_CEILING = 10**9


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _wilson(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score bounds for a (possibly real-valued) count; the extremes exact."""
    rate = successes / n
    z2_over_n = z * z / n
    centre = (rate + z2_over_n / 2.0) / (1.0 + z2_over_n)
    half = (z / (1.0 + z2_over_n)) * math.sqrt(rate * (1.0 - rate) / n + z2_over_n / (4.0 * n))
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high


def _phi(both: float, improved: float, regressed: float, neither: float) -> float:
    """The table's correlation, with Newcombe's correction: a positive association below
    ``n / 2`` counts as none, larger ones are reduced by ``n / 2``; 0 when a margin is empty."""
    n = both + improved + regressed + neither
    margins = (both + improved) * (regressed + neither) * (both + regressed) * (improved + neither)
    if margins <= 0:
        return 0.0
    association = both * neither - improved * regressed
    if association > n / 2.0:
        association -= n / 2.0
    elif association >= 0:
        association = 0.0
    return association / math.sqrt(margins)


def _bounds(
    both: float, improved: float, regressed: float, neither: float, z: float
) -> tuple[float, float]:
    n = both + improved + regressed + neither
    current = (both + improved) / n  # this run's pass rate over the compared items
    previous = (both + regressed) / n  # the baseline's
    delta = (improved - regressed) / n
    low_1, high_1 = _wilson(both + improved, n, z)
    low_2, high_2 = _wilson(both + regressed, n, z)
    phi = _phi(both, improved, regressed, neither)
    down_1, up_2 = current - low_1, high_2 - previous
    down_2, up_1 = previous - low_2, high_1 - current
    # max(0, .): the radicand is a sum of squares minus a cross term with |phi| <= 1, so
    # only rounding can take it below zero.
    low = delta - math.sqrt(max(0.0, down_1**2 - 2.0 * phi * down_1 * up_2 + up_2**2))
    high = delta + math.sqrt(max(0.0, down_2**2 - 2.0 * phi * down_2 * up_1 + up_1**2))
    return max(-1.0, low), min(1.0, high)


def _check_table(both: float, improved: float, regressed: float, compared: float) -> None:
    # The relative slack lets a table scaled to another size (real counts) round either way.
    if min(both, improved, regressed) < 0 or both + improved + regressed > compared * (1 + 1e-12):
        raise ValueError(
            "need 0 <= both, improved, regressed and both + improved + regressed <= compared, "
            f"got both={both} improved={improved} regressed={regressed} compared={compared}"
        )


def paired_delta_interval(
    both: float, improved: float, regressed: float, compared: float, level: float = DEFAULT_LEVEL
) -> dict[str, float | str] | None:
    """The interval for ``(improved - regressed) / compared``: ``{"low", "high", "level",
    "method"}``, or None when nothing was compared. ``both`` passed in both runs."""
    _check_table(both, improved, regressed, compared)
    z = _z(level)
    if compared == 0:
        return None
    neither = max(0.0, compared - both - improved - regressed)
    low, high = _bounds(both, improved, regressed, neither, z)
    return {"low": low, "high": high, "level": level, "method": METHOD}


def _decided_at(
    n: float, shares: tuple[float, float, float], margin: float, above: bool, z: float
) -> bool:
    both, improved, regressed = (share * n for share in shares)
    low, high = _bounds(both, improved, regressed, max(0.0, n - both - improved - regressed), z)
    return low > -margin if above else high < -margin


def items_needed(
    both: float,
    improved: float,
    regressed: float,
    compared: float,
    margin: float,
    level: float = DEFAULT_LEVEL,
) -> int | None:
    """The smallest number of compared items at which, with the table's proportions held
    fixed, the interval clears ``-margin``: its low above it when the observed delta is
    above, its high below it when the delta is below. None when it never does (the delta
    is exactly ``-margin``, or the answer is beyond :data:`ITEMS_NEEDED_CEILING`).

    The interval narrows as ``n`` grows, so doubling finds a size that decides and a
    bisection the smallest one. An already decided table answers ``compared`` or fewer.
    """
    _check_table(both, improved, regressed, compared)
    z = _z(level)
    if compared == 0:
        return None
    delta = (improved - regressed) / compared
    if delta == -margin:
        return None
    shares = (both / compared, improved / compared, regressed / compared)
    above = delta > -margin
    high = 1
    while not _decided_at(high, shares, margin, above, z):
        if high >= ITEMS_NEEDED_CEILING:
            return None
        high = min(high * 2, ITEMS_NEEDED_CEILING)
    low = high // 2  # undecided at low (or 0), decided at high
    while high - low > 1:
        middle = (low + high) // 2
        if _decided_at(middle, shares, margin, above, z):
            high = middle
        else:
            low = middle
    return high


def normal_items_needed(
    delta: float, difference_sd: float, margin: float, level: float = DEFAULT_LEVEL
) -> int | None:
    """Items needed when the interval is ``delta +- z * sd / sqrt(n)`` (the trial-aware
    figures): the smallest ``n`` with ``z * sd / sqrt(n) < |delta + margin|``. None when the
    delta sits on the margin, or the answer is past :data:`ITEMS_NEEDED_CEILING`."""
    if difference_sd < 0:
        raise ValueError(f"difference_sd must be >= 0, got {difference_sd}")
    distance = abs(delta + margin)
    if distance == 0:
        return None
    exact = (_z(level) * difference_sd / distance) ** 2
    needed = math.floor(exact) + 1
    return needed if needed <= ITEMS_NEEDED_CEILING else None
