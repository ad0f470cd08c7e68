"""The continuous scorer's figures against scipy 1.17.1 on 10,000 seeded random comparisons:
the signed-rank test against ``scipy.stats.wilcoxon(d)`` (its defaults, ``method="auto"``)
and the mean delta's interval against ``scipy.stats.ttest_rel(current, baseline)
.confidence_interval()``, each within 1e-9 (relative; absolute 1e-12 for bounds near 0).

Every case goes through :class:`PairedScorerTally` item by item, as the comparison feeds
it, so ``d`` is the tally's rounded differences. scipy is called once per (size, "has ties
or zeros") batch along ``axis=1``, which is what keeps this fast: ``auto`` decides from the
whole batch, and within such a batch every row would decide alike on its own (the
``test_batches_decide_like_single_rows`` check below makes sure of it on a sample).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from scipy import stats
from scipy.stats._wilcoxon import _wilcoxon_statistic

from chalicelib.stats.student_t import t_isf
from chalicelib.stats.tally import DIFFERENCE_DECIMALS, PairedScorerTally, continuous_figures
from chalicelib.stats.wilcoxon import EXACT, EXACT_PERMUTATION, NORMAL, PERMUTATION_SIZE_LIMIT

CASES = 10_000
SEED = 2026_12_07


def _scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A baseline and a current run's scores for ``n`` items, of one of several kinds."""
    kind = int(rng.integers(0, 5))
    baseline: Any = rng.uniform(0, 1, n)
    if kind == 0:  # continuous judge, a small shift: no ties, no zeros
        current = np.clip(baseline + rng.normal(rng.normal(0, 0.05), 0.2, n), 0, 1)
    elif kind == 1:  # a judge on a 0.1 grid: ties and zeros
        baseline = np.round(baseline, 1)
        current = np.round(np.clip(baseline + rng.normal(0, 0.2, n), 0, 1), 1)
    elif kind == 2:  # a 0..4 rubric scaled to 0..1: heavy ties
        baseline = rng.integers(0, 5, n).astype(float) / 4
        current = np.clip(baseline + rng.integers(-2, 3, n) / 4, 0, 1)
    elif kind == 3:  # continuous, but some items unchanged: zeros without ties otherwise
        current = np.where(rng.uniform(size=n) < 0.2, baseline, rng.uniform(0, 1, n))
    else:  # one-sided drop: small p-values
        current = np.clip(baseline - rng.uniform(0, 0.3, n), 0, 1)
    return current, baseline


def _size(rng: np.random.Generator) -> int:
    band = int(rng.integers(0, 3))
    if band == 0:
        return int(rng.integers(1, 14))  # where ties mean an enumerated permutation
    if band == 1:
        return int(rng.integers(14, 51))  # exact without ties, normal with them
    return int(rng.integers(51, 201))  # normal always


def _tally(current: np.ndarray, baseline: np.ndarray) -> PairedScorerTally:
    tally = PairedScorerTally()
    for here, there in zip(current.tolist(), baseline.tolist(), strict=True):
        tally.add(here, here >= 0.5, there, there >= 0.5)
    return tally


def _ties_or_zeros(d: np.ndarray) -> bool:
    nonzero = np.abs(d[d != 0])
    return bool((d == 0).any() or len(np.unique(nonzero)) < len(nonzero))


def _close(mine: float, reference: float, absolute: float = 0.0) -> bool:
    return math.isclose(mine, reference, rel_tol=1e-9, abs_tol=absolute)


def _permutation_p_values(d: np.ndarray) -> np.ndarray:
    """What ``scipy.stats.wilcoxon`` computes for these rows when ``auto`` picks its
    permutation test: the same ``permutation_test`` call over scipy's own statistic, only
    told that the statistic is vectorized (scipy's lambda is not marked so, and loops over
    the 2**13 sign flips in Python: about a second per row).
    ``test_permutation_reference_is_scipys_wilcoxon`` checks the two agree."""

    def positive_rank_sum(x: np.ndarray, axis: int) -> np.ndarray:
        return _wilcoxon_statistic(np.moveaxis(x, axis, -1), "auto", "wilcox", xp=np)[0]

    result = stats.permutation_test(
        (d,),
        positive_rank_sum,
        vectorized=True,
        permutation_type="samples",
        alternative="two-sided",
        axis=-1,
        batch=512,
    )
    return np.atleast_1d(result.pvalue)


def _scipy_p_values(d: np.ndarray) -> np.ndarray:
    """scipy's p-values for a batch of rows that agree on having ties or zeros."""
    if d.shape[1] <= PERMUTATION_SIZE_LIMIT and _ties_or_zeros(d[0]):
        return _permutation_p_values(d)
    return np.atleast_1d(stats.wilcoxon(d, axis=1).pvalue)


