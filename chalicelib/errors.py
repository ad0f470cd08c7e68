"""Domain errors. Any layer raises them; the HTTP edge maps them to responses in one place.

Each error carries the stable ``code`` of the ``/api/v1`` envelope, the HTTP status it
maps to and a ``meta`` dict with machine-readable detail (for example the offending field).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: `pawl datasets` reads these errors without loading pydantic
    from pydantic import ValidationError


def error_body(code: str, message: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``/api/v1`` error envelope: what api/envelope and the local HTTP front both answer."""
    return {"error": {"code": code, "message": message, "meta": meta or {}}}


class PawlError(Exception):
    status = 500
    code = "INTERNAL_ERROR"

    def __init__(self, message: str, *, code: str | None = None, **meta: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.meta: dict[str, Any] = meta


class ValidationFailed(PawlError):
    status = 400
    code = "VALIDATION_FAILED"

    def __init__(
        self, message: str, *, field: str | None = None, code: str | None = None, **meta: Any
    ) -> None:
        if field is not None:
            meta["field"] = field
        super().__init__(message, code=code, **meta)


def _field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "body"


def validation_error_from_pydantic(exc: ValidationError, prefix: str = "") -> ValidationFailed:
    """Name every offending field; never echo pydantic's context objects (not serializable)."""
    problems = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        field = _field_path(err["loc"])
        if prefix:
            field = f"{prefix}.{field}" if field != "body" else prefix
        message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append({"field": field, "message": message})
    first = problems[0] if problems else {"field": prefix or "body", "message": "invalid"}
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    return ValidationFailed(summary, field=first["field"], errors=problems)


class Unauthorized(PawlError):
    status = 401
    code = "UNAUTHORIZED"


class Forbidden(PawlError):
    status = 403
    code = "FORBIDDEN"


class ProjectScopeForbidden(Forbidden):
    code = "API_KEY_PROJECT_SCOPE"


class NotFound(PawlError):
    status = 404
    code = "RESOURCE_NOT_FOUND"


class MethodNotAllowed(PawlError):
    status = 405
    code = "METHOD_NOT_ALLOWED"


class Conflict(PawlError):
    status = 409
    code = "CONFLICT"


class NameConflict(Conflict):
    code = "NAME_CONFLICT"


class ConcurrentUpdate(Conflict):
    """Another write changed what this request read or writes; the request may be retried."""

    code = "CONCURRENT_UPDATE"


class PayloadTooLarge(PawlError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"


def not_found(kind: str, resource_id: str) -> NotFound:
    return NotFound(f"{kind} {resource_id} not found", resource_type=kind, id=resource_id)


def concurrent_update(kind: str, resource_id: str) -> ConcurrentUpdate:
    """409 ``CONCURRENT_UPDATE``: the resource changed since this request read it."""
    return ConcurrentUpdate(
        f"{kind} {resource_id} changed while this request was processed; retry", id=resource_id
    )
