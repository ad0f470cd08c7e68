"""An embedded local runtime with one project and its key, for the CLI's end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.transport import PawlClient


@contextmanager
def runtime_with_project(state_dir: Path, project_name: str) -> Iterator[tuple[LocalRuntime, str]]:
    """A :class:`LocalRuntime` on a free port (no snapshots, no schedules) holding a project
    named ``project_name``; yields the runtime and a project key (named ``ci``) for it."""
    config = RuntimeConfig(port=0, state_dir=state_dir, snapshot_interval_s=0, run_schedules=False)
    with LocalRuntime(config) as runtime:
        with PawlClient(runtime.url, runtime.admin_key) as admin:
            project = admin.create_project(project_name)
            key = admin.create_api_key(project["id"], "ci")["key"]
        yield runtime, key
