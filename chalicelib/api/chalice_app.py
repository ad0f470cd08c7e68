"""The Chalice application class, with pawl's error envelope on every failure path.

Route views map their own errors (see :mod:`chalicelib.api.routing`); Chalice itself
still answers a wrong method, a body whose Content-Type the route does not take (415) and
a crash outside a view with its own ``{"Code", "Message"}`` shape. This subclass answers
the wrong method itself and turns any other Chalice-shaped error into the envelope
(:data:`CHALICE_CODES`), so the API has one error shape. (Unknown routes never reach
Lambda: API Gateway answers them with the gateway responses of
:mod:`chalicelib.infra.gateway_responses`; the local runtime's HTTP front uses the same table.)
"""

from __future__ import annotations

from typing import Any

from chalice import Chalice, Response
from chalice.app import RestAPIEventHandler

from chalicelib.api.envelope import error_response, response_for
from chalicelib.api.v2 import envelope as v2_envelope

#: Chalice's own error codes -> the envelope's.
CHALICE_CODES = {
    "UnsupportedMediaType": "UNSUPPORTED_MEDIA_TYPE",
    "MethodNotAllowedError": "METHOD_NOT_ALLOWED",
    "BadRequest": "BAD_REQUEST",
    "InternalServerError": "INTERNAL_ERROR",
}


def _as_envelope(response: Response, path: str | None = None) -> Response:
    """A Chalice-shaped error body as the envelope (``/v2``'s on a ``/v2`` path); any
    other response unchanged."""
    body = response.body
    if response.status_code < 400 or not isinstance(body, dict) or set(body) != {"Code", "Message"}:
        return response
    if v2_envelope.is_v2(path):
        answer = v2_envelope.render_code(response.status_code, str(body["Message"]))
        answer.headers = {**(response.headers or {}), **answer.headers}
        return answer
    code = CHALICE_CODES.get(str(body["Code"]), "INTERNAL_ERROR")
    if code == "UNSUPPORTED_MEDIA_TYPE":
        message = f"{body['Message']}; send the body as application/json"
    else:
        message = str(body["Message"])
    enveloped = error_response(response.status_code, code, message)
    enveloped.headers = {**(response.headers or {}), **enveloped.headers}
    return enveloped


class _PawlRestHandler(RestAPIEventHandler):
    def _main_rest_api_handler(self, event: Any, context: Any) -> Response:
        resource_path = event.get("requestContext", {}).get("resourcePath")
        method = event.get("requestContext", {}).get("httpMethod")
        routes = self.routes.get(resource_path or "", {})
        if resource_path is not None and routes and method not in routes:
            if v2_envelope.is_v2(resource_path):
                return v2_envelope.render_code(405, f"{method} is not allowed on {resource_path}")
            return error_response(
                405,
                "METHOD_NOT_ALLOWED",
                f"{method} is not allowed on {resource_path}",
                {"allowed": sorted(routes)},
            )
        return _as_envelope(super()._main_rest_api_handler(event, context), resource_path)

    def _get_view_function_response(self, view_function: Any, function_args: Any) -> Response:
        try:
            response = view_function(**function_args)
        except Exception as exc:
            return response_for(exc)
        if not isinstance(response, Response):
            response = Response(body=response)
        return response


class PawlChalice(Chalice):
    def __call__(self, event: Any, context: Any) -> dict[str, Any]:
        self.lambda_context = context
        handler = _PawlRestHandler(
            self.routes,
            self.api,
            self.log,
            self.debug,
            middleware_handlers=self._get_middleware_handlers("http"),
        )
        self.current_request = handler.create_request_object(event, context)
        result: dict[str, Any] = handler(event, context)
        return result
