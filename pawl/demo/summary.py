"""The figures a comparison shows, read out of runs, and how they are worded.

Pure: no I/O. The terminal table (:mod:`pawl.demo.comparison`) and the HTML report
(:mod:`pawl.demo.report`) both render a :class:`Comparison`, so they can never
disagree. The shapes read are those of ``chalicelib.stats`` (see docs/statistics.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pawl.transport import Run

Json = dict[str, Any]

REGRESSION_GATE = "max_regression"
THRESHOLD_GATE = "pass_threshold"


@dataclass(frozen=True)
class RateFigure:
    """A pass rate with its interval, over ``scored`` items (rate None: nothing scored)."""

    rate: float | None
    low: float | None
    high: float | None
    level: float | None
    scored: int

    @classmethod
    def of(cls, block: Mapping[str, Any] | None) -> RateFigure:
        block = block or {}
        interval = block.get("pass_rate_interval") or {}
        return cls(
            rate=block.get("pass_rate"),
            low=interval.get("low"),
            high=interval.get("high"),
            level=interval.get("level"),
            scored=int(block.get("scored_item_count") or 0),
        )


@dataclass(frozen=True)
class ChangeFigure:
    """How a run (or a group) moved against its baseline, over the items both scored."""

    compared: int
    added: int
    removed: int
    delta: float | None
    improved: int
    regressed: int
    p_value: float | None
    p_value_adjusted: float | None

    @classmethod
    def of(cls, block: Mapping[str, Any] | None) -> ChangeFigure | None:
        if block is None:
            return None
        flipped = block.get("flipped") or {}
        return cls(
            compared=int(block.get("compared_item_count") or 0),
            added=int(block.get("added_item_count") or 0),
            removed=int(block.get("removed_item_count") or 0),
            delta=block.get("pass_rate_delta"),
            improved=int(flipped.get("improved") or 0),
            regressed=int(flipped.get("regressed") or 0),
            p_value=block.get("p_value"),
            p_value_adjusted=block.get("p_value_adjusted"),
        )


@dataclass(frozen=True)
class RunFigures:
    run_id: str
    agent_version: int
    status: str
    overall: RateFigure
    errored: int
    passed: bool | None
    reasons: list[str]
    failure_reason: str | None
    #: One line of the trial-aware figures (pass@k, the noise floor), with trials > 1.
    trials: str | None = None


@dataclass(frozen=True)
class GroupRow:
    label: str
    baseline: RateFigure | None
    candidate: RateFigure | None
    change: ChangeFigure | None


@dataclass(frozen=True)
class SignedRankFigure:
    """A continuous scorer's test against the baseline: the mean delta's interval and the
    Wilcoxon signed-rank test (``aggregate_scores.baseline.scorers.<key>``)."""

    low: float | None
    high: float | None
    level: float
    p_value: float | None
    method: str
    n: int

    @classmethod
    def of(cls, figures: Json | None) -> SignedRankFigure | None:
        test = (figures or {}).get("wilcoxon")
        if not isinstance(test, dict):
            return None
        interval = (figures or {}).get("mean_delta_interval") or {}
        return cls(
            low=interval.get("low"),
            high=interval.get("high"),
            level=float(interval.get("level") or 0.95),
            p_value=test.get("p_value"),
            method=str(test.get("method") or ""),
            n=int(test.get("n") or 0),
        )


@dataclass(frozen=True)
class ScorerRow:
    key: str
    baseline_mean: float | None
    candidate_mean: float | None
    candidate_pass_rate: float | None
    mean_delta: float | None
    #: Only for a continuous scorer compared with a baseline.
    test: SignedRankFigure | None = None


@dataclass(frozen=True)
class Comparison:
    """A candidate run, optionally beside its baseline run."""

    eval_id: str
    candidate: RunFigures
    baseline: RunFigures | None
    change: ChangeFigure | None
    baseline_run_id: str | None
    group_by: str | None
    groups: list[GroupRow]
    scorers: list[ScorerRow]
    pass_threshold: float | None


# --- formatting -------------------------------------------------------------------------------


def fmt_rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def fmt_interval(figure: RateFigure | None) -> str:
    if figure is None or figure.low is None or figure.high is None:
        return "—"
    return f"[{figure.low:.2f}, {figure.high:.2f}]"


def fmt_rate_with_interval(figure: RateFigure | None) -> str:
    if figure is None or figure.rate is None:
        return "—"
    return f"{fmt_rate(figure.rate)} {fmt_interval(figure)}"


def fmt_delta(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def fmt_signed_rank(test: SignedRankFigure) -> str:
    """``[-0.14, -0.06] Wilcoxon p = 1.23e-05``: the mean delta's interval and the test."""
    interval = (
        "—" if test.low is None or test.high is None else f"[{test.low:+.2f}, {test.high:+.2f}]"
    )
    return f"{interval} Wilcoxon p = {fmt_p(test.p_value)}"


