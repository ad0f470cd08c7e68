"""The outbound client: SSRF policy and retry timing (pure), then behaviour against real
HTTP servers on 127.0.0.1 (retries, Retry-After, give-up, timeouts, refusals, redirects)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from collections.abc import Iterator
from email.utils import formatdate

import pytest

from chalicelib import outbound, wiring
from chalicelib.outbound import (
    OutboundDropped,
    OutboundRefused,
    OutboundTimeout,
    OutboundTooLarge,
    OutboundUnreachable,
    address_category,
    backoff_delay,
    category_allowed,
    check_url,
    retry_after_s,
)
from chalicelib.outbound.allowlist import parse_allow_list
from tests.conftest import PLACEHOLDER_ALLOW_LIST
from tests.support.raw_servers import dropping
from tests.support.servers import Handler, Reply, Request, allow_loopback_port, serve


def _use_policy(monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    monkeypatch.setenv("PAWL_ALLOW_PRIVATE_URLS", policy)
    wiring.reload_settings()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.001")
    monkeypatch.setenv("PAWL_HTTP_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("PAWL_ALLOW_PRIVATE_URLS", PLACEHOLDER_ALLOW_LIST)
    wiring.reload_settings()
    yield
    wiring.reload_settings()


def _sequence(*replies: Reply) -> Handler:
    """A handler answering ``replies`` in order, then repeating the last one."""
    lock = threading.Lock()
    served = [0]

    def handler(request: Request) -> Reply:
        with lock:
            index = min(served[0], len(replies) - 1)
            served[0] += 1
        return replies[index]

    return handler


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- policy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("8.8.8.8", "public"),
        ("2606:4700:4700::1111", "public"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("fc00::1", "private"),
        ("224.0.0.1", "private"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        # IPv4 carried inside IPv6 is judged as the IPv4 address it reaches.
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("2002:a00:1::1", "private"),
    ],
)
def test_address_categories(address: str, category: str) -> None:
    assert address_category(ipaddress.ip_address(address)) == category


def test_policy_allows_exactly_what_it_names() -> None:
    def allowed(address: str, port: int, allow_list: str) -> bool:
        return category_allowed(ipaddress.ip_address(address), port, parse_allow_list(allow_list))

    assert allowed("8.8.8.8", 80, "")
    assert not allowed("127.0.0.1", 80, "")
    assert allowed("127.0.0.1", 80, "loopback")
    assert allowed("127.0.0.1", 80, "loopback:80") and not allowed("127.0.0.1", 81, "loopback:80")
    examples = {
        "private": "10.1.2.3",
        "link-local": "169.254.1.1",
        "metadata": "169.254.169.254",
        "unspecified": "0.0.0.0",
    }
    for category, address in examples.items():
        assert address_category(ipaddress.ip_address(address)) == category
        assert not allowed(address, 80, "")
        assert not allowed(address, 80, "loopback")
    assert allowed("10.1.2.3", 80, "all")
    # "all" opens private and loopback only: link-local and metadata must be named.
    for address in ("169.254.1.1", "169.254.169.254", "0.0.0.0"):
        assert not allowed(address, 80, "all")
    assert allowed("169.254.1.1", 80, "169.254.0.0/16")
    assert not allowed("169.254.169.254", 80, "169.254.0.0/16")
    assert allowed("169.254.169.254", 80, "169.254.169.254")


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://[fe80::1]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://0.0.0.0:8080/",
        "http://10.0.0.5/",
        "http://[::ffff:169.254.169.254]/",
        "ftp://127.0.0.1/file",
        "file:///etc/passwd",
        "not a url",
    ],
)
def test_check_url_refuses_under_loopback_policy(url: str) -> None:
    with pytest.raises(OutboundRefused):
        check_url(url)


def test_check_url_follows_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    check_url("http://127.0.0.1:9/")
    check_url("http://localhost:9/")  # resolves to loopback only
    _use_policy(monkeypatch, "")
    with pytest.raises(OutboundRefused, match="loopback"):
        check_url("http://127.0.0.1:9/")
    with pytest.raises(OutboundRefused, match="loopback"):
        check_url("http://localhost:9/")
    _use_policy(monkeypatch, "all")
    check_url("http://10.0.0.5/")
    for metadata in ("http://169.254.169.254/", "http://metadata.google.internal/"):
        with pytest.raises(OutboundRefused, match="metadata"):
            check_url(metadata)
    _use_policy(monkeypatch, "169.254.169.254")  # metadata only when named exactly
    check_url("http://169.254.169.254/")
    check_url("http://metadata.google.internal/")
    _use_policy(monkeypatch, "bogus")  # an unknown value is the strictest policy
    with pytest.raises(OutboundRefused):
        check_url("http://127.0.0.1:9/")


def test_check_url_accepts_a_host_that_does_not_resolve_yet() -> None:
    # The check made when connecting is the guarantee; config time refuses what it can see.
    check_url("https://agent.invalid/run")


# --- retry timing --------------------------------------------------------------------------


def test_backoff_doubles_with_jitter_within_bounds() -> None:
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        assert backoff_delay(attempt, 1.0, rand=lambda: 0.0) == ceiling / 2
        assert backoff_delay(attempt, 1.0, rand=lambda: 1.0) == ceiling
    assert backoff_delay(20, 1.0, rand=lambda: 1.0) == outbound.MAX_BACKOFF_S


def test_retry_after_seconds_and_http_date_are_capped() -> None:
    assert retry_after_s("2") == 2.0
    assert retry_after_s("0") == 0.0
    assert retry_after_s("86400") == outbound.RETRY_AFTER_CAP_S
    now = 1_800_000_000.0
    assert retry_after_s(formatdate(now + 5, usegmt=True), now=now) == 5.0
    assert retry_after_s(formatdate(now - 5, usegmt=True), now=now) == 0.0
    assert retry_after_s(None) is None
    assert retry_after_s("soon") is None


def test_safe_url_drops_query_and_userinfo() -> None:
    assert (
        outbound.safe_url("https://user:pw@host.example:8443/a/b?token=s3cret")
        == "https://host.example:8443/a/b"
    )
    assert outbound.safe_url("http://[::1]:8080/x") == "http://[::1]:8080/x"


# --- behaviour against real servers --------------------------------------------------------


def test_post_json_sends_body_and_headers() -> None:
    with serve(lambda r: Reply(200, {"ok": True})) as server:
        response = outbound.post_json(
            f"{server.url}/hook", {"a": [1, 2]}, headers={"Authorization": "Bearer k"}
        )
    assert response.ok and response.json() == {"ok": True} and response.attempts == 1
    seen = server.requests[0]
    assert (seen.method, seen.path, seen.json()) == ("POST", "/hook", {"a": [1, 2]})
    assert seen.headers["Authorization"] == "Bearer k"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.headers["User-Agent"] == outbound.USER_AGENT


def test_retries_503_then_succeeds() -> None:
    handler = _sequence(Reply(503), Reply(503), Reply(200, {"ok": True}))
    with serve(handler) as server:
        response = outbound.post_json(server.url, {})
    assert response.status == 200 and response.attempts == 3
    assert len(server.requests) == 3


def test_429_with_retry_after_is_retried() -> None:
    handler = _sequence(Reply(429, {"e": 1}, headers={"Retry-After": "0"}), Reply(200, {}))
    with serve(handler) as server:
        response = outbound.request("GET", server.url)
    assert response.status == 200 and len(server.requests) == 2


def test_gives_up_after_max_attempts_and_returns_the_last_answer() -> None:
    with serve(lambda r: Reply(502, {"e": "bad gateway"})) as server:
        response = outbound.post_json(server.url, {})
        assert response.status == 502 and response.attempts == 3
        assert len(server.requests) == 3
        once = outbound.post_json(server.url, {}, max_attempts=1)
    assert once.status == 502 and len(server.requests) == 4


def test_other_errors_are_not_retried() -> None:
    with serve(lambda r: Reply(500, {"e": 1})) as server:
        assert outbound.post_json(server.url, {}).status == 500
        assert len(server.requests) == 1


def test_connection_refused_is_retried_then_unreachable() -> None:
    port = _closed_port()
    with (
        allow_loopback_port(port),
        pytest.raises(OutboundUnreachable, match="after 3 attempt") as caught,
    ):
        outbound.request("GET", f"http://127.0.0.1:{port}/")
    assert caught.value.attempts == 3


def test_read_timeout_fails_once_without_retry() -> None:
    release = threading.Event()

    def stuck(request: Request) -> Reply:
        release.wait(10)
        return Reply(200, {})

    with serve(stuck) as server:
        try:
            with pytest.raises(OutboundTimeout):
                outbound.post_json(server.url, {}, timeout_s=0.2)
            assert len(server.requests) == 1
        finally:
            release.set()


def test_loopback_refused_under_public_policy_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(lambda r: Reply(200, {})) as server:
        _use_policy(monkeypatch, "")
        with pytest.raises(OutboundRefused, match="loopback"):
            outbound.post_json(server.url, {})
        # By name too: the check is made on what the name resolves to, when connecting.
        with pytest.raises(OutboundRefused, match="loopback"):
            outbound.post_json(f"http://localhost:{server.port}/", {})
        assert server.requests == []


def test_metadata_and_link_local_refused_without_connecting() -> None:
    for url in ("http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/"):
        with pytest.raises(OutboundRefused) as caught:
            outbound.request("GET", url)
        assert caught.value.attempts == 0


def test_redirects_are_returned_not_followed() -> None:
    redirect = Reply(302, {}, headers={"Location": "http://169.254.169.254/latest/"})
    with serve(lambda r: redirect) as server:
        response = outbound.request("GET", server.url)
    assert response.status == 302 and len(server.requests) == 1


def test_answer_larger_than_the_limit_is_refused() -> None:
    with serve(lambda r: Reply(200, raw=b"x" * 5000)) as server, pytest.raises(OutboundTooLarge):
        outbound.request("GET", server.url, max_bytes=1000)


def test_header_values_and_query_never_reach_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    handler = _sequence(Reply(503), Reply(200, {}))
    with serve(handler) as server:
        outbound.post_json(
            f"{server.url}/x?token=query-secret", {}, headers={"X-Api-Key": "header-secret"}
        )
    assert "retrying" in caplog.text  # the retry was logged...
    assert "header-secret" not in caplog.text  # ...without secrets
    assert "query-secret" not in caplog.text


def test_invalid_header_value_is_refused_without_echoing_it() -> None:
    with serve(lambda r: Reply(200, {})) as server:
        with pytest.raises(outbound.OutboundError) as caught:
            outbound.post_json(server.url, {}, headers={"X-Token": "line\r\nbreak-secret"})
        assert "break-secret" not in str(caught.value)
        assert server.requests == []


# --- connections that fail before any answer (outbound.retry) -------------------------------


@pytest.mark.parametrize("how", ["reset", "close"])
def test_a_repeatable_call_dropped_before_any_answer_is_retried(how: str) -> None:
    with dropping(2, how) as server:  # type: ignore[arg-type]
        response = outbound.post_json(server.url, {}, repeatable=True)
    assert response.ok and response.attempts == 3
    assert (server.accepted, server.answered) == (3, 1)


def test_a_post_dropped_after_the_server_read_it_is_not_retried() -> None:
    # Not declared repeatable: the server may have acted on it before closing.
    with dropping(1, "close") as server, pytest.raises(OutboundDropped) as caught:
        outbound.post_json(server.url, {})
    assert caught.value.attempts == 1 and server.accepted == 1


def test_an_idempotent_get_dropped_before_any_answer_is_retried() -> None:
    with dropping(1, "close") as server:
        response = outbound.request("GET", server.url)
    assert response.ok and server.accepted == 2


def test_a_partial_answer_is_never_retried() -> None:
    with dropping(1, "partial") as server, pytest.raises(outbound.OutboundError) as caught:
        outbound.post_json(server.url, {}, repeatable=True)
    assert not isinstance(caught.value, OutboundDropped)
    assert caught.value.attempts == 1 and server.accepted == 1


def test_persisting_retries_congestion_past_the_attempt_cap_within_the_budget() -> None:
    counter = outbound.AttemptCounter()
    with (
        dropping(None, "close") as server,
        outbound.persisting(),
        outbound.listening(counter),
        pytest.raises(OutboundDropped, match="attempt") as caught,
    ):
        outbound.post_json(server.url, {}, timeout_s=0.5, repeatable=True)
    assert caught.value.attempts > 3  # PAWL_HTTP_MAX_ATTEMPTS
    assert caught.value.attempts == counter.attempts == server.accepted


def test_persisting_stops_retrying_when_told() -> None:
    port = _closed_port()
    with (
        allow_loopback_port(port),
        outbound.persisting(should_continue=lambda: False),
        pytest.raises(OutboundUnreachable, match="retries stopped") as caught,
    ):
        outbound.request("GET", f"http://127.0.0.1:{port}/", timeout_s=5)
    assert caught.value.attempts == 1


def test_persisting_retries_only_what_the_quota_grants() -> None:
    granted = [True, False]
    with (
        dropping(None, "close") as server,
        outbound.persisting(allow_retry=lambda: granted.pop(0)),
        pytest.raises(OutboundDropped),
    ):
        outbound.post_json(server.url, {}, timeout_s=5, repeatable=True)
    assert server.accepted == 2 and granted == []


def test_a_read_timeout_is_not_retried_even_when_persisting() -> None:
    release = threading.Event()

    def stuck(request: Request) -> Reply:
        release.wait(10)
        return Reply(200, {})

    with serve(stuck) as server, outbound.persisting():
        try:
            with pytest.raises(OutboundTimeout):
                outbound.post_json(server.url, {}, timeout_s=0.3, repeatable=True)
            assert len(server.requests) == 1
        finally:
            release.set()


def test_every_attempt_is_reported_to_the_listeners_with_its_congestion() -> None:
    seen: list[outbound.AttemptOutcome] = []

    class Recorder:
        def attempted(self, outcome: outbound.AttemptOutcome) -> None:
            seen.append(outcome)

    handler = _sequence(Reply(503), Reply(500))
    with serve(handler) as server, outbound.listening(Recorder()):
        assert outbound.post_json(server.url, {}).status == 500
    assert [(o.status, o.congestion) for o in seen] == [(503, True), (500, False)]
