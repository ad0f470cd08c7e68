"""What the generated operations (:mod:`pawl._operations`) stand on: one abstract ``_send``
per flavour (sync, async), the sentinel for "not given", and the small pure helpers that
turn a method's arguments into a request.

Kept apart from :mod:`pawl.client` so the generated module depends only on this contract,
and :mod:`pawl.client` only fills in ``_send`` with httpx.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Final, final
from urllib.parse import quote

from pawl.errors import ApiError

Json = dict[str, Any]


@final
class Omit:
    """The type of :data:`OMIT`: a body field that was not given is not sent at all.

    ``None`` cannot say that: for a nullable field it is a value (``"baseline_run_id":
    null`` clears the baseline), so "leave it out" needs a value of its own.
    """

    _instance: Omit | None = None

    def __new__(cls) -> Omit:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = Omit()


def segment(value: str | int) -> str:
    """One path parameter, percent-encoded so an id can never reach another path."""
    return quote(str(value), safe="")


def body_of(whole: Mapping[str, Any] | None, fields: Mapping[str, Any]) -> Json:
    """The JSON body: ``whole`` (the caller's ``body=``) with every given field over it."""
    body: Json = dict(whole or {})
    body.update({name: value for name, value in fields.items() if value is not OMIT})
    return body


def query_of(params: Mapping[str, Any] | None) -> dict[str, str | int | float]:
    """The query string's parameters: ``None`` ones left out, booleans as ``true``/``false``."""
    query: dict[str, str | int | float] = {}
    for name, value in (params or {}).items():
        if value is None:
            continue
        query[name] = ("true" if value else "false") if isinstance(value, bool) else value
    return query


def expect_object(answer: Any, method: str, path: str) -> Json:
    """The answer of an operation documented to return a JSON object, checked to be one."""
    if isinstance(answer, dict):
        return answer
    raise ApiError(
        200,
        "UNEXPECTED_RESPONSE",
        f"expected a JSON object, got {type(answer).__name__}",
        {},
        method=method,
        path=path,
    )


def next_cursor(page: Json) -> str | None:
    """Where the next page starts (``next_cursor``), or None on the last page."""
    cursor = page.get("next_cursor")
    return cursor if isinstance(cursor, str) and cursor else None


def page_items(page: Json, method: str, path: str) -> list[Json]:
    items = page.get("data")
    if not isinstance(items, list):
        raise ApiError(
            200, "UNEXPECTED_RESPONSE", "a page without data", {}, method=method, path=path
        )
    return items


class SyncCaller(abc.ABC):
    """The generated sync operations call :meth:`_send`; :class:`pawl.Client` implements it."""

    @abc.abstractmethod
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
        """The answer's JSON (None when empty); :class:`ApiError` for a refusal."""

    def _object(self, method: str, path: str, **request: Any) -> Json:
        return expect_object(self._send(method, path, **request), method, path)

    def _nothing(self, method: str, path: str, **request: Any) -> None:
        self._send(method, path, **request)

    def _pages(self, method: str, path: str, query: Mapping[str, Any]) -> Iterator[Json]:
        """Every item of a listing, following ``next_cursor`` until the last page."""
        cursor: str | None = None
        while True:
            page = self._object(method, path, query={**query, "cursor": cursor})
            yield from page_items(page, method, path)
            cursor = next_cursor(page)
            if cursor is None:
                return


class AsyncCaller(abc.ABC):
    """The generated async operations await :meth:`_send`; :class:`pawl.AsyncClient` has it."""

    @abc.abstractmethod
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
        """The answer's JSON (None when empty); :class:`ApiError` for a refusal."""

    async def _object(self, method: str, path: str, **request: Any) -> Json:
        return expect_object(await self._send(method, path, **request), method, path)

    async def _nothing(self, method: str, path: str, **request: Any) -> None:
        await self._send(method, path, **request)

    async def _pages(self, method: str, path: str, query: Mapping[str, Any]) -> AsyncIterator[Json]:
        """Every item of a listing, following ``next_cursor`` until the last page."""
        cursor: str | None = None
        while True:
            page = await self._object(method, path, query={**query, "cursor": cursor})
            for item in page_items(page, method, path):
                yield item
            cursor = next_cursor(page)
            if cursor is None:
                return
