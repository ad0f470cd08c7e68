"""Real HTTP servers on 127.0.0.1 for tests: agents, judges, tools, webhook receivers.

``serve(handler)`` starts a threaded server whose every request is passed to
``handler(request) -> Reply``; the server records every request it saw. While it runs, its
port is on the outbound allow-list (``PAWL_ALLOW_PRIVATE_URLS``): tests name the loopback
ports pawl may call, as an operator would, instead of opening loopback wholesale.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


@dataclass
class Server:
    url: str
    requests: list[Request]
    port: int


Handler = Callable[[Request], Reply]


def _make_handler(handler: Handler, seen: list[Request], lock: threading.Lock) -> type:
    class _H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            return None

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Request(self.command, self.path, dict(self.headers.items()), body)
            with lock:
                seen.append(request)
            reply = handler(request)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            # One write for head and body: separate small writes meet Nagle + delayed ACK
            # and cost ~40 ms per request.
            self._headers_buffer.append(b"\r\n")
            self._headers_buffer.append(payload)
            self.wfile.write(b"".join(self._headers_buffer))
            self._headers_buffer = []

        do_GET = do_POST = do_PUT = do_DELETE = _handle

    return _H


ALLOW_LIST = "PAWL_ALLOW_PRIVATE_URLS"


@contextmanager
def allow_loopback_port(port: int) -> Iterator[None]:
    """Add ``loopback:PORT`` to the allow-list until the block ends (then take it out again)."""
    from chalicelib import wiring

    entry = f"loopback:{port}"
    entries = [e for e in os.environ.get(ALLOW_LIST, "").split(",") if e.strip()]
    os.environ[ALLOW_LIST] = ",".join([*entries, entry])
    wiring.reload_settings()
    try:
        yield
    finally:
        # Remove only our entry: a server started inside this one may still be running.
        remaining = [e for e in os.environ.get(ALLOW_LIST, "").split(",") if e.strip()]
        if entry in remaining:
            remaining.remove(entry)
        os.environ[ALLOW_LIST] = ",".join(remaining)
        wiring.reload_settings()


class _Server(ThreadingHTTPServer):
    #: socketserver's backlog of 5 resets connections when a run calls the agent 20 at once.
    request_queue_size = 128


@contextmanager
def serve(handler: Handler) -> Iterator[Server]:
    seen: list[Request] = []
    lock = threading.Lock()
    httpd = _Server(("127.0.0.1", 0), _make_handler(handler, seen, lock))
    httpd.daemon_threads = True
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    port = httpd.server_address[1]
    try:
        with allow_loopback_port(port):
            yield Server(url=f"http://127.0.0.1:{port}", requests=seen, port=port)
    finally:
        httpd.shutdown()
        httpd.server_close()
