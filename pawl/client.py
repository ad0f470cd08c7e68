"""``pawl.Client`` and ``pawl.AsyncClient``: pawl's ``/api/v1`` from Python, over httpx.

Every operation is a method named as the CLI names it (``pawl list-evals`` is
``client.list_evals()``), generated from the route table (:mod:`pawl._operations`); this
module adds the connection: where the server is, the key, timeouts, errors, and paging
by name (:meth:`Client.paginate`). Answers are the API's JSON objects (``dict``).

    with pawl.Client() as client:          # PAWL_SERVER, PAWL_API_KEY
        for ev in client.iter_evals():
            print(ev["name"])
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from pawl._base import Json, query_of
from pawl._config import DEFAULT_TIMEOUT_S, api_key_of, server_of
from pawl._operations import PAGED_OPERATIONS, AsyncOperations, SyncOperations
from pawl._version import __version__
from pawl.errors import ServerUnreachable, error_of

__all__ = ["AsyncClient", "Client"]

Timeout = float | httpx.Timeout | None


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"User-Agent": f"pawl-python/{__version__}", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


def _answer(response: httpx.Response) -> Any:
    """The JSON of a 2xx answer (text if it is not JSON, None if empty); else its error."""
    if response.status_code >= 400:
        raise error_of(response)
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


def _iterator_of(operation: str) -> str:
    """``list_evals`` -> ``iter_evals``: the method that follows a listing's cursor."""
    if operation not in PAGED_OPERATIONS:
        choices = ", ".join(sorted(PAGED_OPERATIONS))
        raise ValueError(f"{operation!r} is not an operation that pages; these do: {choices}")
    return "iter_" + operation.removeprefix("list_")


def _unreachable(base_url: str, exc: httpx.TransportError) -> ServerUnreachable:
    reason = "timed out" if isinstance(exc, httpx.TimeoutException) else str(exc)
    return ServerUnreachable(base_url, reason or type(exc).__name__)


def _request_parts(
    json_body: Json | None, content: bytes | str | None, content_type: str | None
) -> dict[str, Any]:
    if content is not None:
        data = content.encode() if isinstance(content, str) else content
        return {"content": data, "headers": {"Content-Type": content_type or "text/plain"}}
    if json_body is not None:
        encoded = json.dumps(json_body, allow_nan=False).encode()
        return {"content": encoded, "headers": {"Content-Type": "application/json"}}
    return {}


class Client(SyncOperations):
    """A blocking client for one pawl server and one key.

    ``base_url`` defaults to ``$PAWL_SERVER`` (else ``http://127.0.0.1:8000``, where
    ``pawl serve`` listens) and ``api_key`` to ``$PAWL_API_KEY`` (none: only public routes
    answer). ``timeout`` is seconds per request (or an :class:`httpx.Timeout`); ``headers``
    are sent with every request; ``transport`` replaces httpx's (e.g.
    :class:`httpx.MockTransport` in a test). Use it as a context manager, or call
    :meth:`close`.

    A refusal raises :class:`pawl.ApiError` (a subclass for the common statuses:
    :class:`pawl.NotFoundError`, ...); no answer at all raises
    :class:`pawl.ServerUnreachable`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT_S,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = server_of(base_url)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=_headers(api_key_of(api_key), headers),
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"pawl.Client({self.base_url!r})"

    def close(self) -> None:
        """Close the connections (the client cannot be used afterwards)."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def paginate(self, operation: str, *path_params: str, **params: Any) -> Iterator[Json]:
        """Every item of a listing named as its method is (``"list_evals"``), across pages.

        The same as the matching ``iter_...`` method: ``paginate("list_eval_runs", eval_id)``
        is ``iter_eval_runs(eval_id)``. ``ValueError`` for an operation that does not page.
        """
        iterate: Any = getattr(self, _iterator_of(operation))
        items: Iterator[Json] = iterate(*path_params, **params)
        return items

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        json: Json | None = None,
        content: bytes | str | None = None,
        content_type: str | None = None,
    ) -> Any:
        parts = _request_parts(json, content, content_type)
        try:
            response = self._http.request(method, path, params=query_of(query), **parts)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _answer(response)


class AsyncClient(AsyncOperations):
    """The same as :class:`Client` with every operation awaitable (``await
    client.list_evals()``; ``async for item in client.iter_evals()``).

    Use it as an async context manager, or await :meth:`aclose`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT_S,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = server_of(base_url)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=_headers(api_key_of(api_key), headers),
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"pawl.AsyncClient({self.base_url!r})"

    async def aclose(self) -> None:
        """Close the connections (the client cannot be used afterwards)."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def paginate(self, operation: str, *path_params: str, **params: Any) -> AsyncIterator[Json]:
        """Every item of a listing named as its method is, across pages (``async for``)."""
        iterate: Any = getattr(self, _iterator_of(operation))
        items: AsyncIterator[Json] = iterate(*path_params, **params)
        return items

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        json: Json | None = None,
        content: bytes | str | None = None,
        content_type: str | None = None,
    ) -> Any:
        parts = _request_parts(json, content, content_type)
        try:
            response = await self._http.request(method, path, params=query_of(query), **parts)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        return _answer(response)
