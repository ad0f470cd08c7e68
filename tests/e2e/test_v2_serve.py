"""A 1,000-task ``/v2`` suite through `pawl serve`: one eval.scored per task, no duplicate.

Slow (a real runtime, moto's server, the SQS pollers). Prints the wall time so the
figure can be recorded (``docs/openwop.md``); asserts behaviour only.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_serve import ServeProcess, _client
from tests.e2e.test_serve import started as started  # the fixture, shared

pytestmark = pytest.mark.slow

TASKS = 1000
WAIT_S = 900


def _suite() -> dict[str, Any]:
    return {
        "suiteId": "acme.bench.evals.thousand",
        "version": "1.0.0",
        "modes": ["golden", "regression"],
        "tasks": [
            {
                "taskId": f"task-{n:04d}",
                "input": f"answer {n}",
                "expected": {
                    "kind": "golden",
                    "match": {
                        "strategy": "exact" if n % 10 else "contains",
                        "value": f"{n}" if n % 10 == 0 else f"answer {n}",
                    },
                },
            }
            for n in range(TASKS)
        ],
    }


def _tenant(admin: httpx.Client) -> str:
    project = admin.post("/api/v1/projects", json={"name": "v2-bench"}).json()
    key = admin.post("/api/v1/api-keys", json={"project_id": project["id"], "name": "k"})
    return str(key.json()["key"])


def test_a_thousand_task_suite_through_pawl_serve(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    serve = ServeProcess(tmp_path / "state", tmp_path)
    started.append(serve)
    with _client(serve.url) as admin, _client(serve.url, _tenant(admin)) as tenant:
        registered = tenant.post("/v2/eval-suites", json=_suite())
        assert registered.status_code == 201, registered.text
        began = time.monotonic()
        created = tenant.post(
            "/v2/runs",
            json={
                "mode": "eval",
                "evalSuiteRef": "acme.bench.evals.thousand@1.0.0",
                "agentId": "conformance-eval-agent",
            },
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        deadline = time.monotonic() + WAIT_S
        status = "queued"
        while status in {"queued", "running"} and time.monotonic() < deadline:
            time.sleep(1.0)
            status = tenant.get(f"/v2/runs/{run_id}").json()["status"]
        elapsed = time.monotonic() - began
        assert status == "completed", status
        events = tenant.get(f"/v2/runs/{run_id}/events").json()["data"]
        summary = tenant.get(f"/v2/runs/{run_id}/eval-summary").json()
    scored = [e["payload"]["taskId"] for e in events if e["type"] == "eval.scored"]
    assert len(scored) == TASKS and len(set(scored)) == TASKS
    assert [e["type"] for e in events].count("eval.started") == 1
    assert [e["type"] for e in events].count("eval.completed") == 1
    assert [e["sequence"] for e in events] == list(range(1, TASKS + 3))
    assert summary["taskCount"] == TASKS and summary["aggregateScore"] == 1.0
    print(
        f"\n/v2 1,000-task run through pawl serve: {elapsed:.1f} s ({TASKS / elapsed:.0f} tasks/s)"
    )
