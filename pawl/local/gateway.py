"""The local stand-in for API Gateway: HTTP in, API Gateway proxy events into the Chalice app.

What it does the way pawl's API Gateway is configured to (``infra/`` sets the same
Gateway Responses):

- a path no route matches: 404 ``RESOURCE_NOT_FOUND`` in the ``/api/v1`` envelope (under
  ``/v2``, every refusal of the front is the OpenWOP envelope instead);
- a body over ``settings.max_body_bytes``: 413 ``PAYLOAD_TOO_LARGE``, decided from
  ``Content-Length`` before a byte of the body is read (and the connection is closed);
- a header that must appear once (``Content-Length``, ``Transfer-Encoding``,
  ``Authorization``, ``Host``, ``Content-Type`` and the inbound hook's signature and
  delivery headers: :data:`SINGLE_HEADERS`) appearing twice: 400 before the body is read and the
  connection closed. Two lengths make the body's end ambiguous (request smuggling when a
  proxy in front picks the other one), and two credentials make the caller ambiguous;
  either way which one "wins" is the parser's accident, so neither is chosen;
- query strings become ``queryStringParameters`` (last value wins) and
  ``multiValueQueryStringParameters``; path parameters are URL-decoded;
- bodies are binary-safe: a body that is not UTF-8, or whose type is one of the app's
  binary types, travels base64-encoded with ``isBase64Encoded``;
- every method reaches the app (which answers one no route takes with its 405
  envelope), and the HTTP layer's own refusals — malformed request line (400), URI too
  long (414), header line too long or too many headers (431), bad version (505) — are the
  envelope too, from the table in :mod:`chalicelib.infra.gateway_responses`.

Chalice keeps ``app.current_request`` in one attribute of the app, which Lambda never
shares between requests. Here many HTTP threads share one app, so the front gives it that
attribute per thread (:mod:`pawl.local.concurrent_app`) and requests run at once, as
they do on separate Lambda instances: a ``wait: true`` run start holds no other request.

``/_local/...`` paths are served by the runtime itself, never by the app (admin key only).
While the runtime is unavailable (its AWS stand-in died: ``local/supervision.py``) every
other path, ``/health`` included, is 503 ``UNAVAILABLE`` with the reason.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import socket
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from chalice import Chalice
from chalice.local import LambdaContext, RouteMatcher

from chalicelib.errors import error_body
from chalicelib.infra.gateway_responses import front_answer
from chalicelib.openwop import errors as openwop_errors
from chalicelib.settings import get_settings
from pawl.local.concurrent_app import serve_concurrently
from pawl.local.quiesce import Quiesce

log = logging.getLogger("pawl.local.http")

#: API Gateway's integration timeout, as the app sees it through its Lambda context.
API_TIMEOUT_MS = 29_000
LOCAL_PREFIX = "/_local/"
#: Bounds on draining a refused body so the client reads the refusal (see _linger).
LINGER_S = 2.0
LINGER_MAX_BYTES = 64 * 1024 * 1024

#: Headers a request may carry at most once (see the module docstring).
SINGLE_HEADERS = (
    "Content-Length",
    "Transfer-Encoding",
    "Authorization",
    "Host",
    # What a body means, and the inbound hook's proof of who sent it: a proxy in front that
    # reads the first copy and pawl the last would disagree about either.
    "Content-Type",
    "X-Pawl-Signature",
    "X-Soat-Signature",
    "X-Pawl-Delivery",
)

#: A local admin route: (method, path below /_local/, body) -> (status, JSON body).
LocalRoutes = Callable[[str, str, bytes], tuple[int, Any]]


class NoRoute(Exception):
    pass


def _query_parameters(query: str) -> tuple[dict[str, str] | None, dict[str, list[str]] | None]:
    multi = parse_qs(query, keep_blank_values=True)
    if not multi:
        return None, None
    return {name: values[-1] for name, values in multi.items()}, multi


def _event_body(body: bytes, content_type: str, binary_types: list[str]) -> tuple[Any, bool]:
    if not body:
        return None, False
    if content_type.split(";")[0].strip().lower() in binary_types:
        return base64.b64encode(body).decode("ascii"), True
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def build_proxy_event(
    matcher: RouteMatcher,
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    binary_types: list[str],
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The API Gateway (REST, proxy) event for one request. Raises NoRoute if none matches."""
    parts = urlsplit(target)
    try:
        match = matcher.match_route(parts.path)
    except ValueError:
        raise NoRoute(parts.path) from None
    single_headers: dict[str, str] = {}
    multi_headers: dict[str, list[str]] = {}
    for name, value in headers:
        single_headers[name] = value
        multi_headers.setdefault(name, []).append(value)
    query, multi_query = _query_parameters(parts.query)
    content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
    event_body, is_base64 = _event_body(body, content_type, binary_types)
    path_parameters = {name: unquote(value) for name, value in match.captured.items()}
    return {
        "resource": match.route,
        "path": parts.path,
        "httpMethod": method,
        "headers": single_headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": match.route,
            "httpMethod": method,
            "path": parts.path,
            "stage": "api",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": source_ip},
        },
        "body": event_body,
        "isBase64Encoded": is_base64,
    }


