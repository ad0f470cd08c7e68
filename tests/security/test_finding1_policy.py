"""Security regressions for issue 9, finding 1: the outbound policy on its own.

Real HTTP servers on 127.0.0.1 stand for pawl's own ports and for agents; no runtime is
needed except where its start-up is the subject. See ``test_finding1_outbound.py`` for the
audit replayed against a running runtime, and ``test_finding1_standin_auth.py`` for the
stand-in's signature check.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from chalicelib import outbound, wiring
from chalicelib.outbound import OWN_ENDPOINT_MESSAGE, OutboundRefused
from chalicelib.outbound.allowlist import InvalidAllowList, build_policy, parse_allow_list
from chalicelib.outbound.policy import check_address, connection_refusal
from chalicelib.settings import get_settings
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from tests.support.servers import Reply, serve

PUT_ITEM_HEADERS = {"X-Amz-Target": "DynamoDB_20120810.PutItem"}


def _use(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    wiring.reload_settings()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@pytest.mark.parametrize(
    ("value", "ports"),
    [
        ("loopback:8001,8002", {8001, 8002}),
        ("loopback:8001,loopback:8002", {8001, 8002}),
        ("loopback:8001, 8002 ,8003", {8001, 8002, 8003}),
        ("10.0.0.0/8,loopback:8001,8002", {8001, 8002}),
    ],
)
def test_the_issue_spelling_loopback_port_list(value: str, ports: set[int]) -> None:
    assert parse_allow_list(value).loopback_ports == frozenset(ports)


@pytest.mark.parametrize("value", ["8001", "10.0.0.0/8,8001", "loopback,8001", "all,8001"])
def test_a_bare_port_not_after_a_loopback_port_is_invalid(value: str) -> None:
    with pytest.raises(InvalidAllowList):
        parse_allow_list(value)
