"""Small streaming counters shared by the run aggregate and the baseline comparison."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CompensatedSum:
    """A running float sum with Neumaier compensation.

    A plain running sum of ``0.1`` ten times is ``0.9999999999999999``; summing scores
    of 100,000 items drifts further. This keeps the error at one rounding, in O(1) memory.
    """

    total: float = 0.0
    compensation: float = 0.0

    def add(self, value: float) -> None:
        new_total = self.total + value
        if abs(self.total) >= abs(value):
            self.compensation += (self.total - new_total) + value
        else:
            self.compensation += (value - new_total) + self.total
        self.total = new_total

    @property
    def value(self) -> float:
        return self.total + self.compensation


@dataclass
class ScorerTally:
    """One scorer's score sum and pass count over the items it scored."""

    count: int = 0
    passed: int = 0
    score_sum: CompensatedSum = field(default_factory=CompensatedSum)

    def add(self, score: float, passed: bool) -> None:
        self.score_sum.add(score)
        self.count += 1
        self.passed += passed

    def summary(self) -> dict[str, float]:
        return {"mean": self.score_sum.value / self.count, "pass_rate": self.passed / self.count}
