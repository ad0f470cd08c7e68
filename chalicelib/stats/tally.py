"""Small streaming counters shared by the run aggregate and the baseline comparison.

They sit on the settle path once per item per group, so they are plain slotted
classes with the arithmetic inlined.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chalicelib.stats.student_t import paired_t_interval
from chalicelib.stats.wilcoxon import signed_rank_test

_BINARY = (0.0, 1.0)


class CompensatedSum:
    """A running float sum with Neumaier compensation.

    A plain running sum of ``0.1`` ten times is ``0.9999999999999999``; summing scores
    of 100,000 items drifts further. This keeps the error at one rounding, in O(1) memory.
    """

    __slots__ = ("compensation", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self.compensation = 0.0

    def add(self, value: float) -> None:
        total = self.total
        new_total = total + value
        if abs(total) >= abs(value):
            self.compensation += (total - new_total) + value
        else:
            self.compensation += (value - new_total) + total
        self.total = new_total

    @property
    def value(self) -> float:
        return self.total + self.compensation

    def merge(self, other: CompensatedSum) -> None:
        """Add another slice's sum: its total as a term, both compensations as they are."""
        compensation = other.compensation
        self.add(other.total)
        self.compensation += compensation


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

    def to_state(self) -> dict[str, Any]:
        """Plain JSON-able data; :meth:`from_state` rebuilds an equal tally."""
        return {
            "count": self.count,
            "pass_difference": self.pass_difference,
            "score_difference": [self.score_difference.total, self.score_difference.compensation],
            "differences": sorted([value, count] for value, count in self.differences.items()),
            "continuous": self.continuous,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> PairedScorerTally:
        tally = cls()
        tally.count = int(state["count"])
        tally.pass_difference = int(state["pass_difference"])
        tally.score_difference.total, tally.score_difference.compensation = (
            float(part) for part in state["score_difference"]
        )
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
