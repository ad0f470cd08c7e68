"""What a pawl client raises: a refusal from the API, or no answer at all.

Every refusal of ``/api/v1`` is the envelope ``{"error": {"code", "message", "meta"}}``;
:class:`ApiError` carries its parts (and ``field``, the offending field, when the envelope
names one). The statuses a caller commonly branches on have their own subclasses, so
``except pawl.NotFoundError`` reads as what it means; every one of them is an
:class:`ApiError`. This module imports nothing at run time (httpx only for annotations),
so :mod:`pawl.transport` (the CLI's client) and :mod:`pawl.client` (the public one) raise
the same classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only the annotation: the CLI's start-up path imports this module
    import httpx

__all__ = [
    "ApiError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServerUnreachable",
    "error_of",
]


class ApiError(Exception):
    """The API refused a request: its HTTP status and the error envelope's parts.

    ``code`` is the envelope's machine-readable code (``RESOURCE_NOT_FOUND``,
    ``VALIDATION_FAILED``, ...), ``message`` its text, ``meta`` its detail and ``field`` the
    field it names (``meta["field"]``), if any. ``method`` and ``path`` say which request.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        meta: dict[str, Any],
        *,
        method: str,
        path: str,
    ) -> None:
        super().__init__(f"{method} {path} -> {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.meta = meta
        self.method = method
        self.path = path
        field = meta.get("field")
        self.field: str | None = field if isinstance(field, str) else None


class BadRequestError(ApiError):
    """400 or 422: the request was refused as invalid (``field`` names what was wrong)."""


class AuthenticationError(ApiError):
    """401: no API key, or one pawl does not know."""


class PermissionDeniedError(ApiError):
    """403: the key is valid but not allowed to do this (another project, a policy)."""


class NotFoundError(ApiError):
    """404: no such resource, or not one this key may see."""


class ConflictError(ApiError):
    """409: a name already taken, or a concurrent update won."""


class RateLimitError(ApiError):
    """429: too many requests; retry later."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: BadRequestError,
    429: RateLimitError,
}


class ServerUnreachable(Exception):
    """No HTTP answer at all (connection refused, DNS, timeout)."""

    def __init__(self, base_url: str, reason: str) -> None:
        super().__init__(
            f"cannot reach pawl at {base_url} ({reason}). Is it running? Start it with "
            f"`pawl serve` (or `make serve`), or point PAWL_SERVER (or --server) at a running pawl."
        )
        self.base_url = base_url
        self.reason = reason


def error_of(response: httpx.Response) -> ApiError:
    """The exception for a refused response (status >= 400), read from its envelope.

    A body that is not the envelope (a proxy's HTML page, say) still gives an error: code
    ``HTTP_ERROR`` and the first 500 characters of the body as the message.
    """
    code, message = "HTTP_ERROR", response.reason_phrase or "request refused"
    meta: dict[str, Any] = {}
    try:
        body = response.json()
    except ValueError:
        body = None
    envelope = body.get("error") if isinstance(body, dict) else None
    if isinstance(envelope, dict):
        code = str(envelope.get("code", code))
        message = str(envelope.get("message", message))
        found_meta = envelope.get("meta")
        meta = found_meta if isinstance(found_meta, dict) else {}
    elif response.text:
        message = response.text[:500]
    kind = _BY_STATUS.get(response.status_code, ApiError)
    request = response.request
    return kind(
        response.status_code, code, message, meta, method=request.method, path=request.url.path
    )
