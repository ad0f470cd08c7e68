"""Small streaming counters shared by the run aggregate and the baseline comparison.

They sit on the settle path once per item per group, so they are plain slotted
classes with the arithmetic inlined.

Every counter here is a *partial aggregate*: :meth:`merge` folds in another one fed a
different share of the same stream, and ``state()`` / ``from_state()`` carry it through
JSON (a sliced settle stores each slice's partial in S3 and combines them). Merging the
partials of any split gives exactly what one pass gives: counts are integers, and sums
are kept exactly (:class:`CompensatedSum`), so no split can move a figure by a rounding.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from chalicelib.stats.student_t import paired_t_interval
from chalicelib.stats.wilcoxon import signed_rank_test

_BINARY = (0.0, 1.0)


class CompensatedSum:
    """A running float sum kept exactly, as a short list of non-overlapping partials.

    A plain running sum of ``0.1`` ten times is ``0.9999999999999999``; summing scores
    of 100,000 items drifts further. The partials (Shewchuk's algorithm, as behind
    :func:`math.fsum`) hold the sum with no error at all, so :attr:`value` is the correctly
    rounded sum whatever the order of the adds, and two sums over two halves of a stream
    merge into exactly the sum over the whole. Scores in [0, 1] need one to three partials.
    """

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, value: float) -> None:
        partials = self.partials
        kept = 0
        for other in partials:
            if abs(value) < abs(other):
                value, other = other, value
            high = value + other
            low = other - (high - value)
            if low:
                partials[kept] = low
                kept += 1
            value = high
        partials[kept:] = [value]

    @property
    def value(self) -> float:
        return math.fsum(self.partials)

    def merge(self, other: CompensatedSum) -> None:
        for partial in other.partials:
            self.add(partial)

    def state(self) -> list[float]:
        return list(self.partials)

    @classmethod
    def from_state(cls, state: list[float]) -> CompensatedSum:
        made = cls()
        made.partials = [float(partial) for partial in state]
        return made


class ScorerTally:
    """One scorer over the items it scored: score sum and pass count."""

    __slots__ = ("count", "passed", "score_sum")

    def __init__(self) -> None:
        self.count = 0
        self.passed = 0
        self.score_sum = CompensatedSum()

    def add(self, score: float, passed: bool) -> None:
        self.score_sum.add(score)
        self.count += 1
        self.passed += passed

    def summary(self) -> dict[str, float]:
        return {"mean": self.score_sum.value / self.count, "pass_rate": self.passed / self.count}

    def merge(self, other: ScorerTally) -> None:
        self.count += other.count
        self.passed += other.passed
        self.score_sum.merge(other.score_sum)

    def state(self) -> dict[str, Any]:
        return {"count": self.count, "passed": self.passed, "score_sum": self.score_sum.state()}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ScorerTally:
        made = cls()
        made.count = int(state["count"])
        made.passed = int(state["passed"])
        made.score_sum = CompensatedSum.from_state(state["score_sum"])
        return made


#: Differences are rounded to this many decimals before they are counted, so that
#: ``0.3 - 0.2`` and ``0.2 - 0.1`` tie and a mean over trials that is 1e-17 off its twin is
#: a zero, as a person reading the scores would count them.
DIFFERENCE_DECIMALS = 12


class PairedScorerTally:
    """One scorer over compared items both runs scored with it, as per-item differences.

    The mean of the differences is the difference of the two means over the same items,
    so this is "both sides recomputed over the intersection" at half the cost. The
    differences themselves are kept as a ``difference -> count`` counter (a 0/1 scorer's
    are at most three entries) for the signed-rank test and the t interval, which a scorer
    gets once any score it compared is not 0 or 1 (``continuous``).
    """

    __slots__ = ("continuous", "count", "differences", "pass_difference", "score_difference")

    def __init__(self) -> None:
        self.count = 0
        self.pass_difference = 0
        self.score_difference = CompensatedSum()
        self.differences: Counter[float] = Counter()
        self.continuous = False

    def add(
        self, here_score: float, here_passed: bool, there_score: float, there_passed: bool
    ) -> None:
        difference = here_score - there_score
        self.score_difference.add(difference)
        self.count += 1
        self.pass_difference += here_passed - there_passed
        # + 0.0 folds round()'s -0.0 into 0.0 (equal keys either way; this keeps states tidy).
        self.differences[round(difference, DIFFERENCE_DECIMALS) + 0.0] += 1
        if not self.continuous and (here_score not in _BINARY or there_score not in _BINARY):
            self.continuous = True

    def merge(self, other: PairedScorerTally) -> None:
        """Fold in the tally of another slice of items (disjoint from this one's)."""
        self.count += other.count
        self.pass_difference += other.pass_difference
        self.score_difference.merge(other.score_difference)
        self.differences.update(other.differences)
        self.continuous = self.continuous or other.continuous

    def state(self) -> dict[str, Any]:
        """Plain JSON-able data; :meth:`from_state` rebuilds an equal tally."""
        return {
            "count": self.count,
            "pass_difference": self.pass_difference,
            "score_difference": self.score_difference.state(),
            "differences": sorted([value, count] for value, count in self.differences.items()),
            "continuous": self.continuous,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> PairedScorerTally:
        tally = cls()
        tally.count = int(state["count"])
        tally.pass_difference = int(state["pass_difference"])
        tally.score_difference = CompensatedSum.from_state(state["score_difference"])
        tally.differences = Counter({float(v): int(c) for v, c in state["differences"]})
        tally.continuous = bool(state["continuous"])
        return tally

    def summary(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "mean_delta": self.score_difference.value / self.count,
            "pass_rate_delta": self.pass_difference / self.count,
        }
        if self.continuous:
            summary.update(continuous_figures(self.differences))
        return summary


def continuous_figures(differences: Counter[float]) -> dict[str, Any]:
    """A continuous scorer's additions: the mean delta's t interval and the signed-rank test."""
    return {
        "continuous": True,
        "mean_delta_interval": paired_t_interval(differences),
        "wilcoxon": signed_rank_test(differences).as_dict(),
    }
