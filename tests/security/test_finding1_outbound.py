"""Security regressions for issue 9, finding 1: no tenant reaches pawl itself.

The audit: a scoped key of one project created an http tool whose URL was the AWS
stand-in's own port, with ``X-Amz-Target: DynamoDB_20120810.PutItem`` headers and a PutItem
into the api-keys table as preset parameters; a decider backed by that tool wrote the row.
Each test below replays a piece of it against a real :class:`LocalRuntime` (stand-in child,
HTTP front, pollers) and checks the safe answer:

- creating an agent, tool, webhook or AI provider aimed at the stand-in or the API port is
  refused (400, envelope, nothing written), even when the operator allows all of loopback;
- a stored URL that points at pawl's own port once the runtime is up is refused when called;
- the stand-in answers 403 to anything not signed with the runtime's key, and keeps no write;
- the allow-list grammar: empty is public only, ``loopback:PORT`` is that port only, IPv6
  spellings of IPv4 addresses are judged as the IPv4 address, invalid values fail closed.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from chalicelib import aws, outbound
from chalicelib.local.runtime import LocalRuntime, RuntimeConfig
from chalicelib.local.standin import StandInCredentials
from chalicelib.outbound import OWN_ENDPOINT_MESSAGE, OutboundRefused
from chalicelib.outbound.allowlist import build_policy
from chalicelib.outbound.policy import check_address, connection_refusal
from chalicelib.settings import get_settings, reset_settings
from tests.support.servers import Reply, serve

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
    reset_settings()


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


# --- the policy on its own: real servers on 127.0.0.1, no runtime ------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("::a9fe:a9fe", "metadata"),  # IPv4-compatible 169.254.169.254 (the audit's spelling)
        ("::169.254.169.254", "metadata"),
        ("::ffff:a9fe:a9fe", "metadata"),  # IPv4-mapped
        ("::ffff:0:a9fe:a9fe", "metadata"),  # IPv4-translated (SIIT)
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64
        ("2002:a9fe:a9fe::1", "metadata"),  # 6to4
        ("::7f00:1", "loopback"),
        ("::ffff:7f00:1", "loopback"),
        ("64:ff9b::7f00:1", "loopback"),
        ("::a00:1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b:1::a00:1", "private"),  # local-use NAT64: never public
        ("::0.0.0.2", "unspecified"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("::808:808", "public"),  # IPv4-compatible 8.8.8.8
    ],
)
def test_ipv6_spellings_are_judged_as_the_ipv4_address(address: str, category: str) -> None:
    assert outbound.address_category(ipaddress.ip_address(address)) == category


@pytest.mark.parametrize("allow_list", ["", "loopback", "all", "10.0.0.0/8,127.0.0.0/8"])
@pytest.mark.parametrize(
    "url",
    [
        "http://[::a9fe:a9fe]/latest/meta-data/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[64:ff9b::a9fe:a9fe]/",
    ],
)
def test_metadata_in_ipv6_clothing_is_refused_in_every_mode(
    monkeypatch: pytest.MonkeyPatch, allow_list: str, url: str
) -> None:
    _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS=allow_list)
    with pytest.raises(OutboundRefused, match="metadata"):
        outbound.check_url(url)
    with pytest.raises(OutboundRefused, match="metadata"):
        outbound.request("GET", url)


def test_the_empty_variable_means_public_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(lambda r: Reply(200, {})) as server:
        _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS="")
        for url in (server.url, f"http://localhost:{server.port}/"):
            with pytest.raises(OutboundRefused, match="loopback"):
                outbound.check_url(url)
            with pytest.raises(OutboundRefused, match="loopback"):
                outbound.request("GET", url)
        assert server.requests == []


def test_loopback_port_allows_exactly_that_port(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(lambda r: Reply(200, {"ok": 1})) as named, serve(lambda r: Reply(200, {})) as other:
        _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS=f"loopback:{named.port}")
        outbound.check_url(named.url)
        assert outbound.request("GET", named.url).json() == {"ok": 1}
        assert outbound.request("GET", f"http://localhost:{named.port}/").status == 200
        with pytest.raises(OutboundRefused, match="loopback"):
            outbound.check_url(other.url)
        with pytest.raises(OutboundRefused, match="loopback"):
            outbound.request("GET", other.url)
        assert other.requests == [] and len(named.requests) == 2


@pytest.mark.parametrize("allow_list", ["loopback", "all", "127.0.0.0/8", "loopback:{port}"])
def test_a_reserved_port_is_refused_in_every_mode_even_by_name(
    monkeypatch: pytest.MonkeyPatch, allow_list: str
) -> None:
    """Refused at config time, and when connecting (a name is only resolved then)."""
    with serve(lambda r: Reply(200, {})) as pawl_itself:
        port = pawl_itself.port
        _use(
            monkeypatch,
            PAWL_ALLOW_PRIVATE_URLS=allow_list.format(port=port),
            PAWL_RESERVED_ENDPOINTS=f"127.0.0.1:{port}",
        )
        spellings = [pawl_itself.url, f"http://[::ffff:7f00:1]:{port}/"]
        for url in [*spellings, f"http://localhost:{port}/"]:
            with pytest.raises(OutboundRefused) as at_config:
                outbound.check_url(url)
            with pytest.raises(OutboundRefused) as at_call:
                outbound.request("POST", url, body=b"{}", headers=PUT_ITEM_HEADERS)
            for refused in (at_config.value, at_call.value):
                assert str(port) not in str(refused)
                # (localhost may also resolve to ::1, which "127.0.0.0/8" does not open)
                if url in spellings or "127.0.0.0/8" not in allow_list:
                    assert str(refused) == OWN_ENDPOINT_MESSAGE
        assert pawl_itself.requests == []


def test_aws_endpoint_url_is_always_reserved(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(lambda r: Reply(200, {})) as standin:
        _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS="loopback", AWS_ENDPOINT_URL=standin.url)
        with pytest.raises(OutboundRefused, match="pawl's own endpoint"):
            outbound.request("POST", f"http://localhost:{standin.port}/", body=b"{}")
        assert standin.requests == []


def test_a_runtime_bound_to_every_address_is_refused_on_every_local_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bound to 0.0.0.0 the API port answers on every address of the host, not only 127/8."""
    policy = build_policy("all", "0.0.0.0:8000", None)
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.9", "::1", "fd00::2", "::ffff:10.0.0.1"):
        with pytest.raises(OutboundRefused, match="pawl's own endpoint"):
            check_address(address, ipaddress.ip_address(address), 8000, policy)
        check_address(address, ipaddress.ip_address(address), 8001, policy)  # another port
    check_address("8.8.8.8", ipaddress.ip_address("8.8.8.8"), 8000, policy)  # another host
    # A public address of this very host (both ends of the connection share it) is loopback.
    me = ipaddress.ip_address("93.184.216.34")
    refusal = connection_refusal(me, me, 8000, policy)
    assert refusal is not None and str(refusal) == OWN_ENDPOINT_MESSAGE
    assert connection_refusal(me, me, 8001, build_policy("", "", None)) is not None
    assert connection_refusal(ipaddress.ip_address("93.184.216.35"), me, 8000, policy) is None


