"""schemathesis against the published ``/api/v1/openapi.json`` on a real HTTP front.

The app runs behind the local API Gateway stand-in over moto; every operation of the
document gets a bounded, derandomized set of generated requests (positive and negative),
authenticated with a real project key (the admin key for admin-only operations). Any 5xx,
any response that breaks the documented schema, status code or content type fails.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from moto import mock_aws
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from app import app
from chalicelib.api.openapi import build_document
from chalicelib.local.gateway import GatewayServer
from chalicelib.local.quiesce import Quiesce
from tests.conftest import ADMIN_KEY, reset_process_state

#: Examples per operation and generation mode: ~50 operations stay well under a minute.
MAX_EXAMPLES = 6
ADMIN_ONLY = {("POST", "/api/v1/projects"), ("POST", "/api/v1/api-keys")}
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]
#: Requests sent per operation (reported at the end of the module; see docs/security.md).
SENT: dict[str, int] = {}

schema = schemathesis.openapi.from_dict(build_document())
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)


@pytest.fixture(scope="module")
def live() -> Iterator[dict[str, str]]:
    """The app over HTTP, and a project key for it."""
    with mock_aws():
        reset_process_state()
        from chalicelib.bootstrap import ensure_resources

        ensure_resources()
        server = GatewayServer(("127.0.0.1", 0), app, quiesce=Quiesce())
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        project = httpx.post(f"{server.url}/api/v1/projects", json={"name": "fuzz"}, headers=admin)
        key = httpx.post(
            f"{server.url}/api/v1/api-keys",
            json={"project_id": project.json()["id"], "name": "fuzz"},
            headers=admin,
        )
        yield {"url": server.url, "key": key.json()["key"]}
        print(f"\nschemathesis: {len(SENT)} operations, {sum(SENT.values())} requests")
        server.shutdown()
        server.server_close()
        thread.join(10)
    reset_process_state()


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case: Any, live: dict[str, str]) -> None:
    admin = (case.method.upper(), case.path) in ADMIN_ONLY
    token = ADMIN_KEY if admin else live["key"]
    SENT[case.operation.label] = SENT.get(case.operation.label, 0) + 1
    case.call_and_validate(
        base_url=live["url"], headers={"Authorization": f"Bearer {token}"}, checks=CHECKS
    )
