"""The app behind the local HTTP front, on a thread, over an in-process moto.

Tests that need real HTTP (raw sockets, schemathesis, the front's own refusals) without a
whole local runtime use :func:`app_over_http`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from moto import mock_aws

from pawl.local.gateway import GatewayServer
from pawl.local.quiesce import Quiesce
from tests.conftest import ADMIN_KEY, reset_process_state


@contextmanager
def moto_with_resources() -> Iterator[None]:
    """moto in-process with every pawl table, queue and bucket created."""
    with mock_aws():
        reset_process_state()
        from tests.support.moto_resources import ensure_resources

        ensure_resources()
        yield
    reset_process_state()


@contextmanager
def serving(app: object) -> Iterator[GatewayServer]:
    """``app`` behind a :class:`GatewayServer` on 127.0.0.1 and a free port."""
    server = GatewayServer(("127.0.0.1", 0), app, quiesce=Quiesce())  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextmanager
def app_over_http() -> Iterator[GatewayServer]:
    """pawl's app over HTTP, on a fresh moto with every resource created."""
    with moto_with_resources():
        from app import app

        with serving(app) as server:
            yield server


def project_over_http(url: str, name: str) -> tuple[str, str]:
    """A new project and a key for it, made with the admin key through the app at ``url``:
    ``(project id, project key)``."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    project = httpx.post(f"{url}/api/v1/projects", json={"name": name}, headers=admin)
    key = httpx.post(
        f"{url}/api/v1/api-keys",
        json={"project_id": project.json()["id"], "name": name},
        headers=admin,
    )
    return project.json()["id"], key.json()["key"]
