"""A run's ``max_concurrency``: honoured by the agent calls, bounded by the server's limit.

The agent is a real HTTP server on 127.0.0.1 that counts requests in flight. Each request
waits until ``target`` requests are in flight at once (then every later one passes
straight through), so a test shows both that the limit is reached and that it is never
exceeded, without timing anything: a pawl that allowed fewer than ``target`` calls at
once would leave the requests waiting out the safety timeout and the peak short.

A run slow-starts (``engine.aimd``: a few calls at first, one more per call that
finished), so an agent that holds its calls must first let ``warmup`` calls through
for the window to grow past ``target``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from chalicelib import wiring
from tests.support.drain import drain_queues
from tests.support.servers import Reply, Request, serve

ITEMS = 24
SAFETY_TIMEOUT_S = 10


class PeakAgent:
    def __init__(self, target: int, warmup: int = 0) -> None:
        self.target = target
        self.warmup = warmup
        self.in_flight = 0
        self.peak = 0
        self.calls = 0
        self._reached = False
        self._condition = threading.Condition()

    def __call__(self, request: Request) -> Reply:
        with self._condition:
            self.calls += 1
            if self.calls <= self.warmup:
                return Reply(200, {"output": "ok"})
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.in_flight >= self.target:
                self._reached = True
                self._condition.notify_all()
            self._condition.wait_for(lambda: self._reached, timeout=SAFETY_TIMEOUT_S)
            self.in_flight -= 1
        return Reply(200, {"output": "ok"})


def _suite(api: Any, project: Any, url: str, **eval_fields: Any) -> dict[str, Any]:
    agent = api.post(
        "/api/v1/agents",
        {"project_id": project["id"], "name": "peak", "type": "http", "config": {"url": url}},
    ).json
    dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "many"}).json
    for i in range(ITEMS):
        created = api.post(
            f"/api/v1/datasets/{dataset['id']}/items",
            {"input": [{"role": "user", "content": f"case {i}"}]},
        )
        assert created.status == 201, created
    response = api.post(
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": "concurrency",
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            **eval_fields,
        },
    )
    assert response.status == 201, response
    evaluation: dict[str, Any] = response.json
    return evaluation


def _runs(api: Any, evaluation: dict[str, Any]) -> str:
    return f"/api/v1/evals/{evaluation['id']}/runs"


def test_the_eval_default_is_40_and_a_run_of_20_exceeds_10_in_flight(
    api: Any, project: Any
) -> None:
    agent = PeakAgent(target=11, warmup=8)  # the window: 4 at first, +1 per finished call
    with serve(agent) as server:
        evaluation = _suite(api, project, server.url, max_concurrency=20)
        assert evaluation["max_concurrency"] == 20
        run = api.post(_runs(api, evaluation), {"wait": True}).json
        errors = api.get(f"{_runs(api, evaluation)}/{run['id']}/results?limit=100").json["data"]
    assert run["status"] == "completed" and run["completed_count"] == ITEMS, [
        e["error"] for e in errors if e["error"]
    ]
    assert agent.calls == ITEMS
    assert 10 < agent.peak <= 20


def test_a_run_start_of_3_never_has_more_than_3_in_flight(api: Any, project: Any) -> None:
    agent = PeakAgent(target=3)
    with serve(agent) as server:
        evaluation = _suite(api, project, server.url)
        assert evaluation["max_concurrency"] == 40  # the default
        run = api.post(_runs(api, evaluation), {"wait": True, "max_concurrency": 3}).json
    assert run["status"] == "completed" and run["completed_count"] == ITEMS, run
    assert agent.peak == 3


def test_a_queued_run_honours_the_eval_s_limit_in_its_worker_batches(
    api: Any, project: Any, app: Any
) -> None:
    agent = PeakAgent(target=2)
    with serve(agent) as server:
        evaluation = _suite(api, project, server.url, max_concurrency=2)
        run = api.post(_runs(api, evaluation), {}).json
        drain_queues(app)
        finished = api.get(f"{_runs(api, evaluation)}/{run['id']}").json
    assert finished["status"] == "completed" and finished["completed_count"] == ITEMS
    assert agent.peak == 2


@pytest.mark.parametrize("value", [0, -1, "4", 1.5, 201])
def test_an_invalid_or_too_large_max_concurrency_is_refused_before_any_write(
    api: Any, project: Any, value: Any
) -> None:
    evaluation = _suite(api, project, "http://127.0.0.1:9/agent")
    body = {
        "project_id": project["id"],
        "name": "other",
        "agent_id": evaluation["agent_id"],
        "dataset_id": evaluation["dataset_id"],
        "scorers": [{"type": "contains", "value": "ok"}],
        "max_concurrency": value,
    }
    refused = api.post("/api/v1/evals", body)
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert refused.json["error"]["meta"]["field"] == "max_concurrency"
    listed = api.get(f"/api/v1/evals?project_id={project['id']}").json["data"]
    assert [e["id"] for e in listed] == [evaluation["id"]]

    updated = api.put(f"/api/v1/evals/{evaluation['id']}", {"max_concurrency": value})
    assert updated.status == 400 and updated.json["error"]["meta"]["field"] == "max_concurrency"
    assert api.get(f"/api/v1/evals/{evaluation['id']}").json["max_concurrency"] == 40

    started = api.post(_runs(api, evaluation), {"max_concurrency": value})
    assert started.status == 400 and started.json["error"]["meta"]["field"] == "max_concurrency"
    assert api.get(_runs(api, evaluation)).json["data"] == []


def test_the_server_limit_is_named_in_the_refusal(
    api: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAWL_MAX_CONCURRENCY_LIMIT", "8")
    wiring.reload_settings()
    evaluation = _suite(api, project, "http://127.0.0.1:9/agent", max_concurrency=8)
    refused = api.post(_runs(api, evaluation), {"max_concurrency": 9})
    assert refused.status == 400, refused
    assert refused.json["error"]["meta"]["limit"] == 8
    assert "at most 8" in refused.json["error"]["message"]
    assert api.get(_runs(api, evaluation)).json["data"] == []
    null = api.put(f"/api/v1/evals/{evaluation['id']}", {"max_concurrency": None})
    assert null.status == 400, null


def test_a_foreign_project_key_cannot_start_a_run_with_its_own_concurrency(
    api: Any, project: Any
) -> None:
    evaluation = _suite(api, project, "http://127.0.0.1:9/agent")
    other = api.post("/api/v1/projects", {"name": "other"}).json
    key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "ci"}).json["key"]
    refused = api.as_key(key).post(_runs(api, evaluation), {"max_concurrency": 3})
    assert refused.status == 404, refused
    assert api.get(_runs(api, evaluation)).json["data"] == []
