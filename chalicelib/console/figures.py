"""How a run's figures read on a page: pure functions over the API's JSON."""

from __future__ import annotations

from typing import Any


def percent(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value * 100:.1f}%"


def p_value(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value:.3g}"


def signed_percent(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "—"
    return f"{value * 100:+.1f} pt"


def interval_text(interval: Any) -> str:
    if not isinstance(interval, dict):
        return "—"
    return f"{percent(interval.get('low'))} to {percent(interval.get('high'))}"


def verdict(run: dict[str, Any]) -> str:
    if run.get("passed") is True:
        return "pass"
    if run.get("passed") is False:
        return "fail"
    return "—"


def run_row(run: dict[str, Any]) -> dict[str, Any]:
    """A run as one row of a table: status, passed, pass rate and interval, baseline Δ and p."""
    aggregate = run.get("aggregate_scores") or {}
    baseline = aggregate.get("baseline") or {}
    return {
        "id": run["id"],
        "eval_id": run["eval_id"],
        "status": run["status"],
        "verdict": verdict(run),
        "counts": f"{run.get('completed_count', 0)}/{run.get('item_count', 0)}",
        "errored": run.get("errored_count", 0),
        "pass_rate": percent(aggregate.get("pass_rate")),
        "interval": interval_text(aggregate.get("pass_rate_interval")),
        "baseline_run_id": run.get("baseline_run_id"),
        "delta": signed_percent(baseline.get("pass_rate_delta")),
        "p_value": p_value(baseline.get("p_value")),
        "agent_version": run.get("agent_version"),
        "trigger": run.get("trigger_id") or "manual",
        "metadata": metadata_text(run.get("metadata")),
        "created_at": run.get("created_at"),
    }


def scorer_rows(run: dict[str, Any]) -> list[dict[str, str]]:
    scorers = (run.get("aggregate_scores") or {}).get("scorers") or {}
    return [
        {
            "name": name,
            "mean": p_value(figures.get("mean")),
            "pass_rate": percent(figures.get("pass_rate")),
        }
        for name, figures in sorted(scorers.items())
        if isinstance(figures, dict)
    ]


def outcome(result: dict[str, Any]) -> str:
    if result.get("error"):
        return "errored"
    if result.get("passed") is True:
        return "passed"
    if result.get("passed") is False:
        return "failed"
    return "—"


def result_row(result: dict[str, Any]) -> dict[str, Any]:
    inputs = result.get("input") or []
    last = inputs[-1] if inputs and isinstance(inputs[-1], dict) else {}
    return {
        "id": result.get("id"),
        "dataset_item_id": result.get("dataset_item_id"),
        "outcome": outcome(result),
        "input": as_text(last.get("content")),
        "output": as_text(result.get("output")),
        "trial": result.get("trial"),
        "scores": ", ".join(
            f"{s.get('scorer')}: {p_value(s.get('score'))}" for s in result.get("scores") or []
        ),
    }


def as_text(value: Any, limit: int = 300) -> str:
    """A value as text, cut to ``limit`` characters for a table cell (never markup)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


def reason_text(reason: dict[str, Any]) -> str:
    """A verdict gate's outcome in words."""
    gate, held = reason.get("gate"), "held" if reason.get("passed") else "failed"
    if gate == "pass_threshold":
        return (
            f"Pass threshold {held}: pass rate {percent(reason.get('pass_rate'))} against "
            f"{percent(reason.get('pass_threshold'))} over {reason.get('scored_item_count', 0)} "
            "scored items."
        )
    if gate == "max_regression":
        text = (
            f"Regression gate {held}: {signed_percent(reason.get('pass_rate_delta'))} against "
            f"the baseline (allowed -{percent(reason.get('max_regression'))}), "
            f"p = {p_value(reason.get('p_value'))} at alpha {reason.get('alpha')}, over "
            f"{reason.get('compared_item_count', 0)} compared items."
        )
        # The gate's own sentence: which of its three answers, and, inconclusive, the
        # compared items that would decide (or why it stopped early).
        explanation = reason.get("explanation")
        if isinstance(explanation, str) and explanation:
            text += f" {explanation[0].upper()}{explanation[1:]}"
        return text
    return f"{gate}: {held}"


def early_stop_text(run: dict[str, Any]) -> str | None:
    """What an ``early_stop`` run's sequential test decided and what stopping saved; None
    for any other run, or one that ran to the end undecided."""
    block = (run.get("aggregate_scores") or {}).get("early_stop")
    if not isinstance(block, dict) or not block.get("decision"):
        return None
    decision = str(block["decision"]).replace("_", " ")
    saved = block.get("spend_saved_usd")
    spend = f", about ${saved:.4f} of agent spend saved" if isinstance(saved, int | float) else ""
    return (
        f"{decision} after {block.get('decided_after_items')} items; "
        f"{block.get('items_run')} ran, {block.get('items_skipped')} skipped{spend}"
    )


def detectable_text(run: dict[str, Any]) -> str | None:
    """The smallest drop the run's compared items could detect, as its regression gate
    states it (``min_detectable_regression``); None for a run whose verdict has no such gate."""
    for reason in run.get("verdict_reasons") or []:
        if reason.get("gate") != "max_regression" or "min_detectable_regression" not in reason:
            continue
        compared = reason.get("compared_item_count") or 0
        power = reason.get("min_detectable_power")
        at = f"{percent(power)} power" if power is not None else "its power"
        smallest = reason.get("min_detectable_regression")
        if smallest is None:
            return f"none: {compared} compared items detect no drop at {at}"
        return f"{percent(smallest)} ({at}, {compared} compared items)"
    return None


def trial_view(result: dict[str, Any]) -> dict[str, Any]:
    """One trial of an item, whole: messages by role, expected, output, scores, error, usage."""
    usage = [u for u in result.get("usage") or [] if isinstance(u, dict)]
    return {
        "trial": result.get("trial"),
        "outcome": outcome(result),
        "messages": [
            {"role": as_text(m.get("role"), 40), "content": as_text(m.get("content"), 10**7)}
            for m in result.get("input") or []
            if isinstance(m, dict)
        ],
        "expected": result.get("expected_output"),
        "output": result.get("output"),
        "scores": [
            {
                "scorer": s.get("scorer"),
                "score": p_value(s.get("score")),
                "passed": "pass" if s.get("passed") else "fail",
                "reasoning": s.get("reasoning"),
                "decision_id": s.get("decision_id"),
            }
            for s in result.get("scores") or []
            if isinstance(s, dict)
        ],
        "error": result.get("error"),
        "attempts": result.get("attempts"),
        "generation_id": result.get("generation_id"),
        "input_tokens": sum(int(u.get("input_tokens") or 0) for u in usage),
        "output_tokens": sum(int(u.get("output_tokens") or 0) for u in usage),
        "cost_usd": f"${sum(float(u.get('cost_usd') or 0) for u in usage):.4f}",
    }


def metadata_text(metadata: Any) -> str:
    """A run's metadata (a commit, a branch) as ``key=value`` pairs, for a table cell."""
    if not isinstance(metadata, dict) or not metadata:
        return ""
    return as_text(", ".join(f"{key}={value}" for key, value in sorted(metadata.items())), 120)


#: The statuses of a run still to finish (its page and the project page poll its progress).
IN_PROGRESS = ("queued", "running")


def progress(run: dict[str, Any], passed_results: int | None) -> dict[str, Any]:
    """A run's progress as the page and ``progress.json`` show it.

    While it runs the aggregate is not computed yet, so the pass rate *so far* is
    trial-level: passed results over scored (not errored) results. Once it has ended it
    is the run's own pass rate."""
    completed, errored = int(run.get("completed_count") or 0), int(run.get("errored_count") or 0)
    items = int(run.get("item_count") or 0)
    aggregate = run.get("aggregate_scores") or {}
    if aggregate.get("pass_rate") is not None:
        rate = percent(aggregate.get("pass_rate"))
    elif passed_results is not None and completed:
        rate = percent(passed_results / completed)
    else:
        rate = "—"
    return {
        "status": run.get("status"),
        "finished": run.get("status") not in IN_PROGRESS,
        "recorded": f"{completed + errored}/{items}",
        "completed_count": completed,
        "errored_count": errored,
        "item_count": items,
        "errored": str(errored),
        "pass_rate": rate,
        "verdict": verdict(run),
    }


def usage_rows(aggregate: dict[str, Any] | None) -> list[dict[str, str]]:
    """A usage roll-up by source (``/usage/aggregate?group_by=source``) as table rows,
    the totals last."""
    if not isinstance(aggregate, dict):
        return []
    groups = [g for g in aggregate.get("groups") or [] if isinstance(g, dict)]
    if not groups:
        return []
    totals = aggregate.get("totals") or {}
    return [
        {
            "source": as_text(group.get("key") or "other", 64),
            "events": str(group.get("event_count", 0)),
            "tokens": f"{group.get('input_tokens', 0)} in / {group.get('output_tokens', 0)} out",
            "cost": f"${float(group.get('cost_usd') or 0):.4f}",
        }
        for group in [*groups, {"key": "total", **totals}]
    ]
