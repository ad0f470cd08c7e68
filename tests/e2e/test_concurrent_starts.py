"""Forty runs started at once through the embedded runtime: each runs once, each is told once.

The audit started 40 runs concurrently against `pawl serve` and found 0 duplicate results
and 0 duplicate webhooks; this keeps that as a test (real HTTP front, real SQS pollers over
the stand-in, a real webhook receiver on 127.0.0.1).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from pawl.local.runtime import LocalRuntime, RuntimeConfig
from tests.support.servers import Reply, Server, serve

pytestmark = pytest.mark.slow

RUNS = 40
ITEMS = 5
TERMINAL = {"completed", "failed", "canceled"}


@pytest.fixture
def receiver() -> Iterator[Server]:
    with serve(lambda request: Reply(200, {"ok": True})) as server:
        yield server


@pytest.fixture
def runtime(tmp_path: Path, receiver: Server) -> Iterator[LocalRuntime]:
    config = RuntimeConfig(
        port=0, state_dir=tmp_path / "state", snapshot_interval_s=0, run_schedules=False
    )
    with LocalRuntime(config) as running:
        yield running


def _ok(response: httpx.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _setup(runtime: LocalRuntime, receiver: Server) -> tuple[str, str]:
    """A project key and an eval of ``ITEMS`` items with a webhook; returns (key, eval id)."""
    with httpx.Client(base_url=runtime.url, timeout=30) as http:
        admin = {"Authorization": f"Bearer {runtime.admin_key}"}
        project = _ok(http.post("/api/v1/projects", json={"name": "busy"}, headers=admin))
        body = {"project_id": project["id"], "name": "ci"}
        key = _ok(http.post("/api/v1/api-keys", json=body, headers=admin))["key"]
        auth = {"Authorization": f"Bearer {key}"}
        agent = _ok(
            http.post(
                "/api/v1/agents",
                json={
                    "name": "instant",
                    "type": "python",
                    "config": {"callable": "tests.support.agents:instant"},
                },
                headers=auth,
            )
        )
        dataset = _ok(http.post("/api/v1/datasets", json={"name": "five"}, headers=auth))
        for index in range(ITEMS):
            item = {"input": [{"role": "user", "content": f"case {index}"}]}
            item["expected_output"] = f"case {index}"
            _ok(http.post(f"/api/v1/datasets/{dataset['id']}/items", json=item, headers=auth))
        evaluation = _ok(
            http.post(
                "/api/v1/evals",
                json={
                    "name": "concurrent",
                    "agent_id": agent["id"],
                    "dataset_id": dataset["id"],
                    "scorers": [{"type": "exact_match"}],
                },
                headers=auth,
            )
        )
        hook = {"project_id": project["id"], "url": receiver.url}
        hook["events"] = ["eval_run.completed", "eval_run.failed"]
        _ok(http.post("/api/v1/webhooks", json=hook, headers=auth))
    return key, evaluation["id"]


def _wait_for(condition: Any, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_forty_concurrent_starts_run_once_each_and_notify_once_each(
    runtime: LocalRuntime, receiver: Server
) -> None:
    key, eval_id = _setup(runtime, receiver)
    auth = {"Authorization": f"Bearer {key}"}
    barrier = threading.Barrier(RUNS)

    def start(index: int) -> str:
        with httpx.Client(base_url=runtime.url, headers=auth, timeout=60) as http:
            barrier.wait()
            run = _ok(http.post(f"/api/v1/evals/{eval_id}/runs", json={"metadata": {"n": index}}))
            return str(run["id"])

    with ThreadPoolExecutor(RUNS) as pool:
        run_ids = list(pool.map(start, range(RUNS)))
    assert len(set(run_ids)) == RUNS

    with httpx.Client(base_url=runtime.url, headers=auth, timeout=30) as http:

        def run(run_id: str) -> Any:
            return _ok(http.get(f"/api/v1/evals/{eval_id}/runs/{run_id}"), 200)

        _wait_for(lambda: all(run(r)["status"] in TERMINAL for r in run_ids), "every run to end")
        for run_id in run_ids:
            finished = run(run_id)
            assert finished["status"] == "completed", finished
            assert finished["completed_count"] + finished["errored_count"] == ITEMS
            results = _ok(
                http.get(f"/api/v1/evals/{eval_id}/runs/{run_id}/results?limit=100"), 200
            )["data"]
            items = [result["dataset_item_id"] for result in results]
            assert len(items) == len(set(items)) == ITEMS, run_id

    def notified() -> Counter[str]:
        bodies = [json.loads(request.body) for request in list(receiver.requests)]
        return Counter(b["resource_id"] for b in bodies if b["event"] == "eval_run.completed")

    _wait_for(lambda: len(notified()) == RUNS, "a webhook per run")
    assert runtime.drain(timeout_s=30)
    assert notified() == Counter({run_id: 1 for run_id in run_ids})
