"""The local runtime's server secret: one per state dir, private, never in the snapshot."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx
import pytest

from chalicelib import wiring
from chalicelib.settings import get_settings
from chalicelib.store import webhooks as webhook_store
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.local.server_secret import SECRET_FILE, load_or_create

WEBHOOK_SECRET = "whsec_kept-across-restarts-0123456789"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_created_once_private_and_read_back(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    first = load_or_create(state_dir)
    path = state_dir / SECRET_FILE
    assert len(first) >= 32 and _mode(path) == 0o600
    assert load_or_create(state_dir) == first
    os.chmod(path, 0o644)
    assert load_or_create(state_dir) == first and _mode(path) == 0o600
    assert sorted(p.name for p in state_dir.iterdir()) == [SECRET_FILE]  # no temp file left
    assert load_or_create(tmp_path / "other") != first


def _runtime(state_dir: Path) -> LocalRuntime:
    config = RuntimeConfig(port=0, state_dir=state_dir, snapshot_interval_s=0, run_schedules=False)
    return LocalRuntime(config)


@pytest.mark.slow
def test_runtime_keeps_its_secret_out_of_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAWL_SERVER_SECRET")
    monkeypatch.delenv("PAWL_PYTHON_AGENT_MODULES")
    wiring.reload_settings()
    with _runtime(tmp_path) as runtime:
        server_secret = (tmp_path / SECRET_FILE).read_text().strip()
        assert get_settings().server_secret == server_secret
        assert get_settings().python_agent_modules == ()  # python agents are off by default
        headers = {"Authorization": f"Bearer {runtime.admin_key}"}
        with httpx.Client(base_url=runtime.url, headers=headers, timeout=30) as client:
            project = client.post("/api/v1/projects", json={"name": "p"}).json()
            body = {
                "project_id": project["id"],
                "url": "https://hooks.invalid/x",
                "events": ["eval_run.*"],
                "secret": WEBHOOK_SECRET,
            }
            hook = client.post("/api/v1/webhooks", json=body).json()
    assert os.environ.get("PAWL_SERVER_SECRET") is None  # the runtime put back the env
    document = (tmp_path / "snapshot.json").read_text()
    assert hook["id"] in document
    assert WEBHOOK_SECRET not in document and server_secret not in document
    assert _mode(tmp_path / SECRET_FILE) == 0o600

    # A restart on the same state dir reads the same secret, so it opens what it sealed.
    with _runtime(tmp_path):
        target = webhook_store.get_target(hook["id"])
        assert target is not None and target.secret == WEBHOOK_SECRET
