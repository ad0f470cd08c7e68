"""The one place where failures become ``/api/v1`` responses.

Body: ``{"error": {"code", "message", "meta"}}``. Unexpected exceptions become a 500
``INTERNAL_ERROR`` whose body holds no internals (the traceback goes to the log).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from chalice import Response
from pydantic import ValidationError

from chalicelib.errors import PawlError, error_body, validation_error_from_pydantic

log = logging.getLogger("pawl.api")

JSON_HEADERS = {"Content-Type": "application/json"}


def error_response(
    status: int, code: str, message: str, meta: dict[str, Any] | None = None
) -> Response:
    body = json.dumps(error_body(code, message, meta))
    return Response(body=body, status_code=status, headers=dict(JSON_HEADERS))


def response_for(exc: BaseException) -> Response:
    if isinstance(exc, ValidationError):
        exc = validation_error_from_pydantic(exc)
    if isinstance(exc, PawlError):
        return error_response(exc.status, exc.code, exc.message, exc.meta)
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "INTERNAL_ERROR", "An internal error occurred.")
