"""The run page's trial-aware figures (``aggregate_scores.trials`` and the comparison's):
pure functions over the API's JSON, every value turned into text here."""

from __future__ import annotations

from typing import Any

from chalicelib.console.figures import interval_text, p_value, percent, signed_percent


def _test_text(paired: dict[str, Any]) -> str:
    if paired.get("exact"):
        return "exact sign-flip test"
    error = paired.get("mc_error")
    margin = f" ± {error:.2g}" if isinstance(error, float) else ""
    return f"Monte Carlo sign-flip test ({paired.get('resamples')} draws){margin}"


def trial_figures(run: dict[str, Any]) -> dict[str, Any] | None:
    """What the page shows of a run with trials > 1; None for a run of one trial."""
    aggregate = run.get("aggregate_scores") or {}
    trials = aggregate.get("trials")
    if not isinstance(trials, dict):
        return None
    at_k, hat_k = trials.get("pass_at_k") or {}, trials.get("pass_hat_k") or {}
    floor = trials.get("noise_floor") or {}
    shown: dict[str, Any] = {
        "count": str(trials.get("count")),
        "pass_rate": percent(trials.get("pass_rate")),
        "interval": interval_text(trials.get("pass_rate_interval")),
        "rows": [
            {"k": k, "at": percent(at_k.get(k)), "hat": percent(hat_k.get(k))}
            for k in sorted(at_k, key=lambda key: int(key) if key.isdigit() else 0)
        ],
        "flip_rate": percent(floor.get("flip_rate")),
        "flip_items": str(floor.get("items", 0)),
        "paired": None,
    }
    paired = (aggregate.get("baseline") or {}).get("trials")
    if isinstance(paired, dict) and paired.get("item_count"):
        shown["paired"] = {
            "delta": signed_percent(paired.get("pass_rate_delta")),
            "interval": interval_text(paired.get("pass_rate_delta_interval")),
            "p_value": p_value(paired.get("p_value")),
            "test": _test_text(paired),
            "item_count": str(paired.get("item_count")),
        }
    return shown
