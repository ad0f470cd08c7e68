"""The one request of ``pawl <operation>``, sent with the standard library alone.

:class:`pawl.transport.PawlClient` is built on httpx, and importing httpx and building its
client costs about 0.2 s of CPU here (it loads its own command line, rich and pygments
included, and an SSL context even for ``http://``): more than a CLI command's whole start-up
budget (docs/cli.md). A command sends one request (a few more when a name is looked up),
so :class:`StdlibClient` sends them with :mod:`http.client`: the same ``send`` as
``PawlClient.send``, the same errors (:class:`~pawl.transport.ApiError` with the envelope's
code and message, :class:`~pawl.transport.ServerUnreachable` when nothing answers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http.client import HTTPConnection, HTTPException, HTTPResponse
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from pawl.transport import DEFAULT_TIMEOUT_S, ApiError, Json, ServerUnreachable

#: What a path keeps as it is; anything else (a space in a flag's value) is percent-encoded,
#: as httpx does, instead of ``http.client`` refusing the URL.
PATH_SAFE = "/:@!$&'()*+,;=~%"
#: The longest refusal text kept when a refusal is not pawl's envelope (a proxy's page).
MAX_PLAIN_REFUSAL = 500


class StdlibClient:
    """One base URL and one bearer key; one connection, kept alive between requests."""

    def __init__(
        self, base_url: str, api_key: str | None, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServerUnreachable(self.base_url, "not an http:// or https:// URL")
        self._prefix = parts.path
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._connection = _connection(parts.scheme, parts.hostname, parts.port, timeout_s)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> StdlibClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        body: Json | None = None,
        params: Mapping[str, str | int] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Any operation by method and path: its JSON (text if not JSON), or None when empty.

        An answer of 400 or more raises :class:`ApiError`; no answer, :class:`ServerUnreachable`.
        """
        headers = dict(self._headers)
        if body is not None and content is None:
            content = json.dumps(body).encode()
            content_type = content_type or "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        target = quote(self._prefix + path, safe=PATH_SAFE)
        target += f"?{urlencode(params)}" if params else ""
        status, reason, raw = self._exchange(method, target, content, headers)
        if status >= 400:
            raise refusal(status, reason, raw, method=method, path=path)
        if not raw:
            return None
        text = raw.decode("utf-8", errors="replace")
        try:
            return json.loads(text)
        except ValueError:
            return text

    def _exchange(
        self, method: str, target: str, content: bytes | None, headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        try:
            self._connection.request(method, target, body=content, headers=headers)
            response: HTTPResponse = self._connection.getresponse()
            return response.status, response.reason, response.read()
        except (OSError, HTTPException) as exc:
            self._connection.close()  # the next request opens a new connection
            raise ServerUnreachable(self.base_url, _reason(exc)) from exc


def _connection(scheme: str, host: str, port: int | None, timeout_s: float) -> HTTPConnection:
    if scheme == "https":
        # ssl (and its context, about 10 ms) only for a server that needs it.
        from http.client import HTTPSConnection

        return HTTPSConnection(host, port, timeout=timeout_s)
    return HTTPConnection(host, port, timeout=timeout_s)


def _reason(exc: BaseException) -> str:
    """What failed, in the words httpx's errors use (``[Errno 111] Connection refused``)."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def refusal(status: int, reason: str, raw: bytes, *, method: str, path: str) -> ApiError:
    """The :class:`ApiError` of a refused answer: the envelope's code and message, or for a
    body that is not the envelope, ``HTTP_ERROR`` and the start of its text."""
    code, message, meta = "HTTP_ERROR", reason or "request refused", {}
    text = raw.decode("utf-8", errors="replace")
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    envelope = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(envelope, dict):
        code = str(envelope.get("code", code))
        message = str(envelope.get("message", message))
        found = envelope.get("meta")
        meta = found if isinstance(found, dict) else {}
    elif text:
        message = text[:MAX_PLAIN_REFUSAL]
    return ApiError(status, code, message, meta, method=method, path=path)
