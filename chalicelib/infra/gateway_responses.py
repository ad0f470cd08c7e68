"""Every answer the HTTP front gives without the app: status, envelope code, message.

Two fronts answer requests the app never sees: API Gateway on AWS (its "gateway
responses") and the local runtime's HTTP server (:mod:`pawl.local.gateway`). Both
read this one table, so a refusal has the same status, ``/api/v1`` envelope and code
whichever front answered it:

- :data:`GATEWAY_RESPONSES` maps API Gateway response types to what pawl answers.
  :func:`response_template` is the body API Gateway answers with; the stack generator
  (:mod:`chalicelib.infra.merge`) sets one per row on the REST API (the message is API
  Gateway's own ``$context.error.messageString``: the message, already quoted as JSON).
- :data:`FRONT_ERRORS` maps HTTP statuses the local server's request parsing produces
  (a URI or header over its limits, a malformed request line) to the same shape. On AWS
  these never reach API Gateway's configurable responses (CloudFront answers them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class FrontAnswer:
    status: int
    code: str
    message: str


GATEWAY_RESPONSES: dict[str, FrontAnswer] = {
    # API Gateway answers an unmatched path *or method* with this type (403 by default).
    "MISSING_AUTHENTICATION_TOKEN": FrontAnswer(
        404, "RESOURCE_NOT_FOUND", "no route matches this path and method"
    ),
    "RESOURCE_NOT_FOUND": FrontAnswer(404, "RESOURCE_NOT_FOUND", "no route matches this path"),
    "REQUEST_TOO_LARGE": FrontAnswer(413, "PAYLOAD_TOO_LARGE", "the request is too large"),
    "UNSUPPORTED_MEDIA_TYPE": FrontAnswer(
        415, "UNSUPPORTED_MEDIA_TYPE", "send the body as application/json"
    ),
    "BAD_REQUEST_BODY": FrontAnswer(400, "VALIDATION_FAILED", "the request body is invalid"),
    "BAD_REQUEST_PARAMETERS": FrontAnswer(400, "VALIDATION_FAILED", "a parameter is invalid"),
    "UNAUTHORIZED": FrontAnswer(401, "UNAUTHORIZED", "missing or invalid credentials"),
    "ACCESS_DENIED": FrontAnswer(403, "FORBIDDEN", "access denied"),
    "THROTTLED": FrontAnswer(429, "RATE_LIMITED", "too many requests; retry later"),
    "QUOTA_EXCEEDED": FrontAnswer(429, "RATE_LIMITED", "request quota exceeded"),
    "INTEGRATION_FAILURE": FrontAnswer(502, "BAD_GATEWAY", "the API did not answer"),
    "INTEGRATION_TIMEOUT": FrontAnswer(504, "GATEWAY_TIMEOUT", "the API did not answer in time"),
    "DEFAULT_4XX": FrontAnswer(400, "BAD_REQUEST", "the request was refused"),
    "DEFAULT_5XX": FrontAnswer(500, "INTERNAL_ERROR", "An internal error occurred."),
}

FRONT_ERRORS: dict[int, FrontAnswer] = {
    400: FrontAnswer(400, "MALFORMED_REQUEST", "the request line or headers are malformed"),
    404: GATEWAY_RESPONSES["RESOURCE_NOT_FOUND"],
    405: FrontAnswer(405, "METHOD_NOT_ALLOWED", "this method is not allowed here"),
    408: FrontAnswer(408, "REQUEST_TIMEOUT", "the request was not received in time"),
    411: FrontAnswer(411, "LENGTH_REQUIRED", "send a Content-Length"),
    413: GATEWAY_RESPONSES["REQUEST_TOO_LARGE"],
    414: FrontAnswer(414, "URI_TOO_LONG", "the request URI is too long"),
    415: GATEWAY_RESPONSES["UNSUPPORTED_MEDIA_TYPE"],
    431: FrontAnswer(
        431, "REQUEST_HEADERS_TOO_LARGE", "a header line is too long or there are too many"
    ),
    500: GATEWAY_RESPONSES["DEFAULT_5XX"],
    501: FrontAnswer(501, "NOT_IMPLEMENTED", "this method is not implemented"),
    503: FrontAnswer(503, "UNAVAILABLE", "the service is not accepting requests"),
    505: FrontAnswer(505, "HTTP_VERSION_NOT_SUPPORTED", "use HTTP/1.0 or HTTP/1.1"),
}


def front_answer(status: int) -> FrontAnswer:
    """What the local front answers for ``status`` (a 4xx/5xx default for any other)."""
    known = FRONT_ERRORS.get(status)
    if known is not None:
        return known
    fallback = GATEWAY_RESPONSES["DEFAULT_5XX" if status >= 500 else "DEFAULT_4XX"]
    return FrontAnswer(status, fallback.code, fallback.message)


def response_template(answer: FrontAnswer) -> str:
    """API Gateway's body template: the envelope, with the gateway's own message."""
    body = {
        "error": {
            "code": answer.code,
            "message": "__MESSAGE__",
            "meta": {"request_id": "__REQUEST_ID__"},
        }
    }
    return (
        json.dumps(body)
        .replace('"__MESSAGE__"', "$context.error.messageString")
        .replace('"__REQUEST_ID__"', '"$context.requestId"')
    )
