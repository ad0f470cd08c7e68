"""The regression gate's three answers, the items it names, on_inconclusive, and the
trial-aware branch; comparisons built by the real :class:`BaselineComparator`."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.stats import BaselineComparator, ItemOutcome, verdict
from chalicelib.stats.paired_interval import items_needed, paired_delta_interval

RUN = {"pass_rate": 0.8, "scored_item_count": 400}


def compared(both: int, improved: int, regressed: int, n: int, group: str | None = None) -> Any:
    """A comparison over ``n`` items with that paired table, through the comparator."""
    comparator = BaselineComparator("evrun_base", "kind" if group else None)
    kinds = [(True, True)] * both + [(True, False)] * improved + [(False, True)] * regressed
    kinds += [(False, False)] * (n - len(kinds))
    for index, (now, before) in enumerate(kinds):
        item_id = f"item-{index:05d}"
        comparator.add(
            ItemOutcome(item_id, errored=False, passed=now, group=group),
            ItemOutcome(item_id, errored=False, passed=before, group=group),
        )
    return comparator.result()


def gate(baseline: dict[str, Any], margin: float = 0.05, **options: Any) -> dict[str, Any]:
    passed, reasons = verdict(RUN, None, margin, baseline, **options)
    (reason,) = reasons
    assert reason["gate"] == "max_regression" and passed is reason["passed"]
    return reason


def test_the_comparison_carries_the_paired_interval_run_and_groups() -> None:
    figures = compared(16, 0, 2, 20, group="a")
    assert figures["pass_rate_delta_interval"] == paired_delta_interval(16, 0, 2, 20)
    assert figures["both_passed_count"] == 16
    group = figures["grouping"]["groups"]["a"]
    assert group["pass_rate_delta_interval"] == figures["pass_rate_delta_interval"]
    assert compared(0, 0, 0, 0)["pass_rate_delta_interval"] is None


def test_twenty_items_ten_point_drop_is_inconclusive_with_the_items_needed() -> None:
    reason = gate(compared(16, 0, 2, 20))
    interval = reason["pass_rate_delta_interval"]
    assert interval["low"] < -0.05 < interval["high"]
    assert reason["conclusion"] == "inconclusive" and reason["passed"] is True
    assert reason["items_needed"] == items_needed(16, 0, 2, 20, 0.05) == 144
    assert reason["more_items_needed"] == 124
    assert reason["on_inconclusive"] == "pass" and reason["unit"] == "item"
    assert reason["explanation"] == (
        "inconclusive: pass rate delta -0.100; the 95% interval "
        f"{interval['low']:.3f}..{interval['high']:.3f} straddles -0.05; "
        "about 124 more compared items would decide; on_inconclusive=pass"
    )


def test_on_inconclusive_fail_fails_the_gate_and_says_so() -> None:
    reason = gate(compared(16, 0, 2, 20), on_inconclusive="fail")
    assert reason["conclusion"] == "inconclusive" and reason["passed"] is False
    assert reason["explanation"].endswith("on_inconclusive=fail")
    with pytest.raises(ValueError, match="on_inconclusive"):
        gate(compared(16, 0, 2, 20), on_inconclusive="maybe")


def test_regressed_by_the_interval() -> None:
    reason = gate(compared(320, 0, 40, 400))
    assert reason["pass_rate_delta_interval"]["high"] < -0.05
    assert reason["conclusion"] == "regressed" and reason["passed"] is False
    assert reason["items_needed"] is None and reason["more_items_needed"] is None
    assert "lies wholly below -0.05" in reason["explanation"]
    # on_inconclusive never rescues a regression.
    assert gate(compared(320, 0, 40, 400), on_inconclusive="pass")["passed"] is False


def test_regressed_by_significance_while_the_interval_still_reaches_the_margin() -> None:
    # 0 improved, 8 regressed over 60: delta -0.133, McNemar p = 0.0078. With the margin
    # halfway between the interval's high end and the delta, the interval reaches above
    # -margin while the drop is beyond it and significant: today's rule still says regressed.
    baseline = compared(40, 0, 8, 60)
    interval = baseline["pass_rate_delta_interval"]
    assert baseline["p_value"] < 0.05
    margin = -(interval["high"] + baseline["pass_rate_delta"]) / 2
    reason = gate(baseline, margin)
    assert interval["high"] > -margin > baseline["pass_rate_delta"]
    assert reason["conclusion"] == "regressed" and "McNemar's p" in reason["explanation"]


def test_not_worse_when_the_interval_clears_the_margin() -> None:
    reason = gate(compared(300, 10, 10, 400))
    assert reason["pass_rate_delta_interval"]["low"] > -0.05
    assert reason["conclusion"] == "not_worse" and reason["passed"] is True
    assert reason["items_needed"] is None
    assert reason["explanation"].startswith("not worse: pass rate delta +0.000 over 400")
    # on_inconclusive does not touch a decided answer.
    assert gate(compared(300, 10, 10, 400), on_inconclusive="fail")["passed"] is True


def test_a_big_drop_without_significance_is_inconclusive_not_worse() -> None:
    # The old gate passed this run silently; now it says it could not tell.
    reason = gate(compared(7, 0, 3, 10), 0.1)
    assert reason["conclusion"] == "inconclusive" and reason["passed"] is True


def test_on_the_margin_exactly_no_size_decides() -> None:
    reason = gate(compared(8, 0, 1, 10), 0.1)
    assert reason["conclusion"] == "inconclusive"
    assert reason["items_needed"] is None and reason["more_items_needed"] is None
    assert "no sample size decides (the delta sits exactly on -0.1" in reason["explanation"]


def test_nothing_compared_is_inconclusive_and_on_inconclusive_decides() -> None:
    nothing = compared(0, 0, 0, 0)
    reason = gate(nothing)
    assert reason["conclusion"] == "inconclusive" and reason["passed"] is True
    assert reason["items_needed"] is None
    assert reason["explanation"] == (
        "inconclusive: no item was compared with the baseline; on_inconclusive=pass"
    )
    assert gate(nothing, on_inconclusive="fail")["passed"] is False


def trial_figures(delta: float, low: float, high: float, p_value: float) -> dict[str, Any]:
    return {
        "item_count": 50,
        "pass_rate_delta": delta,
        "pass_rate_delta_interval": {"low": low, "high": high, "level": 0.95, "method": "x"},
        "difference_sd": 0.3,
        "p_value": p_value,
        "method": "exact_sign_flip",
        "monte_carlo_error": None,
    }


def test_trial_aware_figures_decide_when_present() -> None:
    # The item-level table says regressed; the trial-aware figures (part C) say otherwise,
    # and they are the ones read.
    baseline = compared(320, 0, 40, 400)
    reason = gate({**baseline, "trials": trial_figures(-0.02, -0.1, 0.06, 0.4)})
    assert reason["unit"] == "trial_proportion" and reason["conclusion"] == "inconclusive"
    assert reason["compared_item_count"] == 50 and reason["pass_rate_delta"] == -0.02
    # n > (1.96 * 0.3 / 0.03)^2 = 384.1: 385 items, 335 more than the 50 compared.
    assert reason["items_needed"] == 385 and reason["more_items_needed"] == 335
    assert "(per-item trial pass proportions)" in reason["explanation"]
    decided = gate({**baseline, "trials": trial_figures(-0.2, -0.3, -0.1, 0.001)})
    assert decided["conclusion"] == "regressed" and decided["unit"] == "trial_proportion"
    shown = gate({**baseline, "trials": trial_figures(0.01, -0.03, 0.05, 0.7)})
    assert shown["conclusion"] == "not_worse"
    # No trial figures (trials == 1): the item table decides.
    assert gate({**baseline, "trials": None})["unit"] == "item"


def test_every_regression_verdict_states_the_smallest_drop_its_items_detect() -> None:
    from chalicelib.stats.power import min_detectable_regression

    small = gate(compared(16, 0, 2, 20))  # 2 of 20 flipped: noise 0.1
    assert small["min_detectable_regression"] == min_detectable_regression(20, 0.1, 0.05, 0.8)
    assert small["min_detectable_power"] == 0.8
    large = gate(compared(300, 10, 50, 400))  # 60 of 400 flipped
    assert large["min_detectable_regression"] == min_detectable_regression(400, 0.15, 0.05, 0.8)
    assert large["min_detectable_regression"] < small["min_detectable_regression"]
    # The gate's alpha is the one the figure is stated at.
    strict = gate(compared(300, 10, 50, 400), alpha=0.01)
    assert strict["min_detectable_regression"] > large["min_detectable_regression"]
    # Trial-aware figures: the per-item differences' variance is the noise (0.3^2 = 0.09).
    trials = gate({**compared(320, 0, 40, 400), "trials": trial_figures(-0.02, -0.1, 0.06, 0.4)})
    assert trials["min_detectable_regression"] == min_detectable_regression(50, 0.09, 0.05, 0.8)
    assert gate(compared(0, 0, 0, 0))["min_detectable_regression"] is None
