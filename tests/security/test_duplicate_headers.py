"""A header that must appear once appearing twice is a 400 at the local front, before the
body is read and before anything is written; the connection is closed, so bytes after the
headers are never parsed as a request. Raw sockets against a real GatewayServer on moto."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pawl.local.gateway import GatewayServer
from tests.conftest import ADMIN_KEY
from tests.support.http_front import app_over_http

ADMIN = f"Authorization: Bearer {ADMIN_KEY}".encode()


@pytest.fixture(scope="module")
def gateway() -> Iterator[GatewayServer]:
    with app_over_http() as server:
        yield server


def _exchange(gateway: GatewayServer, request: bytes) -> list[tuple[int, Any]]:
    """Send ``request``; read until the server closes; every (status, JSON body) answered."""
    host, port = gateway.server_address[:2]
    with socket.create_connection((str(host), port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    answers = []
    while reply:
        head, _, rest = reply.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        answers.append((int(lines[0].split()[1]), json.loads(rest[:length] or b"null")))
        reply = rest[length:]
    return answers


def _projects(gateway: GatewayServer) -> list[str]:
    listed = httpx.get(
        f"{gateway.url}/api/v1/projects?limit=100", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    return sorted(p["name"] for p in listed.json()["data"])


def _post(headers: list[bytes], body: bytes) -> bytes:
    head = [b"POST /api/v1/projects HTTP/1.1", b"Host: x", b"Content-Type: application/json"]
    return b"\r\n".join([*head, *headers, b"", body])


def _assert_refused(answers: list[tuple[int, Any]], header: str) -> None:
    assert len(answers) == 1, answers  # nothing after the refusal was taken as a request
    status, body = answers[0]
    assert status == 400, body
    assert body["error"]["code"] == "VALIDATION_FAILED"
    assert body["error"]["meta"]["header"].lower() == header.lower()


SMUGGLED = _post([ADMIN, b"Content-Length: 20"], b'{"name": "smuggled"}')


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        # The finding: the first length won. Here it ends the body early; the rest is a
        # second, smuggled request.
        ([ADMIN, b"Content-Length: 16", b"Content-Length: 999"], b'{"name": "first"}'),
        ([ADMIN, b"Content-Length: 0", b"content-length: 120"], SMUGGLED),
        ([ADMIN, b"Content-Length: 15", b"Content-Length: 15"], b'{"name": "same"}'),
    ],
)
def test_two_content_lengths_are_400_and_nothing_is_written(
    gateway: GatewayServer, headers: list[bytes], body: bytes
) -> None:
    before = _projects(gateway)
    _assert_refused(_exchange(gateway, _post(headers, body)), "Content-Length")
    assert _projects(gateway) == before


@pytest.mark.parametrize(
    "credentials",
    [
        [ADMIN, b"Authorization: Bearer pawl.key_AAAAAAAAAAAAAAAA.nope"],
        [b"Authorization: Bearer pawl.key_AAAAAAAAAAAAAAAA.nope", ADMIN],  # the second won
        [ADMIN, ADMIN],
        [ADMIN, b"authorization: Basic eDp5"],
    ],
)
def test_two_authorization_headers_are_400_and_nothing_is_written(
    gateway: GatewayServer, credentials: list[bytes]
) -> None:
    before = _projects(gateway)
    body = b'{"name": "two-keys"}'
    request = _post([*credentials, b"Content-Length: %d" % len(body)], body)
    _assert_refused(_exchange(gateway, request), "Authorization")
    assert _projects(gateway) == before


def test_two_hosts_and_local_routes_are_refused_too(gateway: GatewayServer) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"
    _assert_refused(_exchange(gateway, request), "Host")
    local = b"GET /_local/status HTTP/1.1\r\nHost: x\r\n" + ADMIN + b"\r\n" + ADMIN + b"\r\n\r\n"
    _assert_refused(_exchange(gateway, local), "Authorization")


def test_one_of_each_still_works(gateway: GatewayServer) -> None:
    body = b'{"name": "single"}'
    request = _post([ADMIN, b"Content-Length: %d" % len(body), b"Connection: close"], body)
    [(status, created)] = _exchange(gateway, request)
    assert status == 201 and created["name"] == "single"


@pytest.mark.parametrize(
    "header",
    ["Content-Type", "X-Pawl-Signature", "X-Soat-Signature", "X-Pawl-Delivery"],
)
def test_two_content_types_or_hook_proofs_are_400_and_nothing_is_written(
    gateway: GatewayServer, header: str
) -> None:
    """The audit: two Content-Types (text, then JSON) were 201, two signatures (a bad one,
    then a good one) were 202: the last copy won, where a proxy in front may read the first."""
    before = _projects(gateway)
    body = b'{"name": "two-of-a-kind"}'
    first, second = (b"text/plain", b"application/json")
    if header != "Content-Type":
        first, second = (b"sha256=" + b"0" * 64, b"sha256=" + b"1" * 64)
    request = _post(
        [
            ADMIN,
            b"Content-Length: %d" % len(body),
            header.encode() + b": " + first,
            header.encode() + b": " + second,
        ],
        body,
    )
    _assert_refused(_exchange(gateway, request), header)
    assert _projects(gateway) == before
