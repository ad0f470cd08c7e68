"""The CLI's standard-library client against a real server on 127.0.0.1: what it sends,
what it returns, and the same errors as ``PawlClient``."""

from __future__ import annotations

import socket

import pytest

from pawl.cli.sender import StdlibClient, refusal
from pawl.transport import ApiError, PawlClient, ServerUnreachable
from tests.support.servers import Reply, Request, serve


def _answer(request: Request) -> Reply:
    if request.path.startswith("/api/v1/empty"):
        return Reply(status=204, raw=b"")
    if request.path.startswith("/api/v1/text"):
        return Reply(raw=b"plain words", headers={"Content-Type": "text/plain"})
    if request.path.startswith("/api/v1/missing"):
        envelope = {"code": "RESOURCE_NOT_FOUND", "message": "eval e not found", "meta": {}}
        return Reply(status=404, body={"error": envelope})
    if request.path.startswith("/api/v1/proxy"):
        return Reply(status=502, raw=b"<html>bad gateway</html>")
    body = request.json()
    return Reply(body={"method": request.method, "path": request.path, "body": body})


def test_it_sends_what_pawlclient_sends_and_reads_the_answer_the_same() -> None:
    with serve(_answer) as server:
        for client_type in (StdlibClient, PawlClient):
            with client_type(server.url, "pawl.key") as client:
                echoed = client.send(
                    "POST", "/api/v1/evals/e 1/runs", body={"wait": True}, params={"limit": 5}
                )
                assert echoed == {
                    "method": "POST",
                    "path": "/api/v1/evals/e%201/runs?limit=5",
                    "body": {"wait": True},
                }
                assert client.send("DELETE", "/api/v1/empty") is None
                assert client.send("GET", "/api/v1/text") == "plain words"
        sent = [r for r in server.requests if r.method == "POST"]
        assert all(r.headers["Authorization"] == "Bearer pawl.key" for r in sent)
        assert sent[0].headers["Content-Type"] == "application/json"


def test_a_raw_body_goes_out_as_it_is_with_its_media_type() -> None:
    with serve(lambda request: Reply(body={"seen": request.body.decode()})) as server:
        with StdlibClient(server.url, None) as client:
            lines = b'{"input": "a"}\n{"input": "b"}\n'
            answer = client.send(
                "POST", "/x:import", content=lines, content_type="application/x-ndjson"
            )
        assert answer == {"seen": lines.decode()}
        assert server.requests[0].headers["Content-Type"] == "application/x-ndjson"
        assert "Authorization" not in server.requests[0].headers


def test_refusals_carry_the_envelope_or_the_start_of_the_page() -> None:
    with serve(_answer) as server, StdlibClient(server.url, "k") as client:
        with pytest.raises(ApiError) as missing:
            client.send("GET", "/api/v1/missing")
        assert (missing.value.status, missing.value.code) == (404, "RESOURCE_NOT_FOUND")
        assert missing.value.message == "eval e not found"
        with pytest.raises(ApiError) as proxied:
            client.send("GET", "/api/v1/proxy")
        assert (proxied.value.code, proxied.value.message) == (
            "HTTP_ERROR",
            "<html>bad gateway</html>",
        )
    cut = refusal(500, "Internal", b"x" * 2000, method="GET", path="/p")
    assert len(cut.message) == 500 and cut.code == "HTTP_ERROR"
    assert refusal(503, "Unavailable", b"", method="GET", path="/p").message == "Unavailable"


def test_nothing_listening_is_server_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: refused
        client = StdlibClient(f"http://127.0.0.1:{port}", "k")
        with client, pytest.raises(ServerUnreachable, match="Connection refused"):
            client.send("GET", "/health")
    with pytest.raises(ServerUnreachable, match="not an http"):
        StdlibClient("127.0.0.1:8000", "k")


def test_a_path_prefix_in_the_server_url_is_kept() -> None:
    with (
        serve(lambda request: Reply(body={"path": request.path})) as server,
        StdlibClient(server.url + "/dev/", "k") as client,
    ):
        assert client.send("GET", "/api/v1/evals") == {"path": "/dev/api/v1/evals"}
