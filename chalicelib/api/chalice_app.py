"""pawl's error envelope on the failure paths Chalice answers itself.

Route views map their own errors (``routing.endpoint`` turns every exception into the
envelope); Chalice still answers a wrong method (405), a body whose Content-Type the route
does not take (415) and a crash outside a view with its own ``{"Code", "Message"}``
shape. :func:`envelope_middleware`, registered through Chalice's public ``http``
middleware (it wraps the whole REST handler), turns those into the envelope
(:data:`CHALICE_CODES`), so the API has one error shape and pawl overrides no Chalice
internals. (Unknown routes never reach Lambda: API Gateway answers them with the gateway
responses of :mod:`chalicelib.infra.gateway_responses`; the local runtime's HTTP front uses
the same table.)
"""

from __future__ import annotations

from collections.abc import Callable

from chalice import Response
from chalice.app import Request

from chalicelib.api import routing
from chalicelib.api.envelope import error_response
from chalicelib.api.v2 import envelope as v2_envelope

#: Chalice's own error codes -> the envelope's.
CHALICE_CODES = {
    "UnsupportedMediaType": "UNSUPPORTED_MEDIA_TYPE",
    "MethodNotAllowedError": "METHOD_NOT_ALLOWED",
    "BadRequest": "BAD_REQUEST",
    "InternalServerError": "INTERNAL_ERROR",
}


def _chalice_code(response: Response) -> str | None:
    """The ``Code`` of a Chalice-shaped error response; None for any other response."""
    body = response.body
    if response.status_code < 400 or not isinstance(body, dict) or set(body) != {"Code", "Message"}:
        return None
    return str(body["Code"])


def _method_not_allowed(request: Request | None, response: Response) -> Response:
    context = request.context if request is not None else {}
    method, resource_path = context.get("httpMethod"), context.get("resourcePath")
    allowed = str((response.headers or {}).get("Allow", ""))
    return error_response(
        405,
        "METHOD_NOT_ALLOWED",
        f"{method} is not allowed on {resource_path}",
        {"allowed": sorted(m.strip() for m in allowed.split(",") if m.strip())},
    )


def accepted_media_types(request: Request | None) -> list[str]:
    """What the request's route takes a body as: its ``raw_body`` types, else JSON."""
    context = request.context if request is not None else {}
    try:
        spec = routing.route(str(context.get("httpMethod")), str(context.get("resourcePath")))
    except LookupError:
        return ["application/json"]
    return list(spec.raw_body) or ["application/json"]


def _as_envelope(code: str, request: Request | None, response: Response) -> Response:
    envelope_code = CHALICE_CODES.get(code, "INTERNAL_ERROR")
    message = str(response.body["Message"])
    meta: dict[str, list[str]] = {}
    if envelope_code == "UNSUPPORTED_MEDIA_TYPE":
        accepted = accepted_media_types(request)
        named = " or ".join(filter(None, (", ".join(accepted[:-1]), accepted[-1])))
        message = f"{message}; send the body as {named}"
        meta = {"accepted": accepted}
    enveloped = error_response(response.status_code, envelope_code, message, meta)
    enveloped.headers = {**(response.headers or {}), **enveloped.headers}
    return enveloped


def _as_v2_envelope(request: Request | None, response: Response) -> Response:
    """On a ``/v2`` path: the OpenWOP envelope (``docs/openwop.md``)."""
    context = request.context if request is not None else {}
    if response.status_code == 405:
        message = f"{context.get('httpMethod')} is not allowed on {context.get('resourcePath')}"
    else:
        message = str(response.body["Message"])
    enveloped = v2_envelope.render_code(response.status_code, message)
    enveloped.headers = {**(response.headers or {}), **enveloped.headers}
    return enveloped


def envelope_middleware(
    request: Request | None, get_response: Callable[[Request | None], Response]
) -> Response:
    """Any Chalice-shaped error as the envelope of its surface (``/api/v1``'s, or
    OpenWOP's on ``/v2``); every other response unchanged."""
    response = get_response(request)
    code = _chalice_code(response)
    if code is None:
        return response
    if request is not None and v2_envelope.is_v2(request.context.get("resourcePath")):
        return _as_v2_envelope(request, response)
    if code == "MethodNotAllowedError":
        return _method_not_allowed(request, response)
    return _as_envelope(code, request, response)
