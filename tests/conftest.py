"""Shared fixtures: an in-process AWS stand-in (moto) and an API client per test.

Everything runs against real parts: moto for AWS, chalice.test.Client for the app.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto import mock_aws

from chalicelib import wiring
from pawl.local import moto_patches

# The same TransactWriteItems the local runtime's stand-in uses (see moto_patches).
moto_patches.apply()

# Fixtures shared by test modules in several folders (trigger tests: fake_clock, suite).
pytest_plugins = ["tests.support.triggers"]

ADMIN_KEY = "test-admin-key"
SERVER_SECRET = "test-server-secret-0123456789abcdefghijklmnop"

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ["PAWL_ADMIN_KEY"] = ADMIN_KEY
# chalice.test.Client applies the dev stage's environment (.chalice/config.json) during each
# request; use the same table prefix so settings read in or out of a request agree.
os.environ["PAWL_TABLE_PREFIX"] = "pawl-dev"
# The modules whose callables the tests' python agents name (nothing else may run in-process).
os.environ["PAWL_PYTHON_AGENT_MODULES"] = ",".join(
    [
        "tests.support.agents",
        "tests.integration.test_agent_adapters",
        "tests.integration.test_structured_output",
        "pawl.demo.agent",
    ]
)
# Keys for secrets at rest and API key hashes derive from it (a deployment must set one).
os.environ["PAWL_SERVER_SECRET"] = SERVER_SECRET
os.environ.pop("PAWL_KMS_KEY_ID", None)
# Public addresses only, plus port 9 (discard): the placeholder URL that config-only tests
# give agents, tools and webhooks and never call. A test server adds its own port for its
# lifetime (tests.support.servers.serve), as an operator names the ports pawl may call.
os.environ["PAWL_ALLOW_PRIVATE_URLS"] = PLACEHOLDER_ALLOW_LIST = "loopback:9"
# moto in-process is not safe under concurrent writes from several threads (the local
# runtime's stand-in serializes them in its own process): see store.base.serialized_writes.
os.environ["PAWL_SERIALIZE_TRANSACTIONS"] = "1"
# The tests are an entry point: put the process together as app.py and `pawl serve` do.
wiring.build()


def reset_process_state() -> None:
    """Forget every per-process cache through the composition root (the env changed).

    botocore clients (and PynamoDB's shared connection) are cached per endpoint and keep
    working across mock_aws contexts; re-creating them costs ~0.3 s each per test.
    """
    wiring.reset(clients=False)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in-process with every pawl table, queue and bucket created."""
    with mock_aws():
        reset_process_state()
        # bootstrap.ensure_resources, from a pickle after this process's first test.
        from tests.support.moto_resources import ensure_resources

        ensure_resources()
        yield
    reset_process_state()


class Api:
    """A thin JSON wrapper over chalice.test.Client that sends a bearer key."""

    def __init__(self, client: Any, key: str | None = ADMIN_KEY) -> None:
        self.client = client
        self.key = key

    def as_key(self, key: str | None) -> Api:
        return Api(self.client, key)

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        headers = {"Content-Type": "application/json"}
        if self.key is not None:
            headers["Authorization"] = f"Bearer {self.key}"
        payload = (
            raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        )
        response = getattr(self.client.http, method.lower())(path, headers=headers, body=payload)
        return ApiResponse(response.status_code, response.body)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        return self.request("POST", path, body if body is not None else {}, raw)

    def put(self, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        return self.request("PUT", path, body if body is not None else {}, raw)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


class ApiResponse:
    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.raw = body
        self.json: Any = json.loads(body) if body else None

    @property
    def code(self) -> str | None:
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"]["code"]
        return None

    def __repr__(self) -> str:
        return f"<ApiResponse {self.status} {self.raw[:300]!r}>"


@pytest.fixture
def api(aws_env: None) -> Iterator[Api]:
    from chalice.test import Client

    from app import app

    with Client(app) as client:
        yield Api(client)


@pytest.fixture
def project(api: Api) -> dict[str, Any]:
    response = api.post("/api/v1/projects", {"name": "acme"})
    assert response.status == 201, response
    return response.json


@pytest.fixture
def project_key(api: Api, project: dict[str, Any]) -> str:
    response = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "ci"})
    assert response.status == 201, response
    return response.json["key"]


@pytest.fixture
def plugins(api: Api) -> Iterator[Any]:
    """The test plugins (probe scorer, event log) installed; scripted agents reset."""
    from tests.support import agents
    from tests.support.runs import install_test_plugins

    agents.reset()
    yield install_test_plugins()
    agents.RELEASE.set()  # never leave a blocked agent thread behind


@pytest.fixture
def credential_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``credential_env("NAME", ...)`` lists the variables a tenant's ``api_key_env`` may
    name (``PAWL_CREDENTIAL_ENV_ALLOW``), as an operator does; unlisted again afterwards."""

    def allow(*names: str) -> None:
        monkeypatch.setenv("PAWL_CREDENTIAL_ENV_ALLOW", ",".join(names))
        wiring.reload_settings()
        # Load now: inside a request chalice.test.Client swaps in the stage's environment.
        from chalicelib.settings import get_settings

        get_settings()

    yield allow
    monkeypatch.delenv("PAWL_CREDENTIAL_ENV_ALLOW", raising=False)
    wiring.reload_settings()


@pytest.fixture
def app() -> Any:
    """The Chalice app itself, for calling its event handlers directly."""
    from app import app as chalice_app

    return chalice_app


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files holding slow tests first (each file kept whole, in collection order).

    Under ``pytest -n 2`` (``make test``) the minutes-long end-to-end tests then start
    while the many short ones fill the other worker around them, instead of one of them
    starting last and running alone. docs/testing.md.
    """
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: files stay whole
