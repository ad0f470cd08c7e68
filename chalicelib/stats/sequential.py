"""An always-valid sequential test on paired pass/fail outcomes: stop once the answer is known.

A run with ``early_stop`` executes its items in a random order and, as their results are
recorded, counts each item against its baseline outcome: ``both`` passed, ``improved``
(failed before, passes now), ``regressed`` (passed before, fails now), ``neither``. Each
compared item is one draw of ``X = current - baseline`` in ``{-1, 0, +1}``, whose mean is the
pass-rate delta ``delta``. With the margin ``m`` (the eval's ``max_regression``) two one-sided
tests run side by side, each at level ``alpha``:

- ``regressed`` rejects ``H_R: delta >= -m`` (the candidate is at worst ``m`` below the
  baseline), in favour of ``delta < -m``;
- ``not_worse`` rejects ``H_N: delta <= -m``, in favour of ``delta > -m``.

**The method: betting with a mixture of constant bets** (Waudby-Smith & Ramdas 2024,
"Estimating means of bounded random variables by betting", JRSS B 86(1), section 5.5,
"diversified Kelly"; the test-martingale form is Shafer's testing by betting, and a mixture
of likelihood-ratio-type martingales is the same idea as Robbins' mixture SPRT, Johari et al.
2017's mSPRT). With ``Y = X + m``, ``E[Y] >= 0`` under ``H_R``, and for any bet ``lam`` in
``[0, 1/(1+m))`` the wealth ``prod_i (1 - lam * Y_i)`` is a non-negative supermartingale
under ``H_R`` (a martingale at ``delta = -m``); so is any average of such wealths over a
fixed grid of bets. Ville's inequality then gives ``P(sup_t M_t >= 1/alpha) <= alpha``:
**whenever and however often the counts are looked at, the chance that ``regressed`` is ever
declared while ``delta >= -m`` is at most ``alpha``** (and the same for ``not_worse`` while
``delta <= -m``, with ``prod_i (1 + lam * Y_i)``, ``lam < 1/(1-m)``). At exactly ``delta = -m``
both nulls hold, so the chance of any decision there is at most ``2 * alpha``.

Why this one: with constant bets the wealth depends only on the four counts (the order of
the items drops out), so the engine can test from the run row's counters alone, at any time,
without a scan of results; the mixture over a geometric grid of bets adapts to effects from
a fraction of a point to the whole scale at a price of ``log(grid size)`` in wealth.

The guarantee assumes the compared items are exchangeable draws (the seeded random order is
what makes each prefix of the run a random sample of its items) and that an item's outcome
does not decide when it is recorded relative to the others. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

REGRESSED = "regressed"
NOT_WORSE = "not_worse"
DIRECTIONS = (REGRESSED, NOT_WORSE)
METHOD = "mixture_betting_test"
METHOD_REFERENCE = (
    "mixture of constant-bet test martingales (Waudby-Smith & Ramdas 2024, JRSS B; "
    "Ville's inequality), one per direction, on the paired item differences"
)
#: The bets the mixture averages: fractions of the largest bet that keeps wealth positive,
#: geometric from 1% to 90% (a bet at 100% could lose everything on one item).
GRID_SIZE = 20
GRID_LOW = 0.01
GRID_HIGH = 0.9


@dataclass(frozen=True)
class PairedCounts:
    """The paired table of the items compared so far (errored or unpaired items excluded)."""

    both: int = 0
    improved: int = 0
    regressed: int = 0
    neither: int = 0

    @property
    def compared(self) -> int:
        return self.both + self.improved + self.regressed + self.neither

    @property
    def delta(self) -> float | None:
        if self.compared == 0:
            return None
        return (self.improved - self.regressed) / self.compared

    def merge(self, other: PairedCounts) -> PairedCounts:
        return PairedCounts(
            self.both + other.both,
            self.improved + other.improved,
            self.regressed + other.regressed,
            self.neither + other.neither,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "both_passed": self.both,
            "improved": self.improved,
            "regressed": self.regressed,
            "neither_passed": self.neither,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PairedCounts:
        return cls(
            int(raw.get("both_passed", 0)),
            int(raw.get("improved", 0)),
            int(raw.get("regressed", 0)),
            int(raw.get("neither_passed", 0)),
        )


def pair_of(baseline_passed: bool, current_passed: bool) -> PairedCounts:
    """One compared item as a table."""
    if baseline_passed:
        return PairedCounts(both=1) if current_passed else PairedCounts(regressed=1)
    return PairedCounts(improved=1) if current_passed else PairedCounts(neither=1)


def _check_margin(margin: float) -> None:
    if not 0.0 <= margin < 1.0:
        raise ValueError(f"margin must be within 0..1 (exclusive of 1), got {margin}")


def _check(margin: float, alpha: float) -> None:
    _check_margin(margin)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")


def bet_grid() -> list[float]:
    """The bets as fractions of the largest allowed one (geometric, :data:`GRID_SIZE`)."""
    ratio = (GRID_HIGH / GRID_LOW) ** (1.0 / (GRID_SIZE - 1))
    return [GRID_LOW * ratio**j for j in range(GRID_SIZE)]


def log_factors(margin: float, direction: str) -> list[tuple[float, float, float]]:
    """Per bet of the grid, the log wealth factor of a (regressed, concordant, improved) item.

    ``regressed`` bets that ``delta < -m``: its wealth grows on regressed items. ``not_worse``
    bets that ``delta > -m``. Exposed so a simulation can vectorise the same wealth.
    """
    _check_margin(margin)
    if direction == REGRESSED:
        top = 1.0 / (1.0 + margin)
        return [
            (
                math.log1p(f * top * (1.0 - margin)),
                math.log1p(-f * top * margin),
                math.log1p(-f * top * (1.0 + margin)),
            )
            for f in bet_grid()
        ]
    if direction == NOT_WORSE:
        top = 1.0 / (1.0 - margin)
        return [
            (
                math.log1p(-f * top * (1.0 - margin)),
                math.log1p(f * top * margin),
                math.log1p(f * top * (1.0 + margin)),
            )
            for f in bet_grid()
        ]
    raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def log_wealth(counts: PairedCounts, margin: float, direction: str) -> float:
    """The log of the mixture wealth against ``direction``'s null, from the counts alone."""
    _check_margin(margin)
    concordant = counts.both + counts.neither
    logs = [
        counts.regressed * r + concordant * c + counts.improved * i
        for r, c, i in log_factors(margin, direction)
    ]
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs)) - math.log(len(logs))


