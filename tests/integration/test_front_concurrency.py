"""The local front serves requests at once, as separate Lambda instances would.

It used to run one app request at a time (Chalice keeps the request being served on the
app object), so a ``wait: true`` run start held every other request, the run's own cancel
included, until the run had finished. The agent here is a real HTTP server whose calls wait
until the test lets them go: while the sync start is blocked inside the agent, other
requests over real HTTP must answer, and a cancel must stop the run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.support.gated_agent import GatedAgent
from tests.support.http_front import app_over_http, project_over_http
from tests.support.servers import serve

#: A request the front held behind the blocked sync start would wait until the agent's
#: safety timeout (30 s): far longer than this, so a regression fails instead of passing late.
ANSWER_WITHIN_S = 10


@pytest.fixture
def front() -> Iterator[str]:
    with app_over_http() as server:
        yield server.url


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=ANSWER_WITHIN_S
    )


def _eval_over(client: httpx.Client, agent_url: str, items: int) -> dict[str, Any]:
    agent = client.post(
        "/api/v1/agents", json={"name": "gated", "type": "http", "config": {"url": agent_url}}
    ).json()
    dataset = client.post("/api/v1/datasets", json={"name": "cases"}).json()
    for i in range(items):
        created = client.post(
            f"/api/v1/datasets/{dataset['id']}/items",
            json={"input": [{"role": "user", "content": f"case {i}"}], "expected_output": "ok"},
        )
        assert created.status_code == 201, created.text
    evaluation = client.post(
        "/api/v1/evals",
        json={
            "name": "sync",
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            "max_concurrency": 2,
        },
    )
    assert evaluation.status_code == 201, evaluation.text
    return evaluation.json()  # type: ignore[no-any-return]


def test_a_blocked_sync_start_holds_no_other_request_and_its_cancel_stops_it(
    front: str,
) -> None:
    _, key = project_over_http(front, "front")
    agent = GatedAgent()
    with serve(agent) as server, _client(front, key) as client:
        evaluation = _eval_over(client, server.url, items=10)
        runs_path = f"/api/v1/evals/{evaluation['id']}/runs"
        answer: dict[str, httpx.Response] = {}

        def start_sync() -> None:
            with _client(front, key) as own:
                answer["start"] = own.post(runs_path, json={"wait": True}, timeout=60)

        starter = threading.Thread(target=start_sync, daemon=True)
        starter.start()
        agent.wait_for_waiting(1)
        # While the sync start waits inside the agent, the front answers everything else.
        assert client.get("/health").status_code == 200
        (run,) = client.get(runs_path).json()["data"]
        assert run["status"] == "running"
        cancelled = client.post(f"{runs_path}/{run['id']}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        calls_at_cancel = agent.started
        agent.open()
        starter.join(60)
    assert not starter.is_alive()
    assert answer["start"].json()["status"] == "canceled", answer["start"].text
    assert agent.started <= calls_at_cancel + 2  # at most the run's concurrency after it


def test_concurrent_requests_each_see_their_own_request(front: str) -> None:
    """Forty requests at once for forty different datasets: each answer is its own."""
    _, key = project_over_http(front, "many")
    with _client(front, key) as client:
        ids = [
            client.post("/api/v1/datasets", json={"name": f"set-{i}"}).json()["id"]
            for i in range(40)
        ]

        def read(dataset_id: str) -> str:
            got = client.get(f"/api/v1/datasets/{dataset_id}")
            assert got.status_code == 200, got.text
            return str(got.json()["id"])

        with ThreadPoolExecutor(max_workers=20) as pool:
            assert list(pool.map(read, ids * 3)) == ids * 3