def test_a_server_on_every_address_is_refused_through_the_hosts_own_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real sockets: a server bound to 0.0.0.0, reached through a non-loopback address."""
    own = _host_address()
    if own is None:
        pytest.skip("this host has no non-loopback IPv4 address")
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    httpd = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    port = httpd.server_address[1]
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        _use(
            monkeypatch,
            PAWL_ALLOW_PRIVATE_URLS="all",
            PAWL_RESERVED_ENDPOINTS=f"0.0.0.0:{port}",
        )
        for url in (f"http://{own}:{port}/", f"http://127.0.0.1:{port}/"):
            with pytest.raises(OutboundRefused, match="pawl's own endpoint"):
                outbound.request("GET", url)
        assert seen == []
    finally:
        httpd.shutdown()
        httpd.server_close()


def _host_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # no packet is sent: only picks a route
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.mark.parametrize(
    "value",
    ["everything", "loopback:0", "loopback:70000", "loopback:http", "10.0.0.1/8", "::1/200"],
)
def test_an_invalid_allow_list_fails_closed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path, value: str
) -> None:
    caplog.set_level(logging.ERROR, logger="pawl.outbound")
    build_policy.cache_clear()
    _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS=f"loopback,{value}")
    policy = outbound.current_policy()
    assert policy.error is not None and not policy.any_loopback
    with pytest.raises(OutboundRefused, match="loopback"):
        outbound.check_url("http://127.0.0.1:9/")
    assert "PAWL_ALLOW_PRIVATE_URLS is not valid" in caplog.text
    with pytest.raises(RuntimeError, match="PAWL_ALLOW_PRIVATE_URLS is not valid"):
        LocalRuntime(RuntimeConfig(port=0, state_dir=tmp_path)).start()


@pytest.mark.slow
def test_the_local_runtime_keeps_an_empty_allow_list_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.unit.test_local_runtime import toy_app

    _use(monkeypatch, PAWL_ALLOW_PRIVATE_URLS="")
    config = RuntimeConfig(port=0, state_dir=tmp_path, app=toy_app(), snapshot_interval_s=0)
    with LocalRuntime(config) as running:
        policy = outbound.current_policy()
        assert get_settings().allow_private_urls == ""
        assert not policy.any_loopback and not policy.loopback_ports and not policy.networks
        with pytest.raises(OutboundRefused, match="loopback"):
            outbound.check_url(f"http://127.0.0.1:{_free_port()}/")
        assert running.aws_endpoint is not None
        standin_port = httpx.URL(running.aws_endpoint).port
        api_port = httpx.URL(running.url).port
        assert policy.reserved_ports >= {standin_port, api_port}


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
    reset_settings()


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
