"""An eval run's ``EvalSummary`` and its ``eval.*`` events, from its task outcomes. Pure.

Outcomes come from the run's result rows (:mod:`chalicelib.api.v2.reads`); nothing
here reads a store or the clock. An errored task (the agent call or its scoring
failed) is reported with score 0 and not passed — an OpenWOP client has no "errored"
state — but it is never paired against a baseline: the paired verdict compares tasks
scored in both runs only (see ``docs/openwop.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.stats.paired import TaskScore, paired_verdict

#: The bar when a suite declares no ``thresholds.passScore``: every task must pass.
DEFAULT_PASS_SCORE = 1.0


@dataclass(frozen=True)
class TaskOutcome:
    task_id: str
    index: int
    score: float
    passed: bool
    errored: bool
    at: str
    latency_ms: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class RunFacts:
    """What the events and summary say about the run itself."""

    suite_id: str
    suite_version: str
    task_count: int
    modes: list[str]
    thresholds: dict[str, Any]
    status: str
    created_at: str
    finished_at: str | None
    baseline_run_id: str | None = None


def aggregate(outcomes: Sequence[TaskOutcome]) -> float:
    return sum(o.score for o in outcomes) / len(outcomes) if outcomes else 0.0


def p95(values: Sequence[int]) -> int | None:
    """Nearest-rank 95th percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def total_cost(outcomes: Sequence[TaskOutcome]) -> float | None:
    costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
    return sum(costs) if costs else None


def run_passed(outcomes: Sequence[TaskOutcome], thresholds: dict[str, Any]) -> bool:
    """``aggregateScore >= passScore`` and, when declared, the cost and p95 latency bars."""
    if not outcomes:
        return False
    if aggregate(outcomes) < float(thresholds.get("passScore", DEFAULT_PASS_SCORE)):
        return False
    max_cost = thresholds.get("maxCostUsd")
    if max_cost is not None and (total_cost(outcomes) or 0.0) > float(max_cost):
        return False
    max_p95 = thresholds.get("maxP95LatencyMs")
    latencies = [o.latency_ms for o in outcomes if o.latency_ms is not None]
    if max_p95 is not None:
        observed = p95(latencies)
        # A bar on latency that nothing measured cannot be said to be met.
        if observed is None or observed > int(max_p95):
            return False
    return True


def task_entry(outcome: TaskOutcome) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "taskId": outcome.task_id,
        "score": outcome.score,
        "passed": outcome.passed,
    }
    if outcome.cost_usd is not None:
        entry["costUsd"] = outcome.cost_usd
    if outcome.latency_ms is not None:
        entry["latencyMs"] = outcome.latency_ms
    return entry


def regression(
    baseline_run_id: str,
    outcomes: Sequence[TaskOutcome],
    baseline: Sequence[TaskOutcome],
) -> dict[str, Any]:
    """The ``regression`` block: the aggregate delta, and the verdict of the pairs."""
    theirs = {o.task_id: o for o in baseline if not o.errored}
    pairs = [
        (TaskScore(o.score, o.passed), TaskScore(theirs[o.task_id].score, theirs[o.task_id].passed))
        for o in outcomes
        if not o.errored and o.task_id in theirs
    ]
    verdict = paired_verdict(pairs)
    delta = max(-1.0, min(1.0, aggregate(outcomes) - aggregate(baseline)))
    block: dict[str, Any] = {
        "baselineRunId": baseline_run_id,
        "scoreDelta": delta,
        "pairedTaskCount": verdict.paired,
        "verdict": verdict.verdict,
        "improvedCount": verdict.improved,
        "regressedCount": verdict.regressed,
        "pValue": verdict.p_value,
    }
    if verdict.delta_interval is not None:
        # pawl's additions, only when pass flags flipped (docs/openwop.md).
        block["passRateDeltaInterval"] = verdict.delta_interval
        block["pairedTasksNeeded"] = verdict.tasks_needed
    if verdict.score_test is not None:
        # pawl's additions, only when paired scores are not all 0/1 (docs/openwop.md).
        test = verdict.score_test
        block["pairedScoreDelta"] = test.mean_delta
        block["pairedScoreDeltaInterval"] = test.interval
        block["signedRank"] = {
            "statistic": test.signed_rank.statistic,
            "pValue": test.signed_rank.p_value,
            "method": test.signed_rank.method,
            "n": test.signed_rank.n,
        }
    return block


def summary(
    facts: RunFacts,
    outcomes: Sequence[TaskOutcome],
    baseline: Sequence[TaskOutcome] | None = None,
) -> dict[str, Any]:
    """The ``EvalSummary`` of a terminal run (tasks in suite order)."""
    ordered = sorted(outcomes, key=lambda o: o.index)
    body: dict[str, Any] = {
        "suiteId": facts.suite_id,
        "suiteVersion": facts.suite_version,
        "aggregateScore": aggregate(ordered),
        "passed": run_passed(ordered, facts.thresholds),
        "taskCount": len(ordered),
        "passedCount": sum(1 for o in ordered if o.passed),
        "tasks": [task_entry(o) for o in ordered],
    }
    cost = total_cost(ordered)
    if cost is not None:
        body["totalCostUsd"] = cost
    if facts.baseline_run_id is not None and baseline is not None:
        body["regression"] = regression(facts.baseline_run_id, ordered, baseline)
    return body


def visible_outcomes(facts: RunFacts, outcomes: Sequence[TaskOutcome]) -> list[TaskOutcome]:
    """The outcomes the event list shows: all of them once the run is terminal; before,
    the longest run of tasks scored from the first on — so every answer is a prefix of
    every later one and a ``sequence`` never moves."""
    ordered = sorted(outcomes, key=lambda o: o.index)
    if facts.status not in {"queued", "running"}:
        return ordered
    prefix = []
    for expected_index, outcome in enumerate(ordered):
        if outcome.index != expected_index:
            break
        prefix.append(outcome)
    return prefix


def events(
    facts: RunFacts, outcomes: Sequence[TaskOutcome], completed: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """``eval.started``, one ``eval.scored`` per shown task, and ``eval.completed``.

    ``sequence`` is the event's place in the run, fixed whatever the time of reading:
    ``eval.started`` is 1, the task at suite position ``i`` is ``2 + i``, and
    ``eval.completed`` is ``2 + taskCount``. ``completed`` is the payload of
    ``eval.completed`` (None until the run completed).
    """
    started: dict[str, Any] = {
        "suiteId": facts.suite_id,
        "suiteVersion": facts.suite_version,
        "taskCount": facts.task_count,
        "modes": list(facts.modes),
    }
    if facts.baseline_run_id is not None:
        started["baselineRunId"] = facts.baseline_run_id
    listed = [_event(1, "eval.started", facts.created_at, started)]
    for outcome in visible_outcomes(facts, outcomes):
        payload = task_entry(outcome)
        if outcome.errored:
            payload["errored"] = True
        listed.append(_event(2 + outcome.index, "eval.scored", outcome.at, payload))
    if completed is not None:
        at = facts.finished_at or facts.created_at
        listed.append(_event(2 + facts.task_count, "eval.completed", at, completed))
    return listed


def completed_payload(body: dict[str, Any]) -> dict[str, Any]:
    """``eval.completed`` from the summary it closes."""
    payload = {k: body[k] for k in ("aggregateScore", "passed", "taskCount", "passedCount")}
    if "regression" in body:
        payload["regressionVsBaseline"] = body["regression"]["scoreDelta"]
    return payload


def _event(sequence: int, kind: str, at: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": sequence, "type": kind, "at": at, "payload": payload}