@dataclass(frozen=True)
class SequentialResult:
    """The test at one look: the decision (None: keep going) and each direction's evidence."""

    decision: str | None
    log_wealth_regressed: float
    log_wealth_not_worse: float
    threshold: float
    compared: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "e_value_regressed": _e_value(self.log_wealth_regressed),
            "e_value_not_worse": _e_value(self.log_wealth_not_worse),
            "threshold": round(math.exp(self.threshold), 9),
            "compared_item_count": self.compared,
        }


def _e_value(log_value: float) -> float:
    return round(math.exp(min(log_value, 700.0)), 6)


def sequential_test(counts: PairedCounts, margin: float, alpha: float) -> SequentialResult:
    """Decide ``regressed`` or ``not_worse`` once its mixture wealth reaches ``1/alpha``.

    Valid at every look (optional stopping): each decision's error is at most ``alpha``
    under its null, however many times this is called as the counts grow. ``regressed`` is
    checked first: should both ever reach the threshold, the regression is reported.
    """
    _check(margin, alpha)
    threshold = math.log(1.0 / alpha)
    against = log_wealth(counts, margin, REGRESSED)
    for_ = log_wealth(counts, margin, NOT_WORSE)
    decision = None
    if against >= threshold:
        decision = REGRESSED
    elif for_ >= threshold:
        decision = NOT_WORSE
    return SequentialResult(decision, against, for_, threshold, counts.compared)
