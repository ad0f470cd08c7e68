"""The AWS stand-in killed (SIGKILL) under a running :class:`LocalRuntime`: it is restarted
from the snapshot and the journal with every acknowledged write, in-flight work finishes
and new writes work; past its restart budget the runtime answers 503 on every route and
reports one line. Real stand-in child process, real HTTP front, real SQS pollers."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pawl.local.runtime import LocalRuntime, RuntimeConfig
from tests.support import agents

pytestmark = pytest.mark.slow

DEADLINE_S = 90.0
BLOCKED_ITEMS = 3
ECHO_ITEMS = 3


def _ok(response: httpx.Response, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _kill_standin(runtime: LocalRuntime) -> int:
    assert runtime.standin is not None and runtime.standin.pid is not None
    pid = runtime.standin.pid
    os.kill(pid, signal.SIGKILL)
    return pid


def _runtime(tmp_path: Path, restarts: int) -> LocalRuntime:
    config = RuntimeConfig(
        port=0,
        state_dir=tmp_path / "state",
        snapshot_interval_s=0,
        run_schedules=False,
        standin_restarts=restarts,
    )
    return LocalRuntime(config)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[LocalRuntime]:
    agents.reset()
    with _runtime(tmp_path, restarts=3) as running:
        yield running
    agents.RELEASE.set()


def _eval(http: httpx.Client, project_id: str) -> tuple[str, list[str]]:
    """An eval whose first items block in the agent until released; (runs path, item ids)."""
    agent = _ok(
        http.post(
            "/api/v1/agents",
            json={
                "project_id": project_id,
                "name": "scripted",
                "type": "python",
                "config": {"callable": "tests.support.agents:scripted"},
            },
        )
    )
    dataset = _ok(http.post("/api/v1/datasets", json={"project_id": project_id, "name": "d"}))
    texts = ["block"] * BLOCKED_ITEMS + [f"echo:{n}" for n in range(ECHO_ITEMS)]
    item_ids = [
        _ok(
            http.post(
                f"/api/v1/datasets/{dataset['id']}/items",
                json={"input": [{"role": "user", "content": text}]},
            )
        )["id"]
        for text in texts
    ]
    evaluation = _ok(
        http.post(
            "/api/v1/evals",
            json={
                "project_id": project_id,
                "name": "through a death",
                "agent_id": agent["id"],
                "dataset_id": dataset["id"],
                "scorers": [{"type": "contains", "value": "e"}],
            },
        )
    )
    return f"/api/v1/evals/{evaluation['id']}/runs", item_ids


def test_a_killed_standin_comes_back_with_every_acknowledged_write(
    runtime: LocalRuntime,
) -> None:
    admin = {"Authorization": f"Bearer {runtime.admin_key}"}
    with httpx.Client(base_url=runtime.url, headers=admin, timeout=60) as http:
        project = _ok(http.post("/api/v1/projects", json={"name": "before"}))["id"]
        datasets = [
            _ok(http.post("/api/v1/datasets", json={"project_id": project, "name": f"s{n}"}))["id"]
            for n in range(3)
        ]
        assert runtime.snapshot_now()  # some writes in the snapshot, the rest in the journal
        datasets += [
            _ok(http.post("/api/v1/datasets", json={"project_id": project, "name": f"j{n}"}))["id"]
            for n in range(3)
        ]
        runs_path, item_ids = _eval(http, project)
        run = _ok(http.post(runs_path, json={}))
        assert agents.ENTERED.acquire(timeout=DEADLINE_S)  # an agent call is in flight
        old_pid = _kill_standin(runtime)

        assert runtime.supervisor is not None
        _wait_for(lambda: runtime.supervisor.restarts == 1, "the stand-in's restart")
        assert runtime.standin is not None and runtime.standin.pid != old_pid
        assert _ok(http.get("/health"), 200) == {"status": "ok"}
        assert runtime.unavailable is None and runtime.failure is None

        # Every acknowledged write is there: snapshot and journal.
        for dataset_id in datasets:
            _ok(http.get(f"/api/v1/datasets/{dataset_id}"), 200)
        listed = _ok(http.get(f"/api/v1/datasets?project_id={project}&limit=100"), 200)
        assert len(listed["data"]) == len(datasets) + 1  # and the eval's
        # New writes work, and the run in flight finishes with one result per item.
        _ok(http.post("/api/v1/datasets", json={"project_id": project, "name": "after"}))
        agents.RELEASE.set()

        def finished() -> Any:
            found = _ok(http.get(f"{runs_path}/{run['id']}"), 200)
            return found if found["status"] not in {"queued", "running"} else None

        done = _wait_for(finished, "the run that was in flight")
        assert done["status"] == "completed", done
        results = _ok(http.get(f"{runs_path}/{run['id']}/results?limit=100"), 200)["data"]
        assert sorted(r["dataset_item_id"] for r in results) == sorted(item_ids)
        assert done["completed_count"] + done["errored_count"] == len(item_ids)
        status = _ok(http.get("/_local/status"), 200)
        assert status["stand_in_restarts"] == 1 and status["unavailable"] is None


def test_past_its_restart_budget_every_route_is_503_with_one_reason(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runtime = _runtime(tmp_path, restarts=0).start()
    try:
        admin = {"Authorization": f"Bearer {runtime.admin_key}"}
        with httpx.Client(base_url=runtime.url, headers=admin, timeout=60) as http:
            assert _ok(http.get("/health"), 200) == {"status": "ok"}
            _kill_standin(runtime)
            assert runtime.supervisor is not None
            assert runtime.supervisor.gave_up.wait(DEADLINE_S)
            for path in ("/health", "/api/v1/projects", "/v2/runs"):
                refused = http.get(path)
                assert refused.status_code == 503, (path, refused.text)
            body = http.get("/health").json()
            assert body["error"]["code"] == "UNAVAILABLE"
            failure = runtime.failure
            assert failure is not None and "\n" not in failure
            assert "stand-in" in failure and "giving up" in failure
            assert body["error"]["message"] == failure
    finally:
        runtime.stop()  # quiet: no snapshot attempt against the dead child, no BrokenPipe
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_demo_keep_running_exits_1_with_one_line_when_the_runtime_gives_up(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import threading

    from pawl.cli import main as cli

    runtime = _runtime(tmp_path, restarts=0).start()
    stop = threading.Event()  # never set: only the runtime giving up may end the wait
    codes: list[int] = []
    try:
        serving = threading.Thread(target=lambda: codes.append(cli.keep_serving(runtime, stop)))
        serving.start()
        _kill_standin(runtime)
        serving.join(DEADLINE_S)
        stop.set()  # were it still waiting (the defect), let the thread end
        serving.join(DEADLINE_S)
    finally:
        runtime.stop()
    err = capfd.readouterr().err
    assert codes == [1], err
    said = [line for line in err.splitlines() if line.startswith("pawl demo: ")]
    assert len(said) == 1 and said[0] == f"pawl demo: {runtime.failure}", err
    assert "stand-in" in said[0] and "giving up" in said[0]
    assert "Traceback" not in err