def _scipy_statistic(d: np.ndarray) -> float:
    positive = float(np.sum(stats.rankdata(np.abs(d[d != 0]))[d[d != 0] > 0]))
    total = np.count_nonzero(d) * (np.count_nonzero(d) + 1) / 2
    return min(positive, total - positive)


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(SEED)
    return [_scores(rng, _size(rng)) for _ in range(CASES)]


def test_signed_rank_and_t_interval_match_scipy_on_10000_random_comparisons() -> None:
    batches: dict[tuple[int, bool], list[tuple[np.ndarray, np.ndarray, dict]]] = defaultdict(list)
    methods: dict[str, int] = defaultdict(int)
    for current, baseline in _cases():
        d = np.round(current - baseline, DIFFERENCE_DECIMALS)
        tally = _tally(current, baseline)
        binary = set(np.concatenate([current, baseline]).tolist()) <= {0.0, 1.0}
        assert tally.continuous is not binary
        # A small rubric case can land on 0/1 only: the tally then carries neither figure,
        # and the same functions are checked on its differences directly.
        summary = continuous_figures(tally.differences) if binary else tally.summary()
        batches[(len(d), _ties_or_zeros(d))].append((current, baseline, summary))
        methods[summary["wilcoxon"]["method"]] += 1
    # The mix really covers each branch of scipy's auto, many times.
    assert min(methods[m] for m in (EXACT, EXACT_PERMUTATION, NORMAL)) > 1000, methods
    compared_p = compared_interval = 0
    for (n, _), rows in batches.items():
        current = np.array([row[0] for row in rows])
        baseline = np.array([row[1] for row in rows])
        d = np.round(current - baseline, DIFFERENCE_DECIMALS)
        if n == 1 and _ties_or_zeros(d[0]):
            # One zero difference: scipy's permutation test refuses a one-item sample.
            assert all(row[2]["wilcoxon"]["p_value"] == 1.0 for row in rows)
            continue
        with np.errstate(all="ignore"):
            p_values = _scipy_p_values(d)
        for index, (_, _, summary) in enumerate(rows):
            test = summary["wilcoxon"]
            p = float(p_values[index])
            if math.isnan(p):  # all zeros beyond 13 items: scipy divides 0 by 0, we say 1
                assert test["n"] == 0 and test["p_value"] == 1.0
                continue
            assert _close(test["p_value"], p), (d[index].tolist(), test, p)
            assert _close(test["statistic"], _scipy_statistic(d[index]))
            compared_p += 1
        if n < 2:
            assert all(row[2]["mean_delta_interval"] is None for row in rows)
            continue
        with np.errstate(all="ignore"):
            interval = stats.ttest_rel(current, baseline, axis=1).confidence_interval(0.95)
        for index, (_, _, summary) in enumerate(rows):
            mine = summary["mean_delta_interval"]
            low, high = float(interval.low[index]), float(interval.high[index])
            if math.isnan(low):  # no spread at all: scipy's 0/0, our point interval
                assert mine["low"] == mine["high"]
                continue
            assert _close(mine["low"], low, 1e-12), (d[index].tolist(), mine, low)
            assert _close(mine["high"], high, 1e-12), (d[index].tolist(), mine, high)
            compared_interval += 1
    assert compared_p > 9_500 and compared_interval > 9_000


def test_batches_decide_like_single_rows() -> None:
    # The batched reference is only valid if scipy decides each row as it would alone.
    rng = np.random.default_rng(SEED + 1)
    checked = 0
    while checked < 40:
        current, baseline = _scores(rng, int(rng.integers(14, 120)))
        d = np.round(current - baseline, DIFFERENCE_DECIMALS)
        with np.errstate(all="ignore"):
            alone = stats.wilcoxon(d).pvalue
            batched = _scipy_p_values(np.vstack([d, d]))[1]
        assert (math.isnan(alone) and math.isnan(batched)) or alone == pytest.approx(batched)
        checked += 1


def test_permutation_reference_is_scipys_wilcoxon() -> None:
    # Small samples with ties or zeros, where auto runs the permutation test: scipy's own
    # wilcoxon (slow) and the vectorized call the big test uses give the same p-value.
    rng = np.random.default_rng(SEED + 2)
    checked = 0
    while checked < 16:
        n = int(rng.integers(2, 12))
        d = np.round(rng.integers(-3, 4, n) / 10, DIFFERENCE_DECIMALS)
        if not _ties_or_zeros(d):
            continue
        assert float(stats.wilcoxon(d).pvalue) == pytest.approx(
            float(_permutation_p_values(d[np.newaxis, :])[0]), rel=1e-12
        )
        checked += 1


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 9, 29, 99, 1_000, 99_999, 1_000_000])
@pytest.mark.parametrize("tail", [0.4, 0.1, 0.025, 0.005, 5e-4, 1e-6, 1e-12])
def test_t_quantile_matches_scipy(df: float, tail: float) -> None:
    assert _close(t_isf(tail, df), float(stats.t.isf(tail, df)))
