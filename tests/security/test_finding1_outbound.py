"""Security regressions for issue 9, finding 1: no tenant reaches pawl itself.

The audit: a scoped key of one project created an http tool whose URL was the AWS
stand-in's own port, with ``X-Amz-Target: DynamoDB_20120810.PutItem`` headers and a PutItem
into the api-keys table as preset parameters; a decider backed by that tool wrote the row.
Each test below replays a piece of it against a real :class:`LocalRuntime` (stand-in child,
HTTP front, pollers) and checks the safe answer:

- creating an agent, tool, webhook or AI provider aimed at the stand-in or the API port is
  refused (400, envelope, nothing written), even when the operator allows all of loopback;
- a stored URL that points at pawl's own port once the runtime is up is refused when called;
- the stand-in answers 403 to anything not signed with the runtime's key, and keeps no write.

The allow-list grammar and address classes are in ``test_finding1_policy.py``; the
signature check itself in ``test_finding1_standin_auth.py``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from chalicelib import aws, wiring
from chalicelib.outbound import OWN_ENDPOINT_MESSAGE
from chalicelib.settings import get_settings
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.local.standin import StandInCredentials

FORGED_KEY_ID = "key_forgedforgedforg"
PUT_ITEM_HEADERS = {
    "X-Amz-Target": "DynamoDB_20120810.PutItem",
    "Content-Type": "application/x-amz-json-1.0",
}


def _forged_put_item() -> dict[str, Any]:
    """The body the audit sent: a new api-keys row of the attacker's making."""
    return {
        "TableName": get_settings().table_name("api-keys"),
        "Item": {
            "id": {"S": FORGED_KEY_ID},
            "project_id": {"S": "proj_victim"},
            "name": {"S": "forged"},
            "key_hash": {"S": "0" * 64},
            "prefix": {"S": "pawl"},
            "created_at": {"S": "2026-01-01T00:00:00Z"},
        },
    }


def _forged_row_exists() -> bool:
    table = get_settings().table_name("api-keys")
    found = aws.client("dynamodb").get_item(TableName=table, Key={"id": {"S": FORGED_KEY_ID}})
    return "Item" in found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _use(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    wiring.reload_settings()


def _start(tmp_path: Path, port: int = 0) -> LocalRuntime:
    config = RuntimeConfig(
        port=port, state_dir=tmp_path, snapshot_interval_s=0, run_schedules=False
    )
    return LocalRuntime(config).start()


class Tenant:
    """A project and its scoped key on a running runtime, speaking HTTP like a client."""

    def __init__(self, runtime: LocalRuntime, name: str) -> None:
        admin = {"Authorization": f"Bearer {runtime.admin_key}"}
        with httpx.Client(base_url=runtime.url, headers=admin, timeout=30) as client:
            project = client.post("/api/v1/projects", json={"name": name})
            assert project.status_code == 201, project.text
            self.project_id = project.json()["id"]
            key = client.post(
                "/api/v1/api-keys", json={"project_id": self.project_id, "name": "tenant"}
            )
            assert key.status_code == 201, key.text
        self.client = httpx.Client(
            base_url=runtime.url,
            headers={"Authorization": f"Bearer {key.json()['key']}"},
            timeout=60,
        )

    def create(self, resource: str, url: str) -> httpx.Response:
        body = {
            "tools": {
                "name": "exfil",
                "type": "http",
                "config": {
                    "url": url,
                    "headers": PUT_ITEM_HEADERS,
                    "preset_parameters": _forged_put_item(),
                },
            },
            "agents": {
                "name": "exfil",
                "type": "http",
                "config": {"url": url, "headers": PUT_ITEM_HEADERS},
            },
            "webhooks": {"url": url, "events": ["eval_run.*"]},
            "ai-providers": {"name": "exfil", "base_url": url, "default_model": "m"},
        }[resource]
        return self.client.post(f"/api/v1/{resource}", json={"project_id": self.project_id, **body})

    def listed(self, resource: str) -> list[Any]:
        answer = self.client.get(f"/api/v1/{resource}", params={"project_id": self.project_id})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["data"])


def _own_endpoints(runtime: LocalRuntime) -> dict[str, tuple[str, int]]:
    """URL spellings of the stand-in and the API, each with the port it must not reveal."""
    assert runtime.aws_endpoint is not None
    standin = httpx.URL(runtime.aws_endpoint).port or 0
    api = httpx.URL(runtime.url).port or 0
    return {
        "standin": (f"{runtime.aws_endpoint}/", standin),
        "standin-by-name": (f"http://localhost:{standin}/", standin),
        "standin-other-loopback": (f"http://127.0.0.2:{standin}/", standin),
        "standin-ipv4-mapped": (f"http://[::ffff:127.0.0.1]:{standin}/", standin),
        "standin-ipv4-compatible": (f"http://[::7f00:1]:{standin}/", standin),
        "standin-unspecified": (f"http://0.0.0.0:{standin}/", standin),
        "api": (f"{runtime.url}/api/v1/api-keys", api),
        "api-ipv6-loopback": (f"http://[::1]:{api}/", api),
    }


TARGETS = [
    "standin",
    "standin-by-name",
    "standin-other-loopback",
    "standin-ipv4-mapped",
    "standin-ipv4-compatible",
    "standin-unspecified",
    "api",
    "api-ipv6-loopback",
]


# --- against running runtimes -------------------------------------------------------------


