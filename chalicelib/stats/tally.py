"""Small streaming counters shared by the run aggregate and the baseline comparison.

They sit on the settle path once per item per group, so they are plain slotted
classes with the arithmetic inlined.
"""

from __future__ import annotations


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


class PairedScorerTally:
    """One scorer over compared items both runs scored with it, as per-item differences.

    The mean of the differences is the difference of the two means over the same items,
    so this is "both sides recomputed over the intersection" at half the cost.
    """

    __slots__ = ("count", "pass_difference", "score_difference")

    def __init__(self) -> None:
        self.count = 0
        self.pass_difference = 0
        self.score_difference = CompensatedSum()

    def add(
        self, here_score: float, here_passed: bool, there_score: float, there_passed: bool
    ) -> None:
        self.score_difference.add(here_score - there_score)
        self.count += 1
        self.pass_difference += here_passed - there_passed

    def summary(self) -> dict[str, float]:
        return {
            "mean_delta": self.score_difference.value / self.count,
            "pass_rate_delta": self.pass_difference / self.count,
        }
