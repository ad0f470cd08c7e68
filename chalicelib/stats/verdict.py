"""The run verdict: which gates applied, and whether the run cleared them.

Two gates, each optional:

- ``pass_threshold`` (the spec's): the run's pass rate must reach it. A run that scored
  nothing has no pass rate and does not pass.
- ``max_regression`` (pawl's addition): against a baseline, the run fails when its pass
  rate dropped by more than ``max_regression`` *and* the drop is significant (exact
  McNemar ``p < alpha``). Both conditions, because a large drop over a few flips is
  noise, and a significant drop of one point may be a trade the team accepts.

Groups are never read: a kind that needs its own gate needs its own eval.
"""

from __future__ import annotations

from typing import Any

REGRESSION_ALPHA = 0.05


def _threshold_gate(aggregate: dict[str, Any], pass_threshold: float) -> dict[str, Any]:
    pass_rate = aggregate.get("pass_rate")
    return {
        "gate": "pass_threshold",
        "passed": pass_rate is not None and pass_rate >= pass_threshold,
        "pass_rate": pass_rate,
        "pass_threshold": pass_threshold,
        "scored_item_count": aggregate.get("scored_item_count", 0),
    }


def _regression_gate(
    baseline: dict[str, Any], max_regression: float, alpha: float
) -> dict[str, Any]:
    delta = baseline.get("pass_rate_delta")
    p_value = baseline.get("p_value")
    # Nothing compared means no evidence of a regression: the gate holds.
    regressed = (
        delta is not None and p_value is not None and delta < -max_regression and p_value < alpha
    )
    return {
        "gate": "max_regression",
        "passed": not regressed,
        "pass_rate_delta": delta,
        "max_regression": max_regression,
        "p_value": p_value,
        "alpha": alpha,
        "compared_item_count": baseline.get("compared_item_count", 0),
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
) -> tuple[bool | None, list[dict[str, Any]]]:
    """``(passed, verdict_reasons)`` for a settled run.

    ``passed`` is ``None`` when no gate applies (no ``pass_threshold``, and no
    ``max_regression`` with a baseline comparison to read); otherwise the AND of the
    gates checked. ``verdict_reasons`` holds one entry per gate checked, with its figures.
    """
    _check_fraction("pass_threshold", pass_threshold)
    _check_fraction("max_regression", max_regression)
    reasons: list[dict[str, Any]] = []
    if pass_threshold is not None:
        reasons.append(_threshold_gate(aggregate, pass_threshold))
    if max_regression is not None and baseline is not None:
        reasons.append(_regression_gate(baseline, max_regression, alpha))
    if not reasons:
        return None, reasons
    return all(reason["passed"] for reason in reasons), reasons
