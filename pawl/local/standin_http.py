"""The stand-in's HTTP connection handling: one connection serves many AWS calls.

werkzeug's development server (moto's) answers every request with ``Connection: close``
and, after each answer, reads whatever else the client sent within 10 ms and throws it
away: it cannot know the application read the whole body, and an unread body would be
taken for the next request. So each of pawl's AWS calls cost a new TCP connection and a
new thread in the stand-in; simply leaving the header out is not enough, since the next
request on a kept-alive connection would be swallowed by that read.

:func:`keep_alive` replaces werkzeug's per-request step (``run_wsgi``) with one that suits
how the stand-in works: every request's body is read before anything answers it
(:func:`pawl.local.standin_auth.read_body`, refused requests included, which marks
the environ), and every answer is buffered anyway (the state lock holds whole answers),
so the answer goes out in one write with its ``Content-Length`` and the connection waits
for the client's next request (HTTP/1.1). A request whose body was not read, one that
asked to close, and one that failed close their connection as before.
"""

from __future__ import annotations

import logging
from typing import Any

from pawl.local.journal_wsgi import run_buffered
from pawl.local.standin_auth import BODY_CONSUMED

log = logging.getLogger("pawl.standin")

#: Answers that never carry a body (RFC 9110), so no Content-Length is added to them.
_BODILESS = frozenset({204, 304})
#: Headers the answer's framing decides here, whatever the application set.
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection"})


def keep_alive(handler: type[Any]) -> type[Any]:
    """``handler`` (werkzeug's request handler, as moto extends it) keeping connections open."""

    class KeepAliveHandler(handler):
        protocol_version = "HTTP/1.1"
        # One write per answer; TCP_NODELAY still, so nothing waits for a delayed ACK.
        disable_nagle_algorithm = True

        def run_wsgi(self) -> None:
            if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.environ = environ = self.make_environ()
            try:
                status, headers, body = run_buffered(self.server.app, environ)
            except Exception:
                log.exception("the stand-in failed on %s %s", self.command, self.path)
                status, headers = "500 Internal Server Error", [("Content-Type", "text/plain")]
                body = b"the stand-in failed on this request"
                self.close_connection = True
            if not environ.get(BODY_CONSUMED):
                self.close_connection = True
            self.wfile.write(self._head(status, headers, len(body)) + self._payload(body))

        def _payload(self, body: bytes) -> bytes:
            return b"" if self.command == "HEAD" else body

        def _head(self, status: str, headers: list[tuple[str, str]], length: int) -> bytes:
            code = int(status.split(" ", 1)[0])
            lines = [f"{self.protocol_version} {status}"]
            for name, value in headers:
                lowered = name.lower()
                # A HEAD answer's Content-Length is the object's: keep the application's.
                if lowered in _FRAMING and not (
                    self.command == "HEAD" and lowered == "content-length"
                ):
                    continue
                lines.append(f"{name}: {value}")
            if self.command != "HEAD" and code not in _BODILESS and code >= 200:
                lines.append(f"Content-Length: {length}")
            if self.close_connection:
                lines.append("Connection: close")
            return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    return KeepAliveHandler
