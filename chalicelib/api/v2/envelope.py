"""Failures on ``/v2`` as the OpenWOP envelope (never the ``/api/v1`` one)."""

from __future__ import annotations

import json
import logging

from chalice import Response
from pydantic import ValidationError

from chalicelib.api.envelope import JSON_HEADERS
from chalicelib.errors import PawlError, validation_error_from_pydantic
from chalicelib.openwop import errors

log = logging.getLogger("pawl.api.v2")

PREFIX = "/v2"


def response(status: int, body: dict[str, object]) -> Response:
    return Response(body=json.dumps(body), status_code=status, headers=dict(JSON_HEADERS))


def render(exc: BaseException) -> Response:
    """What a ``/v2`` route answers for ``exc``."""
    if isinstance(exc, ValidationError):
        exc = validation_error_from_pydantic(exc)
    if isinstance(exc, PawlError):
        return response(*errors.envelope(exc))
    log.exception("unhandled error on /v2", exc_info=exc)
    return response(*errors.internal())


def render_code(status: int, message: str) -> Response:
    """An error the app answers itself (wrong method, unsupported body) on a ``/v2`` path."""
    return response(status, errors.front_body(status, message, None))


def is_v2(path: str | None) -> bool:
    return errors.is_v2_path(path)
