"""The ``/v2`` error envelope: ``{"error": "<code>", "message": "...", "details"?: {...}}``.

Codes are registered OpenWOP codes (``error-envelope.schema.json``), chosen by the
error's HTTP status unless the error names its own (:class:`OpenwopError`); the one
status the registry has no code for (405) gets a ``pawl.``-scoped vendor code, which
the schema's vendor pattern admits.
"""

from __future__ import annotations

from typing import Any

from chalicelib.errors import PawlError, ValidationFailed

BY_STATUS = {
    400: "validation_error",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "pawl.method_not_allowed",
    409: "version_conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}
INTERNAL = "internal_error"
INTERNAL_MESSAGE = "An internal error occurred."


class OpenwopError(PawlError):
    """An error whose OpenWOP code is not the one its status implies."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.status = status
        self.openwop_code = code


def version_conflict(message: str) -> OpenwopError:
    return OpenwopError(409, "version_conflict", message)


def run_state_conflict(status: str) -> OpenwopError:
    return OpenwopError(
        409, "run_state_conflict", "the run has not finished: no summary yet", runStatus=status
    )


def idempotency_mismatch() -> OpenwopError:
    return OpenwopError(
        409,
        "idempotency_key_mismatch",
        "this Idempotency-Key was used with a different body",
    )


def idempotency_in_flight() -> OpenwopError:
    return OpenwopError(
        409, "idempotency_in_flight", "a request with this Idempotency-Key is still being handled"
    )


def not_found(what: str) -> OpenwopError:
    return OpenwopError(404, "not_found", f"{what} not found")


def invalid(message: str, **details: Any) -> ValidationFailed:
    return ValidationFailed(message, **details)


def body_of(code: str, message: str, details: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message or code}
    if details:
        body["details"] = details
    return body


def envelope(exc: PawlError) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` for a domain error."""
    code = getattr(exc, "openwop_code", None) or BY_STATUS.get(exc.status)
    if code is None:
        code = INTERNAL if exc.status >= 500 else "validation_error"
    details = {k: v for k, v in exc.meta.items() if k not in {"resource_type", "id"}}
    return exc.status, body_of(code, exc.message, details)


def is_v2_path(path: str | None) -> bool:
    return bool(path) and (path == "/v2" or str(path).startswith("/v2/"))


def front_body(status: int, message: str, details: dict[str, Any] | None) -> dict[str, Any]:
    """What an HTTP front (not the app) answers on a ``/v2`` path."""
    code = BY_STATUS.get(status, INTERNAL if status >= 500 else "validation_error")
    return body_of(code, message, details)


def internal() -> tuple[int, dict[str, Any]]:
    return 500, body_of(INTERNAL, INTERNAL_MESSAGE, None)
