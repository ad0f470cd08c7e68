"""``format_message``: a lifecycle event as a Slack incoming-webhook payload (pure).

The payload carries ``text`` (the one-line fallback notifications show) and Block Kit
``blocks`` with the figures: pass rate and its interval, the baseline comparison when
the run had one, and every verdict gate with its numbers.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.events import LifecycleEvent

#: Slack refuses a section whose text is longer than this.
MAX_SECTION_CHARS = 3000


def escape(text: object) -> str:
    """Slack mrkdwn treats ``& < >`` as control characters; everything we show is escaped."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def percent(value: Any) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, int | float) else "n/a"


def points(value: Any) -> str:
    """A pass-rate difference in percentage points, signed."""
    return f"{value * 100:+.1f} pts" if isinstance(value, int | float) else "n/a"


def p_value(value: Any) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def verdict_word(passed: bool | None) -> str:
    """``None`` means no gate applied to the run (no threshold, no regression limit)."""
    if passed is None:
        return "no verdict"
    return "PASSED" if passed else "FAILED"


def pass_rate_line(aggregate: dict[str, Any]) -> str:
    """``80.0% (95% CI [49.0%, 94.3%]) over 10 scored items, 1 errored``."""
    line = percent(aggregate.get("pass_rate"))
    interval = aggregate.get("pass_rate_interval")
    if isinstance(interval, dict):
        level = round(float(interval.get("level", 0.95)) * 100)
        line += f" ({level}% CI [{percent(interval.get('low'))}, {percent(interval.get('high'))}])"
    line += f" over {aggregate.get('scored_item_count', 0)} scored items"
    errored = aggregate.get("errored_item_count") or 0
    return line + (f", {errored} errored" if errored else "")


def baseline_line(baseline: dict[str, Any]) -> str:
    flipped = baseline.get("flipped") or {}
    return (
        f"vs baseline `{escape(baseline.get('run_id'))}`: {points(baseline.get('pass_rate_delta'))}"
        f" over {baseline.get('compared_item_count', 0)} compared items; flips"
        f" {flipped.get('improved', 0)} improved / {flipped.get('regressed', 0)} regressed;"
        f" McNemar p = {p_value(baseline.get('p_value'))}"
    )


def reason_line(reason: dict[str, Any]) -> str:
    """One verdict gate with its figures; an unknown gate shows its raw fields."""
    mark = ":white_check_mark:" if reason.get("passed") else ":x:"
    gate = reason.get("gate")
    if gate == "pass_threshold":
        detail = (
            f"pass rate {percent(reason.get('pass_rate'))}"
            f" vs threshold {percent(reason.get('pass_threshold'))}"
        )
    elif gate == "max_regression":
        detail = (
            f"delta {points(reason.get('pass_rate_delta'))}"
            f" (allowed drop {percent(reason.get('max_regression'))}),"
            f" p = {p_value(reason.get('p_value'))} (alpha {reason.get('alpha')})"
        )
    else:
        detail = ", ".join(f"{k}={v}" for k, v in reason.items() if k not in ("gate", "passed"))
    return f"{mark} *{escape(gate)}*: {escape(detail)}"


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:MAX_SECTION_CHARS]}}


def _summary_fields(event: LifecycleEvent, run: dict[str, Any]) -> dict[str, Any]:
    fields = {
        "Eval": f"`{escape(run.get('eval_id'))}`",
        "Run": f"`{escape(run.get('id', event.resource_id))}`",
        "Status": escape(run.get("status")),
        "Verdict": verdict_word(run.get("passed")),
    }
    return {
        "type": "section",
        "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{v}"} for k, v in fields.items()],
    }


def format_message(event: LifecycleEvent) -> dict[str, Any]:
    """The Slack webhook body (``text`` + ``blocks``) summarising ``event``'s run."""
    run = event.data
    aggregate = run.get("aggregate_scores") or {}
    verdict = verdict_word(run.get("passed"))
    text = f"pawl {event.event}: eval {run.get('eval_id')} run {run.get('id')} — {verdict}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": event.event[:150]}},
        _summary_fields(event, run),
    ]
    if aggregate:
        rate = pass_rate_line(aggregate)
        text += f", pass rate {rate}"
        blocks.append(_section(f"*Pass rate* {escape(rate)}"))
    if run.get("failure_reason"):
        text += f" ({run['failure_reason']})"
        blocks.append(_section(f"*Failure* {escape(run['failure_reason'])}"))
    baseline = aggregate.get("baseline")
    if isinstance(baseline, dict):
        blocks.append(_section(f"*Baseline* {baseline_line(baseline)}"))
    reasons = run.get("verdict_reasons") or []
    if reasons:
        lines = "\n".join(reason_line(reason) for reason in reasons)
        blocks.append(_section(f"*Verdict: {verdict}*\n{lines}"))
    blocks.append(
        {
            "type": "context",
            "elements": [
                {
                    "type": "mrkdwn",
                    "text": f"project `{escape(event.project_id)}` · event `{escape(event.id)}`"
                    f" · {escape(event.timestamp)}",
                }
            ],
        }
    )
    return {"text": escape(text), "blocks": blocks}
