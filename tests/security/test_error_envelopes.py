"""Every refusal of the local HTTP front is the ``/api/v1`` envelope (finding 5's 415, 501,
431, 414): raw sockets and httpx against a real GatewayServer over moto."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chalicelib.infra.gateway_responses import (
    FRONT_ERRORS,
    GATEWAY_RESPONSES,
    response_template,
)
from pawl.local.gateway import GatewayServer
from tests.conftest import ADMIN_KEY
from tests.support.http_front import app_over_http


@pytest.fixture(scope="module")
def gateway() -> Iterator[GatewayServer]:
    with app_over_http() as server:
        yield server


@pytest.fixture
def http(gateway: GatewayServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=10) as client:
        yield client


def _raw(gateway: GatewayServer, request: bytes) -> tuple[int, dict[str, str], Any]:
    """Send ``request`` as is; read until the server closes; status, headers, JSON body."""
    host, port = gateway.server_address[:2]
    with socket.create_connection((str(host), port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, json.loads(body)


def _envelope(status: int, headers: dict[str, str], body: Any, expected: int, code: str) -> None:
    assert status == expected, body
    assert headers["content-type"] == "application/json"
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["meta"], dict)


@pytest.mark.parametrize("method", ["TRACE", "QUERY", "CONNECT", "BREW", "PROPFIND"])
def test_any_method_no_route_takes_is_the_405_envelope(http: httpx.Client, method: str) -> None:
    response = http.request(method, "/api/v1/projects")
    assert response.status_code == 405, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert response.json()["error"]["meta"]["allowed"] == ["GET", "POST"]


def test_an_unknown_method_on_an_unknown_path_is_the_404_envelope(http: httpx.Client) -> None:
    response = http.request("TRACE", "/nowhere")
    assert response.status_code == 404 and response.json()["error"]["code"] == "RESOURCE_NOT_FOUND"


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"]
)
def test_a_body_that_is_not_json_is_the_415_envelope_and_writes_nothing(
    http: httpx.Client, content_type: str
) -> None:
    before = http.get("/api/v1/projects", params={"limit": "100"}).json()["data"]
    response = http.post(
        "/api/v1/projects", content=b'{"name": "typed"}', headers={"Content-Type": content_type}
    )
    assert response.status_code == 415, response.text
    assert response.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert content_type in response.json()["error"]["message"]
    assert http.get("/api/v1/projects", params={"limit": "100"}).json()["data"] == before


def test_json_with_a_charset_is_accepted(http: httpx.Client) -> None:
    response = http.post(
        "/api/v1/projects",
        content=b'{"name": "charset"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 201, response.text


def test_a_uri_over_64k_is_the_414_envelope(gateway: GatewayServer) -> None:
    request = b"GET /api/v1/projects?x=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    _envelope(*_raw(gateway, request), 414, "URI_TOO_LONG")


def test_a_header_line_over_64k_is_the_431_envelope(gateway: GatewayServer) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
    _envelope(*_raw(gateway, request), 431, "REQUEST_HEADERS_TOO_LARGE")


def test_too_many_headers_is_the_431_envelope(gateway: GatewayServer) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    request = b"GET /health HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n"
    _envelope(*_raw(gateway, request), 431, "REQUEST_HEADERS_TOO_LARGE")


@pytest.mark.parametrize(
    "line", [b"GARBAGE", b"GET /health HTTP/1.1 extra", b"GET /health HTTX/1.1", b"GET"]
)
def test_a_malformed_request_line_is_the_400_envelope(gateway: GatewayServer, line: bytes) -> None:
    _envelope(*_raw(gateway, line + b"\r\nHost: x\r\n\r\n"), 400, "MALFORMED_REQUEST")


def test_an_unsupported_http_version_is_the_505_envelope(gateway: GatewayServer) -> None:
    request = b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n"
    _envelope(*_raw(gateway, request), 505, "HTTP_VERSION_NOT_SUPPORTED")


def test_the_gateway_response_table_yields_valid_templates() -> None:
    assert GATEWAY_RESPONSES["MISSING_AUTHENTICATION_TOKEN"].status == 404
    for answer in [*GATEWAY_RESPONSES.values(), *FRONT_ERRORS.values()]:
        # API Gateway substitutes a quoted JSON string for the message and the request id.
        template = response_template(answer)
        filled = template.replace("$context.error.messageString", '"a message"').replace(
            "$context.requestId", "abc"
        )
        body = json.loads(filled)
        assert body["error"]["code"] == answer.code and body["error"]["message"] == "a message"
