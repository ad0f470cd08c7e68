"""The spend guard: a run with ``max_cost_usd`` stops starting items once its spend reaches
it, lets the items in flight finish, and settles ``failed`` with ``BUDGET_EXCEEDED``,
keeping what it scored.

The agent is a real HTTP server on 127.0.0.1 that reports a cost with every answer.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.api.test_usage import make_eval, queued_run
from tests.support.runs import Plugins
from tests.support.servers import Reply, Request, serve

COST = 0.01
SAFETY_TIMEOUT_S = 10


def costly(request: Request) -> Reply:
    return Reply(200, {"output": "ok", "usage": {"input_tokens": 5, "cost_usd": COST}})


class Gate:
    """Holds every call until ``width`` calls are in flight at once, so they all start
    before any of them has spent anything (no timing involved)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.calls = 0
        self._in_flight = 0
        self._open = False
        self._condition = threading.Condition()

    def __call__(self, request: Request) -> Reply:
        with self._condition:
            self.calls += 1
            self._in_flight += 1
            if self._in_flight >= self.width:
                self._open = True
                self._condition.notify_all()
            self._condition.wait_for(lambda: self._open, timeout=SAFETY_TIMEOUT_S)
        return costly(request)


def result_codes(api: Any, evaluation: dict[str, Any], run_id: str) -> list[str]:
    """Each result's error code (``scored`` for a scored one), sorted."""
    path = f"/api/v1/evals/{evaluation['id']}/runs/{run_id}/results?limit=100"
    rows = api.get(path).json["data"]
    return sorted((r["error"] or {}).get("code") or "scored" for r in rows)


def _events_cost(api: Any, run_id: str) -> float:
    rolled = api.get(f"/api/v1/usage/aggregate?group_by=source&eval_run_id={run_id}")
    assert rolled.status == 200, rolled
    return float(rolled.json["totals"]["cost_usd"])


def test_a_queued_run_stops_at_its_budget_and_keeps_what_it_scored(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    api = api.as_key(project_key)
    with serve(costly) as agent:
        evaluation = make_eval(
            api, project, agent, None, items=10, max_cost_usd=0.03, max_concurrency=1
        )
        assert evaluation["max_cost_usd"] == 0.03
        run = queued_run(api, app, evaluation)
        assert len(agent.requests) == 3  # the fourth item found the budget spent
    assert run["status"] == "failed" and run["failure_code"] == "BUDGET_EXCEEDED", run
    assert "max_cost_usd" in run["failure_reason"]
    assert (run["item_count"], run["completed_count"], run["errored_count"]) == (10, 3, 7)
    assert run["passed"] is None
    assert run["aggregate_scores"]["scorers"]["contains"]["mean"] == 1.0
    assert run["aggregate_scores"]["usage"]["total"] == {
        "calls": 3,
        "input_tokens": 15,
        "output_tokens": 0,
        "cost_usd": 0.03,
    }
    assert result_codes(api, evaluation, run["id"]) == ["BUDGET_EXCEEDED"] * 7 + ["scored"] * 3
    assert _events_cost(api, run["id"]) == 0.03
    assert plugins.events.of(run["id"]) == ["eval_run.failed"]  # exactly one event


def test_items_in_flight_finish_and_are_counted(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    """Four items start at once; the first to finish exhausts the budget, yet all four
    finish and their spend is recorded exactly; the other eight never start."""
    api = api.as_key(project_key)
    gate = Gate(width=4)
    with serve(gate) as agent:
        evaluation = make_eval(
            api, project, agent, None, items=12, max_cost_usd=0.005, max_concurrency=4
        )
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}).json
    assert gate.calls == 4
    assert run["status"] == "failed" and run["failure_code"] == "BUDGET_EXCEEDED", run
    assert (run["completed_count"], run["errored_count"]) == (4, 8)
    assert run["aggregate_scores"]["usage"]["total"]["cost_usd"] == 0.04
    assert _events_cost(api, run["id"]) == 0.04


def test_a_run_start_may_set_the_budget_and_an_unspent_budget_completes(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    api = api.as_key(project_key)
    with serve(costly) as agent:
        evaluation = make_eval(api, project, agent, None, items=3, max_concurrency=1)
        assert evaluation["max_cost_usd"] is None
        runs = f"/api/v1/evals/{evaluation['id']}/runs"
        enough = api.post(runs, {"wait": True, "max_cost_usd": 1}).json
        tight = api.post(runs, {"wait": True, "max_cost_usd": 0.015}).json
        # Spent exactly as every item finished: nothing was cut, so it completed.
        exact = api.post(runs, {"wait": True, "max_cost_usd": 0.03}).json
    assert enough["status"] == "completed" and enough["failure_code"] is None
    assert tight["status"] == "failed" and tight["failure_code"] == "BUDGET_EXCEEDED"
    assert (tight["completed_count"], tight["errored_count"]) == (2, 1)
    assert exact["status"] == "completed" and exact["completed_count"] == 3


@pytest.mark.parametrize("value", [0, -1, "1", True, 2_000_000])
def test_a_bad_max_cost_usd_is_refused_before_any_write(
    api: Any, project: dict[str, Any], value: Any
) -> None:
    with serve(costly) as agent:
        evaluation = make_eval(api, project, agent, None, items=1)
    body = {
        "project_id": project["id"],
        "name": "other",
        "agent_id": evaluation["agent_id"],
        "dataset_id": evaluation["dataset_id"],
        "scorers": [{"type": "contains", "value": "ok"}],
        "max_cost_usd": value,
    }
    refused = api.post("/api/v1/evals", body)
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "max_cost_usd"
    assert len(api.get(f"/api/v1/evals?project_id={project['id']}").json["data"]) == 1
    updated = api.put(f"/api/v1/evals/{evaluation['id']}", {"max_cost_usd": value})
    assert updated.status == 400 and updated.json["error"]["meta"]["field"] == "max_cost_usd"
    started = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"max_cost_usd": value})
    assert started.status == 400 and started.json["error"]["meta"]["field"] == "max_cost_usd"
    assert api.get(f"/api/v1/evals/{evaluation['id']}/runs").json["data"] == []


def test_an_update_sets_and_null_removes_the_budget(api: Any, project: dict[str, Any]) -> None:
    with serve(costly) as agent:
        evaluation = make_eval(api, project, agent, None, items=1)
    path = f"/api/v1/evals/{evaluation['id']}"
    assert api.put(path, {"max_cost_usd": 2.5}).json["max_cost_usd"] == 2.5
    assert api.get(path).json["max_cost_usd"] == 2.5
    assert api.put(path, {"max_cost_usd": None}).json["max_cost_usd"] is None
