"""The one place where failures become ``/api/v1`` responses.

Body: ``{"error": {"code", "message", "meta"}}``. Unexpected exceptions become a 500
``INTERNAL_ERROR`` whose body holds no internals (the traceback goes to the log), except one
whose cause is that AWS could not be reached at all (connection refused or dropped): that is
a 503 ``UNAVAILABLE``, what the local runtime answers once it has noticed its stand-in died,
and what a client should retry.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from botocore.exceptions import ConnectionClosedError
from botocore.exceptions import ConnectionError as AwsConnectionFailed
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
    if _aws_unreachable(exc):
        log.error("AWS could not be reached", exc_info=exc)
        return error_response(
            503, "UNAVAILABLE", "pawl's store cannot be reached right now; retry shortly"
        )
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "INTERNAL_ERROR", "An internal error occurred.")


def _aws_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` or what caused it is a connection to AWS that failed (the store's
    errors wrap botocore's, so the chain is walked)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, AwsConnectionFailed | ConnectionClosedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