@pytest.fixture(scope="class")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    """One runtime whose operator allowed every loopback port: the most permissive mode."""
    with pytest.MonkeyPatch.context() as patch:
        _use(patch, PAWL_ALLOW_PRIVATE_URLS="loopback")
        started = _start(tmp_path_factory.mktemp("state"))
        try:
            yield started
        finally:
            started.stop()
    wiring.reload_settings()


@pytest.fixture(scope="class")
def tenant(runtime: LocalRuntime) -> Iterator[Tenant]:
    attacker = Tenant(runtime, "attacker")
    yield attacker
    attacker.client.close()


@pytest.mark.slow
class TestOneRunningRuntime:
    """Against one runtime whose operator allowed every loopback port (the most permissive
    loopback mode). Class-scoped: nothing else may move the process's AWS endpoint meanwhile."""

    @pytest.mark.parametrize("resource", ["tools", "agents", "webhooks", "ai-providers"])
    @pytest.mark.parametrize("target", TARGETS)
    def test_a_tenant_cannot_aim_anything_at_pawls_own_endpoints(
        self, runtime: LocalRuntime, tenant: Tenant, resource: str, target: str
    ) -> None:
        url, port = _own_endpoints(runtime)[target]
        answer = tenant.create(resource, url)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == "VALIDATION_FAILED"
        if target != "standin-unspecified":  # 0.0.0.0 is refused as unspecified, before ports
            assert OWN_ENDPOINT_MESSAGE in error["message"]
        # The refusal names neither the stand-in's address nor a port.
        assert str(port) not in answer.text
        assert tenant.listed(resource) == []

    def test_the_standin_refuses_whatever_is_not_signed_with_the_runtimes_key(
        self, runtime: LocalRuntime, tenant: Tenant
    ) -> None:
        endpoint = runtime.aws_endpoint
        assert endpoint is not None and runtime.standin is not None
        body = json.dumps(_forged_put_item()).encode()
        right = runtime.standin.credentials

        def signed(key_id: str, secret: str) -> dict[str, str]:
            request = AWSRequest("POST", f"{endpoint}/", headers=PUT_ITEM_HEADERS, data=body)
            SigV4Auth(Credentials(key_id, secret), "dynamodb", "us-east-1").add_auth(request)
            return dict(request.headers.items())

        attempts = {
            "unsigned": PUT_ITEM_HEADERS,
            "the old fixed key": signed("pawl-local", "pawl-local"),
            "right key id, wrong secret": signed(right.access_key_id, "not-the-secret"),
            "another key id": signed(StandInCredentials.generate().access_key_id, "x"),
        }
        with httpx.Client(timeout=30) as client:
            for name, headers in attempts.items():
                answer = client.post(f"{endpoint}/", content=body, headers=headers)
                assert answer.status_code == 403, (name, answer.text)
                assert answer.json()["__type"], name
            # moto's control routes (reset, state) are closed to everyone.
            assert client.post(f"{endpoint}/moto-api/reset").status_code == 403
            assert client.get(f"{endpoint}/moto-api/data.json").status_code == 403
        assert not _forged_row_exists()
        # The runtime itself, signing with its key, is served, and nothing was reset.
        admin = {"Authorization": f"Bearer {runtime.admin_key}"}
        with httpx.Client(base_url=runtime.url, headers=admin, timeout=30) as api:
            project = api.get(f"/api/v1/projects/{tenant.project_id}")
        assert project.status_code == 200, project.text

    def test_a_presigned_url_is_refused_even_with_the_right_key(
        self, runtime: LocalRuntime
    ) -> None:
        s3 = aws.client("s3")
        bucket = get_settings().bucket
        s3.put_object(Bucket=bucket, Key="secret.txt", Body=b"tenant data")
        url = s3.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": "secret.txt"}
        )
        answer = httpx.get(url, timeout=30)
        assert answer.status_code == 403 and b"tenant data" not in answer.content
        assert s3.get_object(Bucket=bucket, Key="secret.txt")["Body"].read() == b"tenant data"


@pytest.mark.slow
def test_a_stored_url_that_became_pawls_own_port_is_refused_when_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool saved yesterday on a port this runtime now binds: the call is refused."""
    _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS="loopback")
    port = _free_port()
    first = _start(tmp_path)
    try:
        tenant = Tenant(first, "decider-owner")
        tool = tenant.create("tools", f"http://127.0.0.1:{port}/")
        assert tool.status_code == 201, tool.text
        backend = {"type": "tool", "tool_id": tool.json()["id"]}
        question = {"name": "ok", "kind": "predicate", "prompt": "Is it fine?"}
        body = {"name": "d", "questions": [question], "backend": backend}
        decider = tenant.client.post(
            "/api/v1/deciders", json={"project_id": tenant.project_id, **body}
        )
        assert decider.status_code == 201, decider.text
        decider_id = decider.json()["id"]
        key = tenant.client.headers["Authorization"]
        tenant.client.close()
    finally:
        first.stop()
    second = _start(tmp_path, port=port)  # the API now listens on the tool's port
    try:
        with httpx.Client(base_url=second.url, headers={"Authorization": key}, timeout=60) as c:
            answer = c.post(f"/api/v1/deciders/{decider_id}/decisions", json={"input": "x"})
    finally:
        second.stop()
    assert answer.status_code == 201, answer.text
    decision = answer.json()
    assert decision["status"] == "failed"
    assert OWN_ENDPOINT_MESSAGE in answer.text and str(port) not in decision["error"]["message"]
