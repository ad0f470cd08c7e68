"""The paired Wilcoxon signed-rank test on per-item score differences.

A continuous scorer (an LLM judge's 0.7, an embedding similarity) moves by amounts a pass
flag cannot see; the signed-rank test asks whether the differences ``current - baseline``
are symmetric about 0 without assuming they are normal. It reproduces
``scipy.stats.wilcoxon(d)`` with scipy 1.17.1's defaults (``zero_method="wilcox"``,
``correction=False``, two-sided, ``method="auto"``), choosing the method the way scipy's
``auto`` does, where ``len(d)`` counts the zero differences too:

- ``len(d) <= 50`` with no zero and no tied ``|d|``: the exact null distribution of the
  positive rank sum ``R+`` (``method="exact"``);
- ``len(d) <= 13`` with a zero or a tie: scipy runs a permutation test whose 2**13 sign
  flips fit in its 9,999 resamples, i.e. the exact sign-flip distribution of ``R+`` with
  average ranks; here it is counted in integers (``method="exact_permutation"``);
- otherwise the normal approximation with the tie correction, zeros dropped and no
  continuity correction (``method="normal_approximation"``).

The sample is a mapping ``difference -> count`` (the comparison keeps per-item
differences as such a counter, so a binary scorer's thousands of items are three entries).
When no difference is non-zero nothing moved: ``p_value`` is 1 (scipy says 1 up to 13 items
and NaN beyond, dividing 0 by 0). Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: scipy's ``auto`` uses the exact distribution only up to this many differences.
EXACT_SIZE_LIMIT = 50
#: ...and, with ties or zeros, the enumerated sign-flip distribution up to this many.
PERMUTATION_SIZE_LIMIT = 13
EXACT = "exact"
EXACT_PERMUTATION = "exact_permutation"
NORMAL = "normal_approximation"


@dataclass(frozen=True)
class SignedRankResult:
    """One test: ``statistic`` is scipy's ``min(R+, R-)``; ``n`` the non-zero differences."""

    statistic: float
    p_value: float
    method: str
    n: int
    zero_count: int
    rank_sum_positive: float
    rank_sum_negative: float
    #: The normal approximation's z (``(R+ - mean) / sd``), for every method: cheap, and it
    #: says which way the ranks lean.
    z: float | None
    #: Matched-pairs rank-biserial correlation ``(R+ - R-) / (R+ + R-)``, in -1..1
    #: (Kerby 2014); None when every difference is 0.
    effect_size: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "method": self.method,
            "n": self.n,
            "zero_count": self.zero_count,
            "z": self.z,
            "rank_biserial": self.effect_size,
        }


@dataclass(frozen=True)
class _Ranked:
    """The non-zero differences ranked by ``|d|`` with average ranks, in doubled units so
    every rank is an integer: per distinct ``|d|``, (doubled average rank, positives, negatives)."""

    groups: tuple[tuple[int, int, int], ...]
    n: int
    zero_count: int

    @property
    def has_ties(self) -> bool:
        return any(positive + negative > 1 for _, positive, negative in self.groups)

    def doubled_positive_sum(self) -> int:
        return sum(rank2 * positive for rank2, positive, _ in self.groups)

    def tie_correction(self) -> int:
        return sum((p + q) ** 3 - (p + q) for _, p, q in self.groups)


def _rank(differences: Mapping[float, int]) -> _Ranked:
    by_size: dict[float, list[int]] = {}
    zeros = 0
    for value, count in differences.items():
        if count < 0:
            raise ValueError(f"difference {value!r} counted {count} times")
        if not math.isfinite(value):
            raise ValueError(f"differences must be finite, got {value}")
        if value == 0:
            zeros += count
            continue
        signs = by_size.setdefault(abs(value), [0, 0])
        signs[0 if value > 0 else 1] += count
    groups = []
    below = 0  # how many non-zero differences are smaller than this |d|
    for size in sorted(by_size):
        positive, negative = by_size[size]
        tied = positive + negative
        if tied == 0:
            continue
        # Average of ranks below+1 .. below+tied, doubled: 2*below + tied + 1.
        groups.append((2 * below + tied + 1, positive, negative))
        below += tied
    return _Ranked(tuple(groups), below, zeros)


@lru_cache(maxsize=64)
def _signed_rank_counts(n: int) -> tuple[int, ...]:
    """How many of the 2**n sign patterns of ranks 1..n give each ``R+`` = 0..n(n+1)/2."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for total, ways in enumerate(counts):
            grown[total + rank] += ways
        counts = grown
    return tuple(counts)


def _subset_sum_counts(weights: Iterable[int]) -> list[int]:
    """How many of the 2**len(weights) subsets of ``weights`` sum to each total."""
    counts = [1]
    for weight in weights:
        grown = counts + [0] * weight
        for total, ways in enumerate(counts):
            if ways:
                grown[total + weight] += ways
        counts = grown
    return counts


def _two_sided_from_counts(counts: list[int] | tuple[int, ...], observed: int, n: int) -> float:
    """``min(1, 2 * min(P(S <= obs), P(S >= obs)))`` for ``S`` counted over ``2**n``."""
    at_most = sum(counts[: observed + 1])
    at_least = sum(counts[observed:])
    return min(1.0, 2 * min(at_most, at_least) / 2**n)


def _normal_z(ranked: _Ranked, positive_sum: float) -> float | None:
    n = ranked.n
    if n == 0:
        return None
    mean = n * (n + 1.0) * 0.25
    sd = math.sqrt((n * (n + 1.0) * (2.0 * n + 1.0) - ranked.tie_correction() / 2) / 24)
    return (positive_sum - mean) / sd


def _method(ranked: _Ranked) -> str:
    size = ranked.n + ranked.zero_count
    if size <= EXACT_SIZE_LIMIT and not (ranked.has_ties or ranked.zero_count):
        return EXACT
    if size <= PERMUTATION_SIZE_LIMIT:
        return EXACT_PERMUTATION
    return NORMAL


def signed_rank_test(differences: Mapping[float, int] | Iterable[float]) -> SignedRankResult:
    """The two-sided signed-rank test of ``differences`` (a ``value -> count`` mapping, or
    the values themselves); raises on an empty sample."""
    counts = (
        differences if isinstance(differences, Mapping) else Counter(float(d) for d in differences)
    )
    ranked = _rank(counts)
    if ranked.n + ranked.zero_count == 0:
        raise ValueError("the signed-rank test needs at least one difference")
    doubled_positive = ranked.doubled_positive_sum()
    positive = doubled_positive / 2
    negative = ranked.n * (ranked.n + 1) / 2 - positive
    z = _normal_z(ranked, positive)
    method = _method(ranked)
    if ranked.n == 0:
        p_value = 1.0
    elif method == EXACT:
        p_value = _two_sided_from_counts(_signed_rank_counts(ranked.n), int(positive), ranked.n)
    elif method == EXACT_PERMUTATION:
        weights = [rank2 for rank2, p, q in ranked.groups for _ in range(p + q)]
        p_value = _two_sided_from_counts(_subset_sum_counts(weights), doubled_positive, ranked.n)
    else:
        assert z is not None  # n > 0
        p_value = math.erfc(abs(z) / math.sqrt(2.0))
    total = positive + negative
    return SignedRankResult(
        statistic=min(positive, negative),
        p_value=p_value,
        method=method,
        n=ranked.n,
        zero_count=ranked.zero_count,
        rank_sum_positive=positive,
        rank_sum_negative=negative,
        z=z,
        effect_size=(positive - negative) / total if total else None,
    )
