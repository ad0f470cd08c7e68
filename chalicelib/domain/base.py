"""Shared pydantic bases for domain types and request bodies."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class Resource(BaseModel):
    """A resource as the API shows it."""

    model_config = ConfigDict(extra="forbid")


class RequestBody(BaseModel):
    """A request body: unknown fields are refused (400), never dropped."""

    model_config = ConfigDict(extra="forbid", strict=False)


class Page(BaseModel, Generic[T]):
    """One page of a list: SOAT's ``{data, total, limit, offset}`` plus pawl's ``next_cursor``.

    ``offset`` is how many items precede the page (whether the request gave an ``offset``
    or a cursor); ``total`` counts the whole list as it stood when the listing began.
    """

    data: list[T]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None