def fmt_p(value: float | None) -> str:
    """Three significant figures; scientific below 0.001 (a p-value can be 5e-324)."""
    if value is None:
        return "—"
    if value == 0 or value >= 0.001:
        return f"{value:#.3g}"  # "#" keeps trailing zeros: 1.00, 0.500
    return f"{value:.2e}"


def trials_line(aggregate: Mapping[str, Any]) -> str | None:
    """``aggregate_scores.trials`` in one line: pass@1, pass@k and pass^k at the run's
    trial count, and the noise floor; None for a run of one trial."""
    trials = aggregate.get("trials")
    if not isinstance(trials, Mapping) or not isinstance(trials.get("count"), int):
        return None
    k = str(trials["count"])
    at_k, hat_k = trials.get("pass_at_k") or {}, trials.get("pass_hat_k") or {}
    floor = trials.get("noise_floor") or {}
    return (
        f"{k} trials an item: pass@1 {fmt_rate(at_k.get('1'))}, pass@{k} {fmt_rate(at_k.get(k))}, "
        f"pass^{k} {fmt_rate(hat_k.get(k))}; noise floor: {fmt_rate(floor.get('flip_rate'))} "
        f"of trial pairs disagree (over {floor.get('items', 0)} items)"
    )


def verdict_word(passed: bool | None) -> str:
    return {True: "PASSED", False: "FAILED", None: "NO VERDICT"}[passed]


# --- verdict reasons in words ---------------------------------------------------------------


def _threshold_sentence(reason: Mapping[str, Any]) -> str:
    rate, threshold = reason.get("pass_rate"), reason.get("pass_threshold")
    scored = reason.get("scored_item_count", 0)
    if rate is None:
        return (
            f"failed: nothing was scored, so no pass rate can reach threshold {fmt_rate(threshold)}"
        )
    sign = "≥" if reason.get("passed") else "<"
    head = "passed" if reason.get("passed") else "failed"
    return (
        f"{head}: pass rate {fmt_rate(rate)} {sign} threshold {fmt_rate(threshold)} "
        f"({scored} items scored)"
    )


def _regression_sentence(reason: Mapping[str, Any]) -> str:
    delta, allowed = reason.get("pass_rate_delta"), reason.get("max_regression")
    p_value, alpha = reason.get("p_value"), reason.get("alpha", 0.05)
    compared = reason.get("compared_item_count", 0)
    baseline = reason.get("baseline_run_id") or "the baseline"
    if reason.get("stopped_early"):  # an early-stop run: the sequential test's own sentence
        return str(reason.get("explanation"))
    if delta is None or p_value is None or not compared:
        return f"no regression to measure: no item was scored in both this run and {baseline}"
    moved = f"pass rate {fmt_delta(delta)} vs {baseline} over {compared} items"
    if reason.get("unit") == "trial_proportion":
        moved += " (per-item trial pass proportions)"
    if not reason.get("passed"):
        return (
            f"significant regression: {moved}, a drop of more than {fmt_rate(allowed)} "
            f"with p = {fmt_p(p_value)} < {alpha:g}"
        )
    if delta < -(allowed or 0.0):
        return (
            f"no significant regression: {moved} is a drop of more than {fmt_rate(allowed)}, "
            f"but p = {fmt_p(p_value)} ≥ {alpha:g}: within noise"
        )
    return (
        f"no significant regression: {moved}, p = {fmt_p(p_value)} "
        f"(fails only on a drop of more than {fmt_rate(allowed)} with p < {alpha:g})"
    )


