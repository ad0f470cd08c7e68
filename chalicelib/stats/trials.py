"""Trial-aware figures: each item's pass proportion over its usable trials is the unit.

With ``trials: k > 1`` the run's reduced pass/fail (``trial_reducer``) throws away what the
trials measured. These accumulators keep, per item, ``(passed trials, usable trials)``
(errored trials are not usable; an item with none is errored and counts nowhere), and give:

- :class:`TrialTally` (one run): the mean item proportion with its clustered interval
  (:mod:`~chalicelib.stats.clustered`), Chen et al.'s unbiased pass@k and pass^k for every
  ``k`` up to the trial count (:mod:`~chalicelib.stats.pass_at_k`), and the noise floor;
- :class:`PairedTrialTally` (a comparison): the per-item differences of proportions over the
  items compared in both runs, their mean, its paired interval, their sd and the exact
  sign-flip p-value (:mod:`~chalicelib.stats.sign_flip`): what the regression gate reads.

Their state is a Counter of small integer tuples (with ``k <= 10`` trials there are at most
66 distinct ``(c, n)`` pairs, whatever the run's size), so it is plain JSON
(:meth:`to_state` / :meth:`from_state`) and two halves of a run merge (:meth:`merge`) into
exactly what one pass gives. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

from chalicelib.stats.clustered import (
    DEFAULT_LEVEL,
    Moments,
    clustered_wilson_interval,
    paired_items_needed,
    paired_proportions_interval,
)
from chalicelib.stats.pass_at_k import pass_at_k, pass_hat_k
from chalicelib.stats.sign_flip import sign_flip_test

#: How the noise floor is defined (docs/statistics.md).
FLIP_RATE_METHOD = "pairwise_disagreement"


def _check_counts(passed: int, usable: int) -> None:
    if not 0 <= passed <= usable or usable < 1:
        raise ValueError(f"need 0 <= passed <= usable and usable >= 1, got {passed}/{usable}")


def _per_k(counts: Counter[tuple[int, int]], k: int) -> tuple[float | None, float | None, int]:
    """pass@k and pass^k over the items with at least ``k`` usable trials, and how many."""
    eligible = [(c, n, count) for (c, n), count in counts.items() if n >= k]
    items = sum(count for _, _, count in eligible)
    if not items:
        return None, None, 0
    at_k = math.fsum(count * pass_at_k(n, c, k) for c, n, count in eligible) / items
    hat_k = math.fsum(count * pass_hat_k(n, c, k) for c, n, count in eligible) / items
    return at_k, hat_k, items


def flip_rate(counts: Counter[tuple[int, int]]) -> tuple[float | None, int]:
    """The mean over items with two or more usable trials of the share of their pairs of
    trials that disagree (``c (n - c) / C(n, 2)``), and how many items that is."""
    eligible = [(c, n, count) for (c, n), count in counts.items() if n >= 2]
    items = sum(count for _, _, count in eligible)
    if not items:
        return None, 0
    shares = math.fsum(count * (c * (n - c) / math.comb(n, 2)) for c, n, count in eligible)
    return shares / items, items


class TrialTally:
    """One run's items as ``(passed trials, usable trials)``; :meth:`summary` gives
    ``aggregate_scores.trials``."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[tuple[int, int]] = Counter()

    def add(self, passed: int, usable: int) -> None:
        _check_counts(passed, usable)
        self.counts[(passed, usable)] += 1

    def merge(self, other: TrialTally) -> None:
        self.counts.update(other.counts)

    def to_state(self) -> dict[str, Any]:
        return {"items": [[c, n, count] for (c, n), count in sorted(self.counts.items())]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TrialTally:
        tally = cls()
        for c, n, count in state["items"]:
            _check_counts(c, n)
            tally.counts[(int(c), int(n))] += int(count)
        return tally

    def summary(self, trials: int) -> dict[str, Any]:
        """The figures for a run of ``trials`` trials per item."""
        counts = self.counts
        items = sum(counts.values())
        at_k: dict[str, float | None] = {}
        hat_k: dict[str, float | None] = {}
        k_items: dict[str, int] = {}
        for k in range(1, trials + 1):
            at_k[str(k)], hat_k[str(k)], k_items[str(k)] = _per_k(counts, k)
        rate, flip_items = flip_rate(counts)
        summary: dict[str, Any] = {
            "count": trials,
            "item_count": items,
            "trial_count": sum(n * count for (_, n), count in counts.items()),
            "pass_rate": None,
            "pass_rate_interval": None,
            "pass_at_k": at_k,
            "pass_hat_k": hat_k,
            "k_item_count": k_items,
            "noise_floor": {"flip_rate": rate, "items": flip_items, "method": FLIP_RATE_METHOD},
        }
        if items:
            moments = Moments.of((c / n, count, n * count) for (c, n), count in counts.items())
            summary["pass_rate"] = moments.mean
            summary["pass_rate_interval"] = clustered_wilson_interval(moments)
        return summary


Pair = tuple[int, int, int, int]


class PairedTrialTally:
    """Compared items as ``(passed, usable)`` now and in the baseline; :meth:`summary` gives
    ``aggregate_scores.baseline.trials``."""

    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[Pair] = Counter()

    def add(self, here: tuple[int, int], there: tuple[int, int]) -> None:
        _check_counts(*here)
        _check_counts(*there)
        self.counts[(*here, *there)] += 1

    def merge(self, other: PairedTrialTally) -> None:
        self.counts.update(other.counts)

    def to_state(self) -> dict[str, Any]:
        return {"pairs": [[*pair, count] for pair, count in sorted(self.counts.items())]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> PairedTrialTally:
        tally = cls()
        for c1, n1, c0, n0, count in state["pairs"]:
            _check_counts(c1, n1)
            _check_counts(c0, n0)
            tally.counts[(int(c1), int(n1), int(c0), int(n0))] += int(count)
        return tally

    def summary(self) -> dict[str, Any]:
        counts = self.counts
        items = sum(counts.values())
        differences: Counter[Fraction] = Counter()
        for (c1, n1, c0, n0), count in counts.items():
            differences[Fraction(c1, n1) - Fraction(c0, n0)] += count
        summary: dict[str, Any] = {
            "unit": "trial_proportion",
            "item_count": items,
            "improved_item_count": sum(count for d, count in differences.items() if d > 0),
            "regressed_item_count": sum(count for d, count in differences.items() if d < 0),
            "current_pass_rate": None,
            "baseline_pass_rate": None,
            "pass_rate_delta": None,
            "pass_rate_delta_interval": None,
            "difference_sd": None,
            "p_value": None,
        }
        if not items:
            return summary
        here = Moments.of((c1 / n1, count, n1 * count) for (c1, n1, _, _), count in counts.items())
        there = Moments.of((c0 / n0, count, n0 * count) for (_, _, c0, n0), count in counts.items())
        covariance = (
            math.fsum(
                count * (c1 / n1 - here.mean) * (c0 / n0 - there.mean)
                for (c1, n1, c0, n0), count in counts.items()
            )
            / items
        )
        # The mean difference in exact fractions, rounded once.
        delta = float(sum((d * count for d, count in differences.items()), Fraction(0)) / items)
        test = sign_flip_test(differences)
        summary.update(
            current_pass_rate=here.mean,
            baseline_pass_rate=there.mean,
            pass_rate_delta=delta,
            pass_rate_delta_interval=paired_proportions_interval(here, there, covariance),
            difference_sd=_sample_sd(differences, delta, items),
            p_value=test.p_value,
            **test.as_dict(),
            # What the interval was worked out from: the gate scales it to other sizes.
            moments={
                "current": _moments_json(here),
                "baseline": _moments_json(there),
                "covariance": covariance,
            },
        )
        return summary


def _moments_json(moments: Moments) -> dict[str, float]:
    return {
        "items": moments.items,
        "trials": moments.trials,
        "mean": moments.mean,
        "variance": moments.variance,
    }


def _moments_of(block: Any) -> Moments:
    return Moments(
        float(block["items"]),
        float(block["trials"]),
        float(block["mean"]),
        float(block["variance"]),
    )


def trial_items_needed(
    moments: dict[str, Any], margin: float, level: float = DEFAULT_LEVEL
) -> int | None:
    """The compared items at which the trial comparison's interval would clear ``-margin``
    with its items' proportions held as they are (``moments``: the comparison's ``moments``):
    :func:`~chalicelib.stats.clustered.paired_items_needed`."""
    return paired_items_needed(
        _moments_of(moments["current"]),
        _moments_of(moments["baseline"]),
        float(moments["covariance"]),
        margin,
        level,
    )


def _sample_sd(differences: Counter[Fraction], mean: float, items: int) -> float | None:
    if items < 2:
        return None
    squares = math.fsum(count * (float(d) - mean) ** 2 for d, count in differences.items())
    return math.sqrt(squares / (items - 1))
