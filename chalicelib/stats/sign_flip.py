"""The exact paired sign-flip (permutation) test on per-item differences.

Under "the change did nothing", each item's difference ``current - baseline`` is as likely
to have come out with the opposite sign: the null distribution of their sum is that of
``sum(s_i * d_i)`` over the ``2^m`` sign patterns ``s`` of the ``m`` non-zero differences
(zeros flip to themselves). The two-sided p-value is the share of patterns whose sum is at
least as far from 0 as the observed one, which is what ``scipy.stats.permutation_test(...,
permutation_type="samples")`` computes exactly for one sample.

Per-item differences of trial pass proportions are fractions with small denominators (an
item's usable trials, 1..10), so scaled by their common denominator they are integers, and
the count of patterns per sum is a small integer convolution rather than an enumeration:
one pass per distinct |difference| folding in its binomial multiplicity. The counts are
exact integers, divided once, so the p-value is the correctly rounded ``count / 2^m``: the
same number enumerating the patterns gives. Its work is bounded before it starts
(:func:`convolution_cells` against :data:`EXACT_BUDGET` and :data:`EXACT_BIT_BUDGET`);
every input with ``m <= 20`` fits (at most ``2^20`` patterns), and so does a typical eval of
up to about 1,200 items of 5 trials. Beyond the budget the p-value is a Monte Carlo estimate from
:data:`MONTE_CARLO_RESAMPLES` sign patterns drawn by a generator seeded with
:data:`MONTE_CARLO_SEED` (a settle that is retried gives the same figure), reported with
its binomial standard error. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

#: Exact when the convolution touches at most this many (sum, count) cells (a bound worked
#: out before it starts: :func:`convolution_cells`). 2^21 + 2^20 covers any 20 differences.
EXACT_BUDGET = 3 * 2**20
#: ...and at most this many cells times bits per count (a count is up to ``2^m``, so a cell
#: costs more as ``m`` grows): about 0.2 s of CPU here at its edge (docs/statistics.md).
EXACT_BIT_BUDGET = 10**9
#: Every input with this many non-zero differences or fewer is computed exactly.
EXACT_GUARANTEED = 20
MONTE_CARLO_RESAMPLES = 20_000
MONTE_CARLO_SEED = 26


@dataclass(frozen=True)
class SignFlipResult:
    p_value: float
    exact: bool
    #: Non-zero differences: the items that carry evidence.
    nonzero: int
    #: Sign patterns drawn (Monte Carlo), or None when exact.
    resamples: int | None = None
    #: The binomial standard error of a Monte Carlo p-value; 0.0 when exact.
    mc_error: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "p_value_method": "sign_flip_exact" if self.exact else "sign_flip_monte_carlo",
            "exact": self.exact,
            "nonzero_item_count": self.nonzero,
            "resamples": self.resamples,
            "mc_error": self.mc_error,
        }


def _scaled(differences: Mapping[Fraction, int]) -> tuple[dict[int, int], int]:
    """Multiplicities of each |difference| scaled to an integer, and the observed sum."""
    scale = 1
    for difference, count in differences.items():
        if count < 0:
            raise ValueError(f"a difference's count must be >= 0, got {count}")
        scale = math.lcm(scale, difference.denominator)
    magnitudes: dict[int, int] = {}
    observed = 0
    for difference, count in differences.items():
        value = int(difference * scale)
        if value == 0 or count == 0:
            continue
        observed += value * count
        magnitudes[abs(value)] = magnitudes.get(abs(value), 0) + count
    return magnitudes, observed


def convolution_cells(magnitudes: dict[int, int], ceiling: int) -> int:
    """An upper bound on the (sum, count) cells :func:`_low_tail_count` touches: before each
    magnitude is folded in, the sums reached are at most ``ceiling + 1``, at most the
    lattice points up to the magnitudes folded so far, and at most the sign patterns of
    them; each meets ``multiplicity + 1`` binomial terms."""
    cells, reach, patterns = 0, 0, 1
    for magnitude, multiplicity in sorted(magnitudes.items()):
        cells += min(ceiling + 1, reach + 1, patterns) * (multiplicity + 1)
        reach += magnitude * multiplicity
        patterns *= multiplicity + 1
    return cells


def _low_tail_count(magnitudes: dict[int, int], ceiling: int) -> int:
    """Sign patterns whose positive part sums to at most ``ceiling``.

    With ``u`` the sum of the magnitudes given a + sign, the signed sum is ``2u - total``;
    sums above ``ceiling`` never come back down, so they are dropped as they appear."""
    counts: dict[int, int] = {0: 1}
    for magnitude, multiplicity in sorted(magnitudes.items()):
        weights = [math.comb(multiplicity, chosen) for chosen in range(multiplicity + 1)]
        folded: dict[int, int] = {}
        for positive, ways in counts.items():
            for chosen, weight in enumerate(weights):
                reached = positive + magnitude * chosen
                if reached > ceiling:
                    break
                folded[reached] = folded.get(reached, 0) + ways * weight
        counts = folded
    return sum(counts.values())


def _monte_carlo(
    magnitudes: dict[int, int], observed: int, resamples: int, seed: int
) -> tuple[float, float]:
    """``(p, standard error)`` from ``resamples`` random sign patterns.

    A pattern's number of + signs among ``m`` equal magnitudes is Binomial(m, 1/2): the
    popcount of ``m`` random bits, so one draw costs one step per distinct magnitude."""
    generator = random.Random(seed)
    bits = generator.getrandbits
    terms = list(magnitudes.items())
    target = abs(observed)
    hits = 0
    for _ in range(resamples):
        total = 0
        for magnitude, multiplicity in terms:
            total += magnitude * (2 * bits(multiplicity).bit_count() - multiplicity)
        hits += abs(total) >= target
    # (hits + 1) / (resamples + 1): the observed pattern is one of the patterns, so the
    # estimate is a valid p-value (never 0) rather than merely a consistent one.
    p_value = (hits + 1) / (resamples + 1)
    return p_value, math.sqrt(p_value * (1.0 - p_value) / resamples)


def sign_flip_test(
    differences: Mapping[Fraction, int],
    *,
    resamples: int = MONTE_CARLO_RESAMPLES,
    seed: int = MONTE_CARLO_SEED,
) -> SignFlipResult:
    """The two-sided paired sign-flip test of ``differences`` (value -> how many items).

    Exact when the convolution fits :data:`EXACT_BUDGET` (always for at most
    :data:`EXACT_GUARANTEED` non-zero differences), else Monte Carlo (``resamples`` seeded
    draws, with the standard error in ``mc_error``). No non-zero difference: p = 1."""
    magnitudes, observed = _scaled(differences)
    nonzero = sum(magnitudes.values())
    if observed == 0:
        return SignFlipResult(p_value=1.0, exact=True, nonzero=nonzero)
    total = sum(magnitude * count for magnitude, count in magnitudes.items())
    # |2u - total| >= |observed| splits into two mirror-image tails (u <-> total - u);
    # they are disjoint because observed != 0, so p is twice the low one.
    ceiling = (total - abs(observed)) // 2
    cells = convolution_cells(magnitudes, ceiling)
    if cells <= EXACT_BUDGET and cells * nonzero <= EXACT_BIT_BUDGET:
        low = _low_tail_count(magnitudes, ceiling)
        return SignFlipResult(p_value=min(1.0, 2 * low / 2**nonzero), exact=True, nonzero=nonzero)
    p_value, error = _monte_carlo(magnitudes, observed, resamples, seed)
    return SignFlipResult(
        p_value=p_value, exact=False, nonzero=nonzero, resamples=resamples, mc_error=error
    )
