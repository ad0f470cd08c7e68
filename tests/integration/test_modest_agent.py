"""Agent calls that survive a modest server: connections dropped before any answer are
retried within the item's budget, a run slow-starts its connections, and each result says
how many attempts its agent call took.

Every agent here is a real server on 127.0.0.1: a raw TCP server that drops the first N
connections (``tests/support/raw_servers.py``), and Python's ``ThreadingHTTPServer`` with
its listen backlog of 5, the server many prototype agents run on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.store.models import ResultModel
from tests.support.drain import drain_queues
from tests.support.raw_servers import dropping
from tests.support.runs import all_results, assert_counters_match_rows
from tests.support.servers import allow_loopback_port


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.01")
    monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "3")
    wiring.reload_settings()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


def _eval(
    api: Any, project: Any, url: str, items: int, timeout_s: float = 30.0, **fields: Any
) -> dict[str, Any]:
    agent = api.post(
        "/api/v1/agents",
        {
            "project_id": project["id"],
            "name": "modest",
            "type": "http",
            "config": {"url": url, "timeout_s": timeout_s},
        },
    )
    assert agent.status == 201, agent
    dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "modest"}).json
    lines = "\n".join(
        json.dumps({"input": [{"role": "user", "content": f"case {i}"}]}) for i in range(items)
    )
    for start in range(0, items, 99):
        chunk = "\n".join(lines.split("\n")[start : start + 99]).encode()
        imported = api.post(f"/api/v1/datasets/{dataset['id']}/items:import", raw=chunk)
        assert imported.status < 300, imported
    evaluation = api.post(
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": "modest",
            "agent_id": agent.json["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            **fields,
        },
    )
    assert evaluation.status == 201, evaluation
    return dict(evaluation.json)


def _results(api: Any, evaluation: dict[str, Any], run_id: str) -> list[dict[str, Any]]:
    page = api.get(f"/api/v1/evals/{evaluation['id']}/runs/{run_id}/results?limit=100")
    assert page.status == 200, page
    return list(page.json["data"])


@pytest.mark.parametrize("how", ["reset", "close"])
def test_an_item_whose_first_connections_are_dropped_succeeds_and_counts_them(
    api: Any, project: Any, how: str
) -> None:
    with dropping(2, how) as server:  # type: ignore[arg-type]
        evaluation = _eval(api, project, server.url, items=1)
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}).json
    assert run["status"] == "completed" and run["completed_count"] == 1, run
    [result] = _results(api, evaluation, run["id"])
    assert result["error"] is None and result["passed"] is True
    assert result["attempts"] == 3  # two dropped, then answered
    assert (server.accepted, server.answered) == (3, 1)
    # Recorded on the row, not only computed for the answer.
    row = ResultModel.get(run["id"], result["dataset_item_id"] + "#01")
    assert row.attempts == 3


def test_a_model_agent_s_dropped_completion_is_retried_and_counted(api: Any, project: Any) -> None:
    completion = {
        "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    with dropping(1, "close", answer=json.dumps(completion).encode()) as server:
        agent = api.post(
            "/api/v1/agents",
            {
                "project_id": project["id"],
                "name": "model",
                "type": "model",
                "config": {"base_url": server.url, "model": "m"},
            },
        )
        assert agent.status == 201, agent
        evaluation = _eval(api, project, server.url, items=1)
        updated = api.put(f"/api/v1/evals/{evaluation['id']}", {"agent_id": agent.json["id"]})
        assert updated.status == 200, updated
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}).json
    [result] = _results(api, evaluation, run["id"])
    assert result["error"] is None and result["attempts"] == 2, result
    assert (server.accepted, server.answered) == (2, 1)


def test_an_item_whose_agent_always_drops_errors_after_its_budget_with_the_attempts(
    api: Any, project: Any
) -> None:
    with dropping(None, "close") as server:
        evaluation = _eval(api, project, server.url, items=1, timeout_s=0.6)
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}).json
    [result] = _results(api, evaluation, run["id"])
    assert result["error"]["code"] == "GENERATION_FAILED", result
    assert "closed before any answer" in result["error"]["message"]
    # Congestion is retried within the budget, past PAWL_HTTP_MAX_ATTEMPTS, and each one
    # the server saw is counted.
    assert result["attempts"] == server.accepted > 3
    assert run["errored_count"] == 1
    assert_counters_match_rows(run)


def test_a_dead_agent_spends_only_the_run_s_retry_quota(api: Any, project: Any) -> None:
    """Against an agent that never answers, the run does not retry every item to its
    budget: retries beyond the quota (two per slot: 10 at max_concurrency 5) are not made."""
    with dropping(None, "close") as server:
        evaluation = _eval(api, project, server.url, items=20, max_concurrency=5)
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True}).json
    results = _results(api, evaluation, run["id"])
    assert run["errored_count"] == 20 and len(results) == 20, run
    attempts = [r["attempts"] for r in results]
    assert sum(attempts) == server.accepted
    assert sum(attempts) - len(results) == 10  # the quota, and not one retry more


# --- the modest server -----------------------------------------------------------------------


class _Answer(BaseHTTPRequestHandler):
    """http.server as it comes: HTTP/1.0, a new connection per call."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"output": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.calls += 1  # type: ignore[attr-defined]

    def log_message(self, *args: Any) -> None:
        return None


class ModestServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with socketserver's backlog of 5 (stated, not changed).

    Its accept loop stalls once, at its first connection, as a loaded machine's scheduler
    stalls it: connections opened meanwhile queue in the backlog of 5 and the rest are
    reset, which is what a run opening 40 connections at once meets.
    """

    request_queue_size = 5
    daemon_threads = True
    STALL_S = 0.5

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Answer)
        self.calls = 0
        self.lock = threading.Lock()
        self._stalled = False

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if not self._stalled:
            self._stalled = True
            time.sleep(self.STALL_S)  # the server's behaviour, not a measurement
        return True


@pytest.fixture
def modest_agent() -> Iterator[ModestServer]:
    server = ModestServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        with allow_loopback_port(server.server_address[1]):
            yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_queued_run_of_200_at_concurrency_40_against_a_backlog_of_5_loses_nothing(
    api: Any, project: Any, app: Any, modest_agent: ModestServer
) -> None:
    url = f"http://127.0.0.1:{modest_agent.server_address[1]}/"
    evaluation = _eval(api, project, url, items=200, max_concurrency=40)
    run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {}).json
    drain_queues(app)
    finished = api.get(f"/api/v1/evals/{evaluation['id']}/runs/{run['id']}").json
    results = all_results(api, _Suite(evaluation), run["id"])
    errors = [r["error"] for r in results if r["error"]]
    assert finished["status"] == "completed", (finished, errors[:3])
    assert (finished["completed_count"], finished["errored_count"]) == (200, 0), errors[:3]
    assert modest_agent.calls == 200  # each item answered once: no answered call repeated
    assert all(r["attempts"] >= 1 for r in results)


class _Suite:
    """What ``all_results`` needs of a suite: the run paths of an eval."""

    def __init__(self, evaluation: dict[str, Any]) -> None:
        self.evaluation = evaluation

    def run_path(self, run_id: str) -> str:
        return f"/api/v1/evals/{self.evaluation['id']}/runs/{run_id}"


def test_a_second_run_resuming_its_agent_s_window_loses_nothing_either(
    api: Any, project: Any, app: Any, modest_agent: ModestServer
) -> None:
    """The second run of the eval starts at the window the first one reached (40 calls at
    once, not 4: ``AimdWindow.resuming``), against the same accept loop stalled again: the
    connections the backlog drops are retried within the run's quota, and the congestion
    halves the window as in a first run."""
    url = f"http://127.0.0.1:{modest_agent.server_address[1]}/"
    evaluation = _eval(api, project, url, items=120, max_concurrency=40)
    for _ in range(2):
        modest_agent._stalled = False  # the accept loop stalls at this run's first call
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {}).json
        drain_queues(app)
        finished = api.get(f"/api/v1/evals/{evaluation['id']}/runs/{run['id']}").json
        results = all_results(api, _Suite(evaluation), run["id"])  # type: ignore[arg-type]
        errors = [r["error"] for r in results if r["error"]]
        assert (finished["completed_count"], finished["errored_count"]) == (120, 0), errors[:3]
    assert modest_agent.calls == 240  # no answered call repeated in either run
