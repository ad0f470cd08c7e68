"""The early-stop sequential test: its error rate under optional stopping, by simulation, its
power on a clear regression, and its properties.

The nulls, precisely (``m`` the margin, ``delta`` the paired pass-rate delta):

- ``regressed`` is an error when ``delta >= -m``; its hardest case is ``delta = -m`` (there the
  wealth is a martingale), and "no change" (``delta = 0``) is the case a user meets most;
- ``not_worse`` is an error when ``delta <= -m``; its hardest case is ``delta = -m`` too.

Each simulated run looks after **every** item (the engine looks less often: at batch reads and
watch re-reads, a subset of these looks, so its error is no larger) and stops at the first
decision. 10,000 runs per case; the bound is ``alpha + 3`` standard errors of a proportion at
``alpha``. numpy vectorises the same wealth the engine computes (``log_factors``), and a
check ties the vectorised wealth to the pure function on the simulated counts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from chalicelib.stats.sequential import (
    NOT_WORSE,
    REGRESSED,
    PairedCounts,
    log_factors,
    log_wealth,
    pair_of,
    sequential_test,
)

ALPHA = 0.05
RUNS = 10_000
ITEMS = 500
CHUNK = 1_000
BOUND = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


def _vector_log_wealth(
    regressed: np.ndarray, concordant: np.ndarray, improved: np.ndarray, margin: float, way: str
) -> np.ndarray:
    factors = log_factors(margin, way)
    total: np.ndarray | None = None
    for r, c, i in factors:  # a running log-sum-exp: one table of wealths in memory at a time
        logs = regressed * r + concordant * c + improved * i
        total = logs if total is None else np.logaddexp(total, logs)
    assert total is not None
    return np.asarray(total - math.log(len(factors)))


def _simulate(
    p_regressed: float, p_improved: float, margin: float, seed: int
) -> tuple[dict[str, int], np.ndarray]:
    """Decisions of :data:`RUNS` runs of :data:`ITEMS` items (looking after each), and the
    item at which each run stopped (``ITEMS`` when it never decided)."""
    rng = np.random.default_rng(seed)
    threshold = math.log(1 / ALPHA)
    decided = {REGRESSED: 0, NOT_WORSE: 0}
    stops = []
    looked = np.arange(1, ITEMS + 1)
    for _ in range(RUNS // CHUNK):
        draw = rng.random((CHUNK, ITEMS))
        regressed = np.cumsum(draw < p_regressed, axis=1)
        improved = np.cumsum(draw >= 1 - p_improved, axis=1)
        concordant = looked - regressed - improved
        first = {}
        for way in (REGRESSED, NOT_WORSE):
            hit = _vector_log_wealth(regressed, concordant, improved, margin, way) >= threshold
            first[way] = np.where(hit.any(axis=1), hit.argmax(axis=1), ITEMS)
        # regressed is checked first at a look where both reach the threshold
        regressed_first = first[REGRESSED] <= first[NOT_WORSE]
        decided[REGRESSED] += int((regressed_first & (first[REGRESSED] < ITEMS)).sum())
        decided[NOT_WORSE] += int((~regressed_first & (first[NOT_WORSE] < ITEMS)).sum())
        stops.append(np.minimum(first[REGRESSED], first[NOT_WORSE]) + 1)
        # The vectorised wealth is the engine's: compare on a few of the simulated tables.
        for row, col in ((0, ITEMS - 1), (1, ITEMS // 2), (2, 7)):
            counts = PairedCounts(
                both=int(concordant[row, col]),
                regressed=int(regressed[row, col]),
                improved=int(improved[row, col]),
            )
            for way in (REGRESSED, NOT_WORSE):
                vector = _vector_log_wealth(
                    regressed[row, col], concordant[row, col], improved[row, col], margin, way
                )
                assert float(vector) == pytest.approx(log_wealth(counts, margin, way), abs=1e-9)
    return decided, np.concatenate(stops)


def test_no_change_is_never_called_a_regression_more_often_than_alpha() -> None:
    # delta = 0 with a margin of 5 points, 20% of the items discordant.
    decided, _ = _simulate(0.10, 0.10, 0.05, seed=1)
    assert decided[REGRESSED] / RUNS <= BOUND


def test_at_the_margin_neither_answer_errs_more_often_than_alpha() -> None:
    # delta = -m exactly: the boundary of both nulls, where each wealth is a martingale.
    decided, _ = _simulate(0.10, 0.05, 0.05, seed=2)
    assert decided[REGRESSED] / RUNS <= BOUND
    assert decided[NOT_WORSE] / RUNS <= BOUND


def test_with_no_margin_no_change_errs_in_neither_direction_more_than_alpha() -> None:
    decided, _ = _simulate(0.15, 0.15, 0.0, seed=3)
    assert decided[REGRESSED] / RUNS <= BOUND
    assert decided[NOT_WORSE] / RUNS <= BOUND


@pytest.mark.slow
def test_a_clear_regression_stops_early() -> None:
    # A 15-point regression (20% regressed, 5% improved) against a 5-point margin.
    decided, stops = _simulate(0.20, 0.05, 0.05, seed=4)
    assert decided[REGRESSED] / RUNS > 0.95 and decided[NOT_WORSE] == 0
    assert np.median(stops) < 250


@pytest.mark.slow
def test_no_change_is_called_not_worse_well_before_the_end() -> None:
    decided, stops = _simulate(0.05, 0.05, 0.05, seed=5)
    assert decided[REGRESSED] == 0
    assert decided[NOT_WORSE] / RUNS > 0.6 and np.median(stops) < ITEMS


# --- properties -------------------------------------------------------------------------------


def test_nothing_compared_decides_nothing() -> None:
    result = sequential_test(PairedCounts(), 0.05, ALPHA)
    assert result.decision is None and result.compared == 0
    assert result.log_wealth_regressed == pytest.approx(0.0, abs=1e-12)
    assert result.log_wealth_not_worse == pytest.approx(0.0, abs=1e-12)


def test_a_table_of_regressions_decides_regressed_and_reports_its_evidence() -> None:
    result = sequential_test(PairedCounts(both=60, regressed=30), 0.05, ALPHA)
    assert result.decision == REGRESSED
    figures = result.as_dict()
    assert figures["e_value_regressed"] >= 20 > figures["e_value_not_worse"]
    assert figures["threshold"] == 20.0 and figures["compared_item_count"] == 90


def test_all_concordant_decides_not_worse_after_enough_items() -> None:
    assert sequential_test(PairedCounts(both=50), 0.05, ALPHA).decision is None
    assert sequential_test(PairedCounts(both=400), 0.05, ALPHA).decision == NOT_WORSE


def test_evidence_grows_with_regressions_and_shrinks_with_improvements() -> None:
    base = PairedCounts(both=40, regressed=5, improved=5)
    more = base.merge(PairedCounts(regressed=1))
    fewer = base.merge(PairedCounts(improved=1))
    assert log_wealth(more, 0.05, REGRESSED) > log_wealth(base, 0.05, REGRESSED)
    assert log_wealth(fewer, 0.05, REGRESSED) < log_wealth(base, 0.05, REGRESSED)
    assert log_wealth(fewer, 0.05, NOT_WORSE) > log_wealth(base, 0.05, NOT_WORSE)


def test_with_no_margin_the_two_directions_mirror_each_other() -> None:
    counts = PairedCounts(both=30, neither=5, regressed=9, improved=2)
    mirrored = PairedCounts(both=30, neither=5, regressed=2, improved=9)
    assert log_wealth(counts, 0.0, REGRESSED) == pytest.approx(
        log_wealth(mirrored, 0.0, NOT_WORSE), abs=1e-12
    )


def test_counts_merge_and_round_trip() -> None:
    halves = [pair_of(b, c) for b in (True, False) for c in (True, False)]
    total = PairedCounts()
    for half in halves:
        total = total.merge(half)
    assert total == PairedCounts(1, 1, 1, 1) and total.delta == 0.0 and total.compared == 4
    assert PairedCounts.from_dict(total.as_dict()) == total
    assert PairedCounts().delta is None


@pytest.mark.parametrize(("margin", "alpha"), [(-0.1, 0.05), (1.0, 0.05), (0.05, 0.0), (0.05, 1)])
def test_out_of_range_settings_are_refused(margin: float, alpha: float) -> None:
    with pytest.raises(ValueError):
        sequential_test(PairedCounts(both=1), margin, alpha)


def test_an_unknown_direction_is_refused() -> None:
    with pytest.raises(ValueError):
        log_factors(0.05, "sideways")
