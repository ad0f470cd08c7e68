"""What API Gateway answers itself, before pawl's Lambda runs, in pawl's error envelope.

API Gateway refuses some requests on its own (an unknown route, a body over its limit,
throttling, an integration timeout). Each such "gateway response" type maps to the status,
``/api/v1`` error code and message pawl would give; the stack's ``GatewayResponse``
resources are generated from this table (``chalicelib/infra/template.py``) and the local
HTTP front answers the same way.
"""

from __future__ import annotations

#: Gateway response type -> (HTTP status, error code, message).
GATEWAY_RESPONSES: dict[str, tuple[int, str, str]] = {
    "DEFAULT_4XX": (400, "BAD_REQUEST", "The request was refused by the API gateway."),
    "DEFAULT_5XX": (500, "INTERNAL_ERROR", "An internal error occurred."),
    # API Gateway answers a route it does not know with this type (403 by default).
    "MISSING_AUTHENTICATION_TOKEN": (404, "RESOURCE_NOT_FOUND", "No route matches the path."),
    "ACCESS_DENIED": (403, "FORBIDDEN", "Access denied."),
    "UNAUTHORIZED": (401, "UNAUTHORIZED", "Missing or invalid API key."),
    "REQUEST_TOO_LARGE": (413, "PAYLOAD_TOO_LARGE", "The request body is too large."),
    "UNSUPPORTED_MEDIA_TYPE": (415, "UNSUPPORTED_MEDIA_TYPE", "Unsupported media type."),
    "THROTTLED": (429, "THROTTLED", "Too many requests; retry later."),
    "INTEGRATION_TIMEOUT": (504, "GATEWAY_TIMEOUT", "The request took too long; retry later."),
}
