"""The run verdict: which gates applied, and whether the run cleared them.

Two gates, each optional:

- ``pass_threshold`` (the spec's): the run's pass rate must reach it. A run that scored
  nothing has no pass rate and does not pass.
- ``max_regression`` (pawl's addition): against a baseline, the comparison has one of
  three conclusions (:mod:`chalicelib.stats.regression_gate`): ``regressed`` (the delta's
  95% interval lies below ``-max_regression``, or the drop exceeds it *and* is significant,
  exact McNemar ``p < alpha``), ``not_worse`` (the interval's low is above
  ``-max_regression``) or ``inconclusive`` (neither: the run was too small to tell, and the
  reason says how many compared items would decide). ``regressed`` fails the gate,
  ``not_worse`` passes it, ``inconclusive`` does what the eval's ``on_inconclusive`` says
  (``"pass"`` by default: before the three answers existed such a run passed).

Next to the answer the gate states ``min_detectable_regression``: the smallest pass-rate
drop the run's compared items could have detected (two-sided McNemar at ``alpha`` with
power :data:`DETECTABLE_POWER`, :mod:`chalicelib.stats.power`), from the run's own figures.

Groups are never read: a kind that needs its own gate needs its own eval.
"""

from __future__ import annotations

from typing import Any

from chalicelib.stats.power import min_detectable_regression
from chalicelib.stats.regression_gate import (
    INCONCLUSIVE,
    NOT_WORSE,
    ON_INCONCLUSIVE,
    RegressionFigures,
    conclude,
    explain,
    regression_figures,
)

REGRESSION_ALPHA = 0.05
#: The power at which a verdict states the smallest regression its items could detect.
DETECTABLE_POWER = 0.8


def _threshold_gate(aggregate: dict[str, Any], pass_threshold: float) -> dict[str, Any]:
    pass_rate = aggregate.get("pass_rate")
    return {
        "gate": "pass_threshold",
        "passed": pass_rate is not None and pass_rate >= pass_threshold,
        "pass_rate": pass_rate,
        "pass_threshold": pass_threshold,
        "scored_item_count": aggregate.get("scored_item_count", 0),
    }


def detectable_regression(figures: RegressionFigures, alpha: float) -> float | None:
    """The smallest drop the run's compared items detect (``stats.power``), from the run's
    own noise: the share of items that flipped either way, or with trial-aware figures the
    variance of the per-item differences. None with nothing compared."""
    if figures.compared < 1 or not 0.0 < alpha < 0.5:
        return None
    if figures.unit == "trial_proportion":
        if figures.difference_sd is None:
            return None
        noise = min(1.0, float(figures.difference_sd) ** 2)
    elif figures.table is not None:
        _, improved, regressed = figures.table
        noise = min(1.0, (improved + regressed) / figures.compared)
    else:
        return None
    return min_detectable_regression(figures.compared, noise, alpha, DETECTABLE_POWER)


def _regression_gate(
    baseline: dict[str, Any], max_regression: float, alpha: float, on_inconclusive: str
) -> dict[str, Any]:
    figures = regression_figures(baseline)
    decision = conclude(figures, max_regression, alpha)
    passed = decision.conclusion == NOT_WORSE or (
        decision.conclusion == INCONCLUSIVE and on_inconclusive == "pass"
    )
    return {
        "gate": "max_regression",
        "passed": passed,
        "conclusion": decision.conclusion,
        "pass_rate_delta": figures.delta,
        "pass_rate_delta_interval": figures.interval,
        "max_regression": max_regression,
        "p_value": figures.p_value,
        "alpha": alpha,
        "compared_item_count": figures.compared,
        "items_needed": decision.items_needed,
        "more_items_needed": decision.more_items_needed,
        "min_detectable_regression": detectable_regression(figures, alpha),
        "min_detectable_power": DETECTABLE_POWER,
        "on_inconclusive": on_inconclusive,
        "unit": figures.unit,
        "explanation": explain(figures, max_regression, alpha, decision, on_inconclusive),
        "baseline_run_id": baseline.get("run_id"),
    }


def _check_fraction(name: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be within 0..1, got {value}")


def verdict(
    aggregate: dict[str, Any],
    pass_threshold: float | None,
    max_regression: float | None,
    baseline: dict[str, Any] | None,
    *,
    alpha: float = REGRESSION_ALPHA,
    on_inconclusive: str = "pass",
) -> tuple[bool | None, list[dict[str, Any]]]:
    """``(passed, verdict_reasons)`` for a settled run.

    ``passed`` is ``None`` when no gate applies (no ``pass_threshold``, and no
    ``max_regression`` with a baseline comparison to read); otherwise the AND of the
    gates checked. ``verdict_reasons`` holds one entry per gate checked, with its figures.
    """
    _check_fraction("pass_threshold", pass_threshold)
    _check_fraction("max_regression", max_regression)
    if on_inconclusive not in ON_INCONCLUSIVE:
        raise ValueError(
            f"on_inconclusive must be one of {ON_INCONCLUSIVE}, got {on_inconclusive!r}"
        )
    reasons: list[dict[str, Any]] = []
    if pass_threshold is not None:
        reasons.append(_threshold_gate(aggregate, pass_threshold))
    if max_regression is not None and baseline is not None:
        reasons.append(_regression_gate(baseline, max_regression, alpha, on_inconclusive))
    if not reasons:
        return None, reasons
    return all(reason["passed"] for reason in reasons), reasons
