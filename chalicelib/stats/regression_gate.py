"""The regression gate's three answers: ``regressed``, ``not_worse`` or ``inconclusive``.

With ``max_regression`` as the margin ``m`` and the pass-rate delta's 95% interval:

- ``regressed``: the interval lies below ``-m``, or the delta is below ``-m`` and exact
  McNemar's ``p < alpha`` (the rule the gate had before it had an interval);
- ``not_worse``: the interval's low is above ``-m`` (a non-inferiority result);
- ``inconclusive``: neither. Its reason names the compared items that would decide with
  the observed table's proportions held fixed (:func:`~chalicelib.stats.paired_interval.
  items_needed`).

With trials > 1 the comparison may carry trial-aware figures (``baseline["trials"]``, per
item pass proportions paired over items); then those decide, and the items needed come from
scaling their interval with its moments (:func:`~chalicelib.stats.trials.trial_items_needed`),
or, for figures without moments, from their ``difference_sd`` by the normal approximation.
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.stats.paired_interval import DEFAULT_LEVEL, items_needed, normal_items_needed
from chalicelib.stats.trials import trial_items_needed

REGRESSED = "regressed"
NOT_WORSE = "not_worse"
INCONCLUSIVE = "inconclusive"
#: What an eval's ``on_inconclusive`` may say: the gate's outcome for an inconclusive run.
ON_INCONCLUSIVE = ("pass", "fail")


@dataclass(frozen=True)
class RegressionFigures:
    """What the gate reads from a baseline comparison, in either unit."""

    unit: str  # "item", or "trial_proportion" for the trial-aware figures
    compared: int
    delta: float | None
    interval: dict[str, Any] | None
    p_value: float | None
    #: The paired table (both passed, improved, regressed) for the item unit.
    table: tuple[int, int, int] | None = None
    #: The sd of the per-item differences for the trial unit.
    difference_sd: float | None = None
    #: What the trial unit's interval was worked out from (``trials.moments``).
    moments: dict[str, Any] | None = None


@dataclass(frozen=True)
class Decision:
    conclusion: str
    items_needed: int | None
    more_items_needed: int | None
    #: Why items_needed is null for an inconclusive run (None otherwise).
    unreachable: str | None = None


def regression_figures(baseline: dict[str, Any]) -> RegressionFigures:
    trials = baseline.get("trials")
    if isinstance(trials, dict) and trials.get("pass_rate_delta") is not None:
        return RegressionFigures(
            unit="trial_proportion",
            compared=int(trials.get("item_count") or 0),
            delta=trials["pass_rate_delta"],
            interval=trials.get("pass_rate_delta_interval"),
            p_value=trials.get("p_value"),
            difference_sd=trials.get("difference_sd"),
            moments=trials.get("moments") if isinstance(trials.get("moments"), dict) else None,
        )
    flipped = baseline.get("flipped") or {}
    both = baseline.get("both_passed_count")
    compared = int(baseline.get("compared_item_count") or 0)
    table = None
    if both is not None and compared:
        table = (int(both), int(flipped.get("improved", 0)), int(flipped.get("regressed", 0)))
    return RegressionFigures(
        unit="item",
        compared=compared,
        delta=baseline.get("pass_rate_delta"),
        interval=baseline.get("pass_rate_delta_interval"),
        p_value=baseline.get("p_value"),
        table=table,
    )


def _conclusion(figures: RegressionFigures, margin: float, alpha: float) -> str:
    delta, interval, p_value = figures.delta, figures.interval, figures.p_value
    if delta is None:
        return INCONCLUSIVE
    if interval is not None and interval["high"] < -margin:
        return REGRESSED
    if delta < -margin and p_value is not None and p_value < alpha:
        return REGRESSED
    if interval is not None and interval["low"] > -margin:
        return NOT_WORSE
    return INCONCLUSIVE


def _needed(figures: RegressionFigures, margin: float) -> tuple[int | None, str | None]:
    level = float((figures.interval or {}).get("level", DEFAULT_LEVEL))
    if figures.delta is None or figures.compared == 0:
        return None, "no item was compared with the baseline"
    if figures.delta == -margin:
        return None, f"the delta sits exactly on -{margin:g}, where no sample size decides"
    if figures.unit == "trial_proportion" and figures.moments is not None:
        needed = trial_items_needed(figures.moments, margin, level)
    elif figures.unit == "trial_proportion":
        if figures.difference_sd is None:
            return None, "the trial-aware figures carry no difference_sd"
        needed = normal_items_needed(figures.delta, figures.difference_sd, margin, level)
    elif figures.table is None:
        return None, "the comparison carries no paired table"
    else:
        both, improved, regressed = figures.table
        needed = items_needed(both, improved, regressed, figures.compared, margin, level)
    if needed is None:
        return None, "more than a billion compared items would be needed"
    return needed, None


def conclude(figures: RegressionFigures, margin: float, alpha: float) -> Decision:
    conclusion = _conclusion(figures, margin, alpha)
    if conclusion != INCONCLUSIVE:
        return Decision(conclusion, None, None)
    needed, unreachable = _needed(figures, margin)
    # The table's proportions held fixed, an undecided table needs more items than it has;
    # max() keeps "more" >= 1 should rounding ever say otherwise.
    more = None if needed is None else max(1, needed - figures.compared)
    return Decision(conclusion, needed, more, unreachable)


def _span(interval: dict[str, Any] | None) -> str:
    if interval is None:
        return "no interval"
    percent = round(float(interval["level"]) * 100)
    return f"the {percent}% interval {interval['low']:.3f}..{interval['high']:.3f}"


def explain(
    figures: RegressionFigures,
    margin: float,
    alpha: float,
    decision: Decision,
    on_inconclusive: str,
) -> str:
    """One sentence a person reads: which answer, from which figures, and what applied."""
    unit = " (per-item trial pass proportions)" if figures.unit == "trial_proportion" else ""
    span, bar = _span(figures.interval), f"-{margin:g}"
    delta = f"{figures.delta:+.3f}" if figures.delta is not None else "none"
    if decision.conclusion == REGRESSED:
        interval = figures.interval
        if interval is not None and interval["high"] < -margin:
            why = f"{span} lies wholly below {bar}"
        else:
            test = "the sign-flip p" if figures.unit == "trial_proportion" else "McNemar's p"
            why = f"the delta is beyond {bar} and {test} = {figures.p_value:.2g} < {alpha:g}"
        return f"regressed: pass rate delta {delta}{unit}; {why}; the gate fails"
    if decision.conclusion == NOT_WORSE:
        return (
            f"not worse: pass rate delta {delta}{unit} over {figures.compared} compared items; "
            f"{span} lies above {bar}; the gate passes"
        )
    if figures.delta is None:
        nothing = "inconclusive: no item was compared with the baseline"
        return f"{nothing}; on_inconclusive={on_inconclusive}"
    if decision.more_items_needed is not None:
        more = f"about {decision.more_items_needed} more compared items would decide"
    else:
        more = f"no sample size decides ({decision.unreachable})"
    return (
        f"inconclusive: pass rate delta {delta}{unit}; {span} straddles {bar}; {more}; "
        f"on_inconclusive={on_inconclusive}"
    )
