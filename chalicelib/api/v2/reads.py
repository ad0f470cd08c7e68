"""Reading a ``/v2`` run: its record, its task outcomes, its summary and its events.

Everything is derived at read time from the pawl run and its result rows (see
``docs/openwop.md`` §Events): one eval.started, one eval.scored per recorded task, and
eval.completed exactly when the pawl run reads ``completed`` — the same read that
decides the status, so the event is there before (never after) a client sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.api.v2 import suites
from chalicelib.domain.runs import COMPLETED, TERMINAL_STATUSES, EvalResult, RunState
from chalicelib.openwop import errors, summary
from chalicelib.openwop.summary import RunFacts, TaskOutcome
from chalicelib.scoring.openwop_expected import TYPE as SCORER
from chalicelib.store import generations, results, runs
from chalicelib.store import openwop as records

AGENT_USAGE = "eval"


@dataclass(frozen=True)
class V2Run:
    record: dict[str, Any]
    state: RunState
    suite: dict[str, Any]

    @property
    def run_id(self) -> str:
        return str(self.record["runId"])

    @property
    def status(self) -> str:
        return self.state.status


def find(project_id: str, run_id: str) -> V2Run | None:
    """The caller's v2 run, or None (another tenant's reads as missing)."""
    found = records.project_of(records.run_key(run_id))
    if found is None or found[0] != project_id:
        return None
    state = runs.find_run(run_id)
    record = found[1]
    suite = suites.record_of(project_id, record["suiteId"], record["suiteVersion"])
    if state is None or suite is None:
        return None
    return V2Run(record, state, suite)


def get(project_id: str, run_id: str) -> V2Run:
    found = find(project_id, run_id)
    if found is None:
        raise errors.not_found("run")
    return found


def public(run: V2Run) -> dict[str, Any]:
    """``GET /v2/runs/{runId}``."""
    record, pawl = run.record, run.state.run
    body: dict[str, Any] = {
        "runId": run.run_id,
        "mode": "eval",
        "status": pawl.status,
        "evalSuiteRef": record["evalSuiteRef"],
        "suiteId": record["suiteId"],
        "suiteVersion": record["suiteVersion"],
        "agentId": record["agentId"],
        "evalModes": record["modes"],
        "tags": record["tags"],
        "metadata": record["metadata"],
        "createdAt": pawl.created_at,
        "startedAt": pawl.started_at,
        "finishedAt": pawl.finished_at,
        "eventsUrl": f"/v2/runs/{run.run_id}/events",
    }
    if record.get("baselineRunId"):
        body["baselineRunId"] = record["baselineRunId"]
    return body


def facts(run: V2Run) -> RunFacts:
    return RunFacts(
        suite_id=run.record["suiteId"],
        suite_version=run.record["suiteVersion"],
        task_count=int(run.suite["taskCount"]),
        modes=list(run.record["modes"]),
        thresholds=dict(run.suite.get("thresholds") or {}),
        status=run.status,
        created_at=run.state.run.created_at,
        finished_at=run.state.run.finished_at,
        baseline_run_id=run.record.get("baselineRunId"),
    )


def _outcome(result: EvalResult, place: tuple[str, int], latency: int | None) -> TaskOutcome:
    task_id, index = place
    entry = next((s for s in result.scores if s.scorer == SCORER), None)
    costs = [u.cost_usd for u in result.usage if u.source == AGENT_USAGE]
    errored = result.errored or entry is None
    return TaskOutcome(
        task_id=task_id,
        index=index,
        score=0.0 if entry is None or errored else float(entry.score),
        passed=False if entry is None or errored else bool(entry.passed),
        errored=errored,
        at=result.created_at,
        latency_ms=latency,
        cost_usd=sum(costs) if costs else None,
    )


def outcomes(run_id: str, suite: dict[str, Any]) -> list[TaskOutcome]:
    """The run's recorded tasks, with their place in the suite."""
    places = {item_id: (task_id, i) for i, (task_id, item_id) in enumerate(suite["tasks"])}
    found = [r for r in results.iter_scored(run_id) if r.dataset_item_id in places]
    latency = generations.latencies([r.generation_id for r in found if r.generation_id])
    return [
        _outcome(r, places[str(r.dataset_item_id)], latency.get(r.generation_id or ""))
        for r in found
    ]


def _baseline_outcomes(project_id: str, baseline_run_id: str) -> list[TaskOutcome]:
    baseline = find(project_id, baseline_run_id)
    if baseline is None:
        return []
    return outcomes(baseline.run_id, baseline.suite)


def summary_of(project_id: str, run: V2Run) -> dict[str, Any]:
    """The ``EvalSummary`` of a terminal run (409 before)."""
    if run.status not in TERMINAL_STATUSES:
        raise errors.run_state_conflict(run.status)
    baseline_id = run.record.get("baselineRunId")
    baseline = _baseline_outcomes(project_id, baseline_id) if baseline_id else None
    return summary.summary(facts(run), outcomes(run.run_id, run.suite), baseline)


def events_of(project_id: str, run: V2Run) -> list[dict[str, Any]]:
    """The run's ``eval.*`` events, ordered by ``sequence``."""
    run_facts = facts(run)
    task_outcomes = outcomes(run.run_id, run.suite)
    completed = None
    if run.status == COMPLETED:
        baseline_id = run.record.get("baselineRunId")
        baseline = _baseline_outcomes(project_id, baseline_id) if baseline_id else None
        body = summary.summary(run_facts, task_outcomes, baseline)
        completed = summary.completed_payload(body)
    return summary.events(run_facts, task_outcomes, completed)
