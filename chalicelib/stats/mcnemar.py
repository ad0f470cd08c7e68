"""The exact McNemar test of a paired before/after split.

Among items compared across two runs, only the ones that changed verdict carry
information. Under "nothing changed" each flip is equally likely to go either way, so
the smaller side of the split is Binomial(b + c, 1/2) and the two-sided p-value is twice
its lower tail.

Up to ``EXACT_FLIP_LIMIT`` flips the tail is summed in exact integers and divided once,
so the p-value is the correctly rounded double (``6`` against ``0`` is exactly
``0.03125``). Beyond that it is summed in log space, relative to its largest term, so
thousands of flips neither underflow nor lose precision: the only rounding is in
``math.lgamma`` (relative error of a few ``1e-16 * n``).
"""

from __future__ import annotations

import math

_LN2 = math.log(2.0)
# 2**-1000 is still a normal double, and the integer sum costs well under a millisecond.
EXACT_FLIP_LIMIT = 1000
# Terms below this fraction of the running sum cannot change a double any more.
_NEGLIGIBLE = 2.0**-60
# The smallest positive double: a p-value is a probability of something that can
# happen, so it is never reported as exactly 0 even when it is below what a float holds.
_SMALLEST_P = math.ulp(0.0)


def _exact_two_sided_p(k: int, n: int) -> float:
    """``2 * P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, correctly rounded (small ``n``)."""
    coefficient = 1
    tail_count = 1
    for i in range(1, k + 1):
        coefficient = coefficient * (n - i + 1) // i  # C(n, i), exact
        tail_count += coefficient
    return 2 * tail_count / 2**n


def _log_binomial_half_lower_tail(k: int, n: int) -> float:
    """``log P(X <= k)`` for ``X ~ Binomial(n, 1/2)``, with ``k <= n / 2``.

    Sums from the largest term (``i = k``) downwards; each step multiplies by
    ``C(n, i-1) / C(n, i) = i / (n - i + 1) <= 1``, so the running term only shrinks and
    the loop stops as soon as it is negligible (after O(sqrt(n)) steps, not O(k)).
    """
    log_top_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * _LN2
    relative_sum = 1.0
    term = 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        relative_sum += term
        if term < relative_sum * _NEGLIGIBLE:
            break
    return log_top_term + math.log(relative_sum)


def mcnemar_exact_p(improved: int, regressed: int) -> float:
    """Exact two-sided McNemar p-value for ``improved`` vs ``regressed`` flips.

    ``1.0`` when nothing flipped (and whenever the doubled tail reaches 1).
    """
    if improved < 0 or regressed < 0:
        raise ValueError(f"flip counts must be >= 0, got {improved}/{regressed}")
    n = improved + regressed
    if n == 0:
        return 1.0
    smaller = min(improved, regressed)
    if n <= EXACT_FLIP_LIMIT:
        return min(1.0, _exact_two_sided_p(smaller, n))
    log_p = _LN2 + _log_binomial_half_lower_tail(smaller, n)
    if log_p >= 0.0:
        return 1.0
    return max(math.exp(log_p), _SMALLEST_P)
