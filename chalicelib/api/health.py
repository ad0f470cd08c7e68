"""Liveness and the OpenAPI document (both unauthenticated)."""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from chalicelib.api.access import PUBLIC
from chalicelib.api.routing import Call, endpoint

bp = Blueprint(__name__)


@endpoint(bp, "/health", "GET", access=PUBLIC, tag="meta", operation_id="getHealth")
def health(call: Call[Any, Any]) -> dict[str, str]:
    """Liveness probe."""
    return {"status": "ok"}


@endpoint(
    bp, "/api/v1/openapi.json", "GET", access=PUBLIC, tag="meta", operation_id="getOpenApiDocument"
)
def openapi_document(call: Call[Any, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route, generated from the request/response models."""
    from chalicelib.api.openapi import build_document

    return build_document()
