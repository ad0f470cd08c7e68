"""Unbiased pass@k and pass^k from ``n`` trials of an item, ``c`` of which passed.

Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1): the chance
that at least one of ``k`` trials drawn without replacement from the ``n`` passes is
``1 - C(n - c, k) / C(n, k)``; its pass^k counterpart, the chance that all ``k`` pass, is
``C(c, k) / C(n, k)``. Both are unbiased for the item's true figure at ``k <= n``, which
"any of the k trials passed" (the ``any`` reducer) is only at ``k == n``.

The ratios are taken in exact integers (``math.comb``) and divided once, so each is the
correctly rounded double; Chen et al.'s product form is the reference the tests hold them to.
Pure: no I/O.
"""

from __future__ import annotations

import math


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c} n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (an item with fewer usable trials has no pass@{k})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that at least one of ``k`` of the item's trials passes."""
    _check(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The unbiased chance that all ``k`` of ``k`` of the item's trials pass (pass^k)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)