def response_parts(response: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body bytes of the proxy response the app returned."""
    headers = [(k, str(v)) for k, v in (response.get("headers") or {}).items()]
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers.extend((name, str(v)) for v in values)
    raw = response.get("body")
    if raw is None:
        body = b""
    elif response.get("isBase64Encoded"):
        body = base64.b64decode(raw)
    else:
        body = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    return int(response["statusCode"]), headers, body


class GatewayServer(ThreadingHTTPServer):
    """A threaded HTTP server that fronts one Chalice app."""

    daemon_threads = True
    #: The listen backlog. socketserver's default of 5 resets connections when a CI job
    #: starts a few dozen runs at once (tests/e2e/test_concurrent_starts.py).
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        app: Chalice,
        *,
        quiesce: Quiesce,
        local_routes: LocalRoutes | None = None,
        unavailable: Callable[[], str | None] | None = None,
    ) -> None:
        self.app = serve_concurrently(app)
        #: Why the runtime cannot serve right now (its stand-in died), or None.
        self.unavailable = unavailable or (lambda: None)
        self.quiesce = quiesce
        self.matcher = RouteMatcher(list(app.routes))
        self.local_routes = local_routes
        self.accepting = True
        super().__init__(address, GatewayHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        context = LambdaContext("pawl-api", 1024, max_runtime_ms=API_TIMEOUT_MS)
        with self.quiesce.working():
            result: dict[str, Any] = self.app(event, context)
        return result


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: GatewayServer
    #: Idle keep-alive connections are dropped after this many seconds.
    timeout = 30
    #: TCP_NODELAY: headers and body leave in separate writes, and with Nagle's algorithm
    #: the body waited for the client's delayed ACK (~40 ms on every keep-alive request).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _handle(self) -> None:
        if not self.server.accepting:
            self._send_error(503, "UNAVAILABLE", "the runtime is shutting down", close=True)
            return
        if self._refused_duplicate_header():
            return
        body = self._read_body()
        if body is None:
            return
        if self.path.startswith(LOCAL_PREFIX):
            self._handle_local(body)
            return
        reason = self.server.unavailable()
        if reason is not None:  # /health included: it must not say "ok" while data fails
            self._send_error(503, "UNAVAILABLE", reason)
            return
        try:
            event = build_proxy_event(
                self.server.matcher,
                self.command,
                self.path,
                list(self.headers.items()),
                body,
                list(self.server.app.api.binary_types),
                self.client_address[0],
            )
        except NoRoute as exc:
            self._send_error(404, "RESOURCE_NOT_FOUND", f"no route matches {exc}", path=str(exc))
            return
        try:
            response = self.server.invoke(event)
        except Exception:
            log.exception("the app raised outside its error handling")
            self._send_error(500, "INTERNAL_ERROR", "An internal error occurred.")
            return
        self._send(*response_parts(response))

    def __getattr__(self, name: str) -> Any:
        # BaseHTTPRequestHandler dispatches METHOD to ``do_METHOD`` and answers a missing
        # one with 501. Every method goes to the app instead, which answers one that a
        # route does not take (TRACE, QUERY, any token) with its 405 envelope, listing
        # the allowed methods, and an unknown path with 404.
        if name.startswith("do_"):
            return self._handle
        raise AttributeError(name)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The HTTP layer's own refusals (malformed request line, URI or headers over the
        limits, unsupported version) as the envelope, never the stdlib's HTML page."""
        self.log_error("refused: %d %s", code, message or "")
        if self.request_version == "HTTP/0.9":
            # Parsing failed before the version was read: answer with a status line anyway.
            self.request_version = self.protocol_version
        answer = front_answer(code)
        meta = {"reason": message} if message else {}
        self._send_error(answer.status, answer.code, answer.message, close=True, **meta)

    def _refused_duplicate_header(self) -> bool:
        """True when a header of :data:`SINGLE_HEADERS` repeats (the 400 is sent)."""
        for name in SINGLE_HEADERS:
            if len(self.headers.get_all(name) or ()) > 1:
                message = f"the request has more than one {name} header"
                self._send_error(400, "VALIDATION_FAILED", message, close=True, header=name)
                self._linger()
                return True
        return False

    def _read_body(self) -> bytes | None:
        """The request body, or None when the request was refused (the reply is sent)."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self._send_error(411, "LENGTH_REQUIRED", "send a Content-Length", close=True)
            return None
        raw_length = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw_length)
            if length < 0:
                raise ValueError(raw_length)
        except ValueError:
            self._send_error(400, "VALIDATION_FAILED", "bad Content-Length", close=True)
            return None
        limit = get_settings().max_body_bytes
        if length > limit:
            self._send_error(
                413,
                "PAYLOAD_TOO_LARGE",
                f"request body is larger than {limit} bytes",
                close=True,
                limit=limit,
            )
            self._linger()
            return None
        return self.rfile.read(length) if length else b""

    def _linger(self) -> None:
        # Closing a socket with unread input makes the kernel send a reset, which can reach
        # a client still sending its body before it reads our 413. So stop writing, then
        # discard what keeps arriving for a bounded time and amount (nginx's lingering close).
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_S)
            deadline = time.monotonic() + LINGER_S
            drained = 0
            while time.monotonic() < deadline and drained < LINGER_MAX_BYTES:
                chunk = self.connection.recv(65536)
                if not chunk:
                    break
                drained += len(chunk)
        except OSError:
            pass

    def _handle_local(self, body: bytes) -> None:
        admin_key = get_settings().admin_key or ""
        token = (self.headers.get("Authorization") or "").partition(" ")[2].strip()
        if not admin_key or not hmac.compare_digest(token.encode(), admin_key.encode()):
            self._send_error(401, "UNAUTHORIZED", "local routes need the admin key")
            return
        sub_path = urlsplit(self.path).path[len(LOCAL_PREFIX) :]
        if self.server.local_routes is None:
            status, payload = 404, error_body("RESOURCE_NOT_FOUND", "no local routes")
        else:
            status, payload = self.server.local_routes(self.command, sub_path, body)
        self._send(status, [("Content-Type", "application/json")], json.dumps(payload).encode())

    def _send_error(
        self, status: int, code: str, message: str, close: bool = False, **meta: Any
    ) -> None:
        if openwop_errors.is_v2_path(urlsplit(getattr(self, "path", "") or "").path):
            body = openwop_errors.front_body(status, message, meta)
        else:
            body = error_body(code, message, meta)
        payload = json.dumps(body).encode()
        self._send(status, [("Content-Type", "application/json")], payload, close=close)

    def _send(
        self, status: int, headers: list[tuple[str, str]], body: bytes, close: bool = False
    ) -> None:
        self.send_response(status)
        names = {name.lower() for name, _ in headers}
        for name, value in headers:
            if name.lower() not in {"content-length", "connection"}:
                self.send_header(name, value)
        if "content-type" not in names and body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            # The unread body (if any) must not be parsed as the next request.
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
