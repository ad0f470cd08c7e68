"""`pawl serve` as a real process: HTTP edge behaviour, state across a restart, a 1,000-item run."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow

ADMIN_KEY = "e2e-admin-key"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parents[2]


class ServeProcess:
    """One `python -m pawl.cli.main serve` child with its output read on a thread."""

    def __init__(
        self,
        state_dir: Path,
        cwd: Path,
        allow_private_urls: str = "",
        extra_env: dict[str, str] | None = None,
        new_session: bool = False,
        admin_key: str | None = ADMIN_KEY,
        port: int = 0,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        env = {
            k: v for k, v in os.environ.items() if k not in {"AWS_ENDPOINT_URL", "PAWL_ADMIN_KEY"}
        }
        env["PYTHONUNBUFFERED"] = "1"
        if admin_key is not None:  # None: the documented default key
            env["PAWL_ADMIN_KEY"] = admin_key
        # What the operator lets outbound calls reach: the agent servers the test names.
        env["PAWL_ALLOW_PRIVATE_URLS"] = allow_private_urls
        env.update(extra_env or {})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "pawl.cli.main", "serve", "--port", str(port)]
        command += ["--state-dir", str(state_dir), "--no-schedules", *extra_args]
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=new_session,  # its own process group: kill -9 takes it all
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for_url()
        self._wait_for_health()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            self.lines.put(line)

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                assert self.process.poll() is None, "".join(self.output)
                continue
            if line.startswith("pawl is serving on "):
                return line.split()[-1]
        raise AssertionError("pawl serve did not start:\n" + "".join(self.output))

    def _wait_for_health(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError("/health never answered:\n" + "".join(self.output))

    def stop(self, sig: signal.Signals, times: int = 1) -> int:
        for _ in range(times):
            if self.process.poll() is None:
                self.process.send_signal(sig)
        return self.process.wait(timeout=STOP_TIMEOUT_S)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[ServeProcess]]:
    """Processes a test starts; any still running at the end are killed."""
    processes: list[ServeProcess] = []
    yield processes
    for process in processes:
        process.kill()


def _client(url: str, key: str = ADMIN_KEY) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _error_code(response: httpx.Response) -> Any:
    return response.json()["error"]["code"]


def test_serve_edge_behaviour_and_state_across_a_restart(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    state_dir = tmp_path / "state"
    first = ServeProcess(state_dir, tmp_path)
    started.append(first)
    banner = "".join(first.output)
    assert ADMIN_KEY in banner and str(state_dir) in banner
    assert f"{first.url}/console/" in banner
    console = httpx.get(f"{first.url}/console/", timeout=30)  # the front, trailing slash
    assert console.status_code == 200 and 'action="/console/sign-in"' in console.text
    assert "frame-ancestors 'none'" in console.headers["content-security-policy"]

    with _client(first.url) as admin:
        project = admin.post("/api/v1/projects", json={"name": "kept"})
        assert project.status_code == 201, project.text
        project_id = project.json()["id"]
        key = admin.post("/api/v1/api-keys", json={"project_id": project_id, "name": "ci"})
        assert key.status_code == 201, key.text
        secret, key_id = key.json()["key"], key.json()["id"]
        dataset = admin.post("/api/v1/datasets", json={"project_id": project_id, "name": "d"})
        assert dataset.status_code == 201, dataset.text
        for question in ("first?", "second?"):
            item = {"input": [{"role": "user", "content": question}]}
            added = admin.post(f"/api/v1/datasets/{dataset.json()['id']}/items", json=item)
            assert added.status_code == 201, added.text

        missing = admin.get("/api/v1/not-a-route")
        assert missing.status_code == 404 and _error_code(missing) == "RESOURCE_NOT_FOUND"
        wrong = admin.put("/api/v1/projects", json={})
        assert wrong.status_code == 405 and _error_code(wrong) == "METHOD_NOT_ALLOWED"
        huge = admin.post(
            "/api/v1/projects",
            content=b"x" * (1024 * 1024 + 1),
            headers={"Content-Type": "application/json"},
        )
        assert huge.status_code == 413 and _error_code(huge) == "PAYLOAD_TOO_LARGE"

    # Twice, as a forwarding wrapper would: still one clean stop with its final snapshot.
    assert first.stop(signal.SIGTERM, times=2) == 0, "".join(first.output)
    assert (state_dir / "snapshot.json").exists()
    # The engine's INFO lines are in the state dir's log, not between the banner's lines.
    assert f"log         {state_dir / 'pawl.log'}" in banner
    assert " INFO " not in "".join(first.output)
    assert "INFO pawl.local: no snapshot in" in (state_dir / "pawl.log").read_text()

    second = ServeProcess(state_dir, tmp_path)
    started.append(second)
    with _client(second.url) as admin:
        found = admin.get(f"/api/v1/projects/{project_id}")
        assert found.status_code == 200, found.text
        assert found.json()["name"] == "kept"
    with _client(second.url, secret) as scoped:
        own = scoped.get("/api/v1/projects")
        assert own.status_code == 200, own.text
        assert [p["id"] for p in own.json()["data"]] == [project_id]
        assert scoped.get(f"/api/v1/api-keys/{key_id}").status_code == 200
    with _client(second.url, "pawl.not-a-real-key") as stranger:
        assert stranger.get("/api/v1/projects").status_code == 401
    # What was restored, in the words a user created it in (not DynamoDB rows).
    restored = "1 project, 0 agents, 1 dataset, 2 dataset items, 0 evals, 0 runs"
    assert f"restored    {restored}" in "".join(second.output)
    assert second.stop(signal.SIGINT) == 0, "".join(second.output)


RUN_ITEMS = 1000
#: A bound on the whole run, not a speed assertion (it takes ~10-20 s here).
RUN_DEADLINE_S = 600.0


def _ok(response: httpx.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def test_a_thousand_item_queued_run_completes_with_every_count_right(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    from tests.support.servers import Reply, serve

    def echo(request: Any) -> Reply:
        return Reply(body={"output": request.json()["input"][-1]["content"]})

    with serve(echo) as agent_server:
        allowed = f"loopback:{agent_server.port}"
        server = ServeProcess(tmp_path / "state", tmp_path, allow_private_urls=allowed)
        started.append(server)
        with _client(server.url) as api:
            texts = [f"case {i}: " + ("ok" if i % 10 else "no") for i in range(RUN_ITEMS)]
            _, runs_path = http_agent_eval(api, "thousand", agent_server.url, texts)
            run = _ok(api.post(runs_path, json={}))
            assert run["status"] == "queued"
            done = _wait_terminal(api, f"{runs_path}/{run['id']}")
            results = _all_results(api, f"{runs_path}/{run['id']}/results")
        assert server.stop(signal.SIGTERM) == 0, "".join(server.output)

    assert done["status"] == "completed", done
    assert (done["item_count"], done["completed_count"], done["errored_count"]) == (1000, 1000, 0)
    assert done["aggregate_scores"]["pass_rate"] == pytest.approx(0.9)
    assert len(results) == RUN_ITEMS
    assert len({r["dataset_item_id"] for r in results}) == RUN_ITEMS
    assert sum(1 for r in results if r["passed"]) == 900
    assert all(r["error"] is None and r["generation_id"] for r in results)
    # Every item reached the agent, and only the run's items did.
    asked = {r.json()["dataset_item_id"] for r in agent_server.requests}
    assert asked == {r["dataset_item_id"] for r in results}


def http_agent_eval(
    api: httpx.Client, name: str, agent_url: str, texts: list[str]
) -> tuple[str, str]:
    """A project, an http agent at ``agent_url``, a dataset of one item per text and an eval
    scoring ``contains "ok"``, all named ``name``: (project id, the eval's runs path)."""
    project = _ok(api.post("/api/v1/projects", json={"name": name}))["id"]
    agent_body = {"project_id": project, "name": "echo", "type": "http"}
    agent = _ok(api.post("/api/v1/agents", json={**agent_body, "config": {"url": agent_url}}))
    dataset = _ok(api.post("/api/v1/datasets", json={"project_id": project, "name": "d"}))
    for text in texts:
        item = {"input": [{"role": "user", "content": text}]}
        _ok(api.post(f"/api/v1/datasets/{dataset['id']}/items", json=item))
    evaluation = _ok(
        api.post(
            "/api/v1/evals",
            json={
                "project_id": project,
                "name": name,
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "contains", "value": "ok"}],
            },
        )
    )
    return project, f"/api/v1/evals/{evaluation['id']}/runs"


def _wait_terminal(api: httpx.Client, run_path: str) -> Any:
    deadline = time.monotonic() + RUN_DEADLINE_S
    while time.monotonic() < deadline:
        run = _ok(api.get(run_path), 200)
        if run["status"] not in {"queued", "running"}:
            return run
        time.sleep(0.5)
    raise AssertionError(f"the run did not finish within {RUN_DEADLINE_S}s: {run}")


def _all_results(api: httpx.Client, results_path: str) -> list[Any]:
    found: list[Any] = []
    cursor = None
    while True:
        query = "?limit=100" + (f"&cursor={cursor}" if cursor else "")
        page = _ok(api.get(results_path + query), 200)
        found += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found