def detectable_clause(reason: Mapping[str, Any]) -> str:
    """The smallest drop the run's compared items could detect, as the gate states it
    (``min_detectable_regression``); empty for a reason that does not carry it."""
    if "min_detectable_regression" not in reason or not reason.get("compared_item_count"):
        return ""
    smallest = reason.get("min_detectable_regression")
    power = reason.get("min_detectable_power") or 0.8
    compared = reason.get("compared_item_count")
    if smallest is None:
        return f"; {compared} compared items detect no drop at {power:.0%} power"
    return f"; smallest detectable drop {smallest:.3f} at {power:.0%} power"


def reason_sentence(reason: Mapping[str, Any]) -> str:
    """One verdict reason (a gate and its figures) in plain words."""
    gate = reason.get("gate")
    if gate == THRESHOLD_GATE:
        return _threshold_sentence(reason)
    if gate == REGRESSION_GATE:
        return _regression_sentence(reason) + detectable_clause(reason)
    figures = ", ".join(f"{k} {v}" for k, v in reason.items() if k not in {"gate", "passed"})
    return f"{'passed' if reason.get('passed') else 'failed'}: gate {gate} ({figures})"


# --- building ---------------------------------------------------------------------------------


def run_figures(run: Run) -> RunFigures:
    aggregate = run.aggregate_scores or {}
    return RunFigures(
        run_id=run.id,
        agent_version=run.agent_version,
        status=run.status,
        overall=RateFigure.of(aggregate),
        errored=run.errored_count,
        passed=run.passed,
        reasons=[reason_sentence(reason) for reason in run.verdict_reasons or []],
        failure_reason=run.failure_reason,
        trials=trials_line(aggregate),
    )


def _groups(candidate: Json, baseline: Json | None) -> list[GroupRow]:
    mine = (candidate.get("grouping") or {}).get("groups") or {}
    theirs = ((baseline or {}).get("grouping") or {}).get("groups") or {}
    changes = ((candidate.get("baseline") or {}).get("grouping") or {}).get("groups") or {}
    labels = sorted(set(mine) | set(theirs) | set(changes))
    return [
        GroupRow(
            label=label,
            baseline=RateFigure.of(theirs[label]) if label in theirs else None,
            candidate=RateFigure.of(mine[label]) if label in mine else None,
            change=ChangeFigure.of(changes.get(label)),
        )
        for label in labels
    ]


def _scorers(candidate: Json, baseline: Json | None) -> list[ScorerRow]:
    mine = candidate.get("scorers") or {}
    theirs = (baseline or {}).get("scorers") or {}
    deltas = (candidate.get("baseline") or {}).get("scorers") or {}
    return [
        ScorerRow(
            key=key,
            baseline_mean=(theirs.get(key) or {}).get("mean"),
            candidate_mean=(mine.get(key) or {}).get("mean"),
            candidate_pass_rate=(mine.get(key) or {}).get("pass_rate"),
            mean_delta=(deltas.get(key) or {}).get("mean_delta"),
            test=SignedRankFigure.of(deltas.get(key)),
        )
        for key in sorted(set(mine) | set(theirs))
    ]


def _threshold_of(run: Run) -> float | None:
    for reason in run.verdict_reasons or []:
        threshold = reason.get("pass_threshold")
        if reason.get("gate") == THRESHOLD_GATE and isinstance(threshold, int | float):
            return float(threshold) if math.isfinite(threshold) else None
    return None


def build_comparison(candidate: Run, baseline: Run | None = None) -> Comparison:
    """The figures of ``candidate`` and, when given, of ``baseline`` beside them."""
    mine = candidate.aggregate_scores or {}
    theirs = baseline.aggregate_scores if baseline is not None else None
    grouping = mine.get("grouping") or (theirs or {}).get("grouping") or {}
    return Comparison(
        eval_id=candidate.eval_id,
        candidate=run_figures(candidate),
        baseline=run_figures(baseline) if baseline is not None else None,
        change=ChangeFigure.of(mine.get("baseline")),
        baseline_run_id=candidate.baseline_run_id,
        group_by=grouping.get("group_by"),
        groups=_groups(mine, theirs),
        scorers=_scorers(mine, theirs),
        pass_threshold=_threshold_of(candidate),
    )
