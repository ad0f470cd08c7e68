"""The local API Gateway stand-in: routing, refusals before reading, proxy events (real HTTP)."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from chalice.local import RouteMatcher

from chalicelib.settings import get_settings
from pawl.local.gateway import GatewayServer, NoRoute, build_proxy_event, response_parts
from tests.conftest import ADMIN_KEY
from tests.support.http_front import moto_with_resources, serving

MATCHER = RouteMatcher(["/health", "/api/v1/projects", "/api/v1/projects/{project_id}"])


@pytest.fixture(scope="module")
def module_stand_in() -> Iterator[None]:
    """One moto stand-in for the module: creating every table is the slow part of a test."""
    with moto_with_resources():
        yield


@pytest.fixture(scope="module")
def gateway(module_stand_in: None) -> Iterator[GatewayServer]:
    from app import app

    with serving(app) as server:
        yield server


@pytest.fixture
def http(gateway: GatewayServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=gateway.url, headers=headers, timeout=10) as client:
        yield client


def _code(response: httpx.Response) -> str:
    error: dict[str, Any] = response.json()["error"]
    return str(error["code"])


# --- event building (pure) ----------------------------------------------------------------


def test_query_strings_become_single_and_multi_value_parameters() -> None:
    event = build_proxy_event(MATCHER, "GET", "/api/v1/projects?a=1&a=2&b=", [], b"", [])
    assert event["queryStringParameters"] == {"a": "2", "b": ""}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"], "b": [""]}
    assert event["requestContext"]["resourcePath"] == "/api/v1/projects"
    bare = build_proxy_event(MATCHER, "GET", "/health", [], b"", [])
    assert bare["queryStringParameters"] is None
    assert bare["multiValueQueryStringParameters"] is None
    assert bare["pathParameters"] is None
    assert bare["body"] is None


def test_path_parameters_are_decoded_and_trailing_slash_ignored() -> None:
    event = build_proxy_event(MATCHER, "GET", "/api/v1/projects/proj%5Fa%20b/", [], b"", [])
    assert event["pathParameters"] == {"project_id": "proj_a b"}
    assert event["resource"] == "/api/v1/projects/{project_id}"


def test_bodies_are_binary_safe() -> None:
    text = build_proxy_event(MATCHER, "POST", "/api/v1/projects", [], '{"n":"é"}'.encode(), [])
    assert text["body"] == '{"n":"é"}' and text["isBase64Encoded"] is False
    raw = b"\xff\x00\xfe"
    binary = build_proxy_event(MATCHER, "POST", "/api/v1/projects", [], raw, [])
    assert binary["isBase64Encoded"] is True
    assert base64.b64decode(binary["body"]) == raw
    declared = build_proxy_event(
        MATCHER,
        "POST",
        "/api/v1/projects",
        [("Content-Type", "application/octet-stream")],
        b"plain",
        ["application/octet-stream"],
    )
    assert declared["isBase64Encoded"] is True


def test_unknown_paths_raise_no_route() -> None:
    with pytest.raises(NoRoute):
        build_proxy_event(MATCHER, "GET", "/api/v1/nothing", [], b"", [])


def test_response_parts_decode_base64_and_merge_headers() -> None:
    status, headers, body = response_parts(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "application/octet-stream"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
            "body": base64.b64encode(b"\x00\x01").decode(),
            "isBase64Encoded": True,
        }
    )
    assert status == 201 and body == b"\x00\x01"
    assert ("Set-Cookie", "a=1") in headers and ("Set-Cookie", "b=2") in headers


# --- over HTTP ----------------------------------------------------------------------------


def test_routes_reach_the_app(http: httpx.Client) -> None:
    assert http.get("/health").json() == {"status": "ok"}
    created = http.post("/api/v1/projects", json={"name": "gateway"})
    assert created.status_code == 201, created.text
    project_id = created.json()["id"]
    fetched = http.get(f"/api/v1/projects/{project_id}")
    assert fetched.status_code == 200 and fetched.json()["name"] == "gateway"
    listed = http.get("/api/v1/projects", params={"limit": "1"})
    assert listed.status_code == 200 and len(listed.json()["data"]) == 1


def test_query_validation_names_the_field(http: httpx.Client) -> None:
    response = http.get("/api/v1/projects", params={"limit": "lots"})
    assert response.status_code == 400
    assert response.json()["error"]["meta"]["field"] == "limit"


def test_unknown_route_is_the_404_envelope_naming_the_path(http: httpx.Client) -> None:
    response = http.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert _code(response) == "RESOURCE_NOT_FOUND"
    assert "/api/v1/no-such-thing" in response.json()["error"]["message"]


def test_wrong_method_is_the_405_envelope(http: httpx.Client) -> None:
    response = http.delete("/health")
    assert response.status_code == 405
    assert _code(response) == "METHOD_NOT_ALLOWED"


def test_non_utf8_body_reaches_the_app_intact(http: httpx.Client) -> None:
    response = http.post(
        "/api/v1/projects", content=b"\xff\xfe", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert _code(response) == "VALIDATION_FAILED"
    assert "JSON" in response.json()["error"]["message"]


def test_oversized_body_is_refused_from_content_length_before_reading(
    gateway: GatewayServer,
) -> None:
    # Announce a body far over the limit and send none of it: the answer must come anyway.
    limit = get_settings().max_body_bytes
    host, port = gateway.server_address[:2]
    with socket.create_connection((str(host), port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v1/projects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {limit * 50}\r\n\r\n".encode()
        )
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.endswith(b"}}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert b"Connection: close" in head
    assert b'"PAYLOAD_TOO_LARGE"' in body


def test_a_body_at_the_limit_is_read(http: httpx.Client) -> None:
    limit = get_settings().max_body_bytes
    padding = " " * (limit - len('{"name": "edge"}'))
    response = http.post(
        "/api/v1/projects",
        content=('{"name": "edge"}' + padding).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


def test_local_routes_need_the_admin_key(gateway: GatewayServer) -> None:
    response = httpx.get(f"{gateway.url}/_local/status", timeout=10)
    assert response.status_code == 401
    assert _code(response) == "UNAUTHORIZED"


def test_the_front_answers_v2_paths_in_the_openwop_envelope(http: httpx.Client) -> None:
    unknown = http.get("/v2/nowhere")
    assert unknown.status_code == 404
    assert unknown.json() == {
        "error": "not_found",
        "message": unknown.json()["message"],
        "details": {"path": "/v2/nowhere"},
    }
    too_large = http.post("/v2/runs", content=b"x" * (get_settings().max_body_bytes + 1))
    assert too_large.status_code == 413 and too_large.json()["error"] == "payload_too_large"
    assert http.get("/api/v1/nowhere").json()["error"]["code"] == "RESOURCE_NOT_FOUND"
