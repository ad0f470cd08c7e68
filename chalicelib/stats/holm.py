"""Holm's step-down adjustment for testing several groups at once.

With a dozen groups, one of them will show ``p < 0.05`` by luck about half the time;
Holm's method controls the chance of *any* false alarm across the family while being
uniformly more powerful than Bonferroni.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the input order.

    ``None`` entries (groups with nothing to test) stay ``None`` and do not count in the
    family size ``m``. Adjusted values are monotone in the raw ones and capped at 1.
    """
    present = [(p, index) for index, p in enumerate(p_values) if p is not None]
    for p, index in present:
        if math.isnan(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p_values[{index}] must be within 0..1, got {p}")
    present.sort()
    family_size = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running_max = 0.0
    for rank, (p, index) in enumerate(present):
        running_max = max(running_max, min(1.0, (family_size - rank) * p))
        adjusted[index] = running_max
    return adjusted
