"""`pawl serve` whose AWS stand-in is killed (SIGKILL): it restarts the stand-in with every
acknowledged write; in a crash loop (past ``--standin-restarts``) it exits 1 with one line
and no traceback, and the next start still has every acknowledged write."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_serve import ServeProcess, _client, _ok

pytestmark = pytest.mark.slow

DEADLINE_S = 90.0


@pytest.fixture
def started() -> Iterator[list[ServeProcess]]:
    """Processes the test starts; any still running at the end are killed."""
    processes: list[ServeProcess] = []
    yield processes
    for process in processes:
        process.kill()


def _wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_killed_standin_is_restarted_then_a_crash_loop_exits_with_one_line(
    tmp_path: Path, started: list[ServeProcess]
) -> None:
    state_dir = tmp_path / "state"
    serve = ServeProcess(state_dir, tmp_path, extra_args=("--standin-restarts", "1"))
    started.append(serve)
    with _client(serve.url) as api:
        project = _ok(api.post("/api/v1/projects", json={"name": "kept"}))["id"]
        acknowledged = [
            _ok(api.post("/api/v1/datasets", json={"project_id": project, "name": f"b{n}"}))["id"]
            for n in range(5)
        ]

        def status() -> Any:
            return _ok(api.get("/_local/status"), 200)

        first = status()["stand_in_pid"]
        os.kill(first, signal.SIGKILL)
        _wait_for(lambda: status()["stand_in_restarts"] == 1, "the stand-in's restart")
        assert status()["stand_in_pid"] != first
        assert _ok(api.get("/health"), 200) == {"status": "ok"}
        for dataset_id in acknowledged:
            _ok(api.get(f"/api/v1/datasets/{dataset_id}"), 200)
        after = {"project_id": project, "name": "after"}
        acknowledged.append(_ok(api.post("/api/v1/datasets", json=after))["id"])

        os.kill(status()["stand_in_pid"], signal.SIGKILL)  # a second death within a minute
        code = serve.process.wait(timeout=DEADLINE_S)
    time.sleep(0.5)  # the output reader's last lines
    output = "".join(serve.output)
    assert code == 1, output
    assert "Traceback" not in output, output
    said = [line for line in output.splitlines() if line.startswith("pawl serve: ")]
    assert len(said) == 1 and "stand-in" in said[0] and "giving up" in said[0], output

    again = ServeProcess(state_dir, tmp_path)
    started.append(again)
    with _client(again.url) as api:
        for dataset_id in acknowledged:
            _ok(api.get(f"/api/v1/datasets/{dataset_id}"), 200)
    assert again.stop(signal.SIGTERM) == 0
