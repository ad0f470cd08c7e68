"""The Chalice application class, with pawl's error envelope on every failure path.

Route views map their own errors (see :mod:`chalicelib.api.routing`); Chalice itself
still answers a wrong method and a crash outside a view with its own shapes. This
subclass routes both through :mod:`chalicelib.api.envelope`, so the API has one
error shape. (Unknown routes never reach Lambda: API Gateway answers them; ``infra/``
sets its gateway response and the local runtime's HTTP front does the same.)
"""

from __future__ import annotations

from typing import Any

from chalice import Chalice, Response
from chalice.app import RestAPIEventHandler

from chalicelib.api.envelope import error_response, response_for


class _PawlRestHandler(RestAPIEventHandler):
    def _main_rest_api_handler(self, event: Any, context: Any) -> Response:
        resource_path = event.get("requestContext", {}).get("resourcePath")
        method = event.get("requestContext", {}).get("httpMethod")
        routes = self.routes.get(resource_path or "", {})
        if resource_path is not None and routes and method not in routes:
            return error_response(
                405,
                "METHOD_NOT_ALLOWED",
                f"{method} is not allowed on {resource_path}",
                {"allowed": sorted(routes)},
            )
        return super()._main_rest_api_handler(event, context)

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
