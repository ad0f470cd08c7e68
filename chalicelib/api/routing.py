"""Declaring an endpoint: path, method, body/query models, response model, status.

Every route goes through :func:`endpoint`, which authenticates, parses and validates
the body and query with the same pydantic models the OpenAPI document is generated
from (:mod:`chalicelib.api.openapi`), calls the handler with a :class:`Call`, and
serializes its answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from chalice import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chalicelib import ids
from chalicelib.api import access as authorization
from chalicelib.api.access import Access
from chalicelib.api.auth import Caller, authenticate
from chalicelib.api.envelope import JSON_HEADERS, response_for
from chalicelib.errors import (
    PayloadTooLarge,
    ValidationFailed,
    not_found,
    validation_error_from_pydantic,
)
from chalicelib.iam.references import ReferenceField, reference_fields
from chalicelib.ids import ProjectId
from chalicelib.jsonvalues import json_input
from chalicelib.plugins.manager import plugins
from chalicelib.settings import get_settings
from chalicelib.store import pagination

B = TypeVar("B", bound=BaseModel)
Q = TypeVar("Q", bound=BaseModel)


class NoQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListQuery(BaseModel):
    """``?limit=`` and ``?cursor=`` or SOAT's ``?offset=`` (up to 10,000) on every list."""

    model_config = ConfigDict(extra="forbid")
    limit: int = Field(50, ge=1, le=100)
    cursor: str | None = Field(None, description="next_cursor of the previous page")
    offset: int = Field(
        0,
        ge=0,
        json_schema_extra={"maximum": pagination.MAX_OFFSET},
        description="items to skip (not with cursor; deeper pages: follow next_cursor)",
    )

    @model_validator(mode="after")
    def _one_position(self) -> ListQuery:
        given = self.offset if "offset" in self.model_fields_set else None
        pagination.check_window(self.cursor, given)
        return self

    def window(self) -> pagination.Window:
        return pagination.Window(self.limit, self.cursor, self.offset, counted=True)


class ProjectListQuery(ListQuery):
    project_id: ProjectId | None = None


class NamedListQuery(ProjectListQuery):
    """pawl adds ``?name=`` to the lists of resources a project names once (agents,
    datasets, evals): the page holds the one of that name, or nothing."""

    name: str | None = Field(
        None, min_length=1, max_length=200, description="Only the one of this exact name"
    )


@dataclass
class Call(Generic[B, Q]):
    """What a handler receives: the caller, the parsed body and query, the path params."""

    caller: Caller
    body: B
    query: Q
    path: dict[str, str]
    raw_body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """A handler's answer when the status or body is not the route's default."""

    body: Any
    status: int = 200


@dataclass(frozen=True)
class RouteSpec:
    path: str
    method: str
    name: str
    summary: str
    body: type[BaseModel] | None
    query: type[BaseModel]
    response: Any
    status: int
    tag: str
    public: bool
    #: The OpenAPI ``operationId`` (SOAT's where SOAT has the operation; ``verbNoun`` in
    #: camel case otherwise). ``pawl <operation-id in kebab case>`` is its CLI command.
    operation_id: str
    #: What the document publishes for the body when it is more exact than ``body`` (built
    #: from the plugin registry when the document is built): see ``plugin_schemas``.
    published_body: Callable[[], Any] | None = None
    #: The wire surface the route belongs to: ``v1`` (``/api/v1``) or ``v2`` (OpenWOP).
    #: Each surface has its own OpenAPI document and error envelope.
    surface: str = "v1"
    #: Media types of a body that is not one JSON object (the handler reads ``raw_body``).
    raw_body: tuple[str, ...] = ()
    #: False keeps the route out of the OpenAPI document (the inbound trigger webhook is
    #: called by external systems, not by API clients).
    documented: bool = True
    #: The handler itself: a formation deploy calls it as a REST call would reach it.
    handler: Callable[[Call[Any, Any]], Any] | None = None
    #: The IAM action the route performs and the SRN it acts on (``chalicelib.api.access``).
    access: Access = authorization.PUBLIC

    def references(self) -> list[ReferenceField]:
        """The body's reference fields: the models it validates with and publishes.

        The published models come from the plugin host and the settings (building them
        costs ~20 ms for an eval's): the table is kept until either is replaced.
        """
        built_from = (plugins(), get_settings())
        cached = _REFERENCE_TABLES.get((self.method, self.path))
        if cached is not None and all(a is b for a, b in zip(cached[0], built_from, strict=True)):
            return cached[1]
        published = self.published_body() if self.published_body is not None else None
        table = reference_fields(self.body, published)
        _REFERENCE_TABLES[(self.method, self.path)] = (built_from, table)
        return table

    def authorize_body(self, caller: Caller, body: Any, path: dict[str, str]) -> None:
        """Every resource the valid ``body`` names, authorized as ``caller``."""
        context = authorization.path_context(path)
        values = authorization.body_values(body)
        authorization.authorize_references(self.references, caller, values, context)

    @property
    def shape(self) -> authorization.Shape:
        """How the route refuses a caller without its action: list, read or write."""
        return authorization.shape_of(self.method, self.access)


#: How a surface other than ``/api/v1`` renders a failure (``/api/v1``'s own is
#: :func:`chalicelib.api.envelope.response_for`).
ErrorRenderer = Callable[[BaseException], Response]

ROUTES: list[RouteSpec] = []
#: ``(method, path)`` -> (what the table was built from, the table): RouteSpec.references.
_REFERENCE_TABLES: dict[tuple[str, str], tuple[tuple[Any, Any], list[ReferenceField]]] = {}


def reset_reference_tables() -> None:
    _REFERENCE_TABLES.clear()


def _serialize(body: Any) -> str:
    if body is None:
        return ""
    if isinstance(body, BaseModel):
        return body.model_dump_json()
    if isinstance(body, list | tuple):
        items = [b.model_dump(mode="json") if isinstance(b, BaseModel) else b for b in body]
        return json.dumps(items)
    return json.dumps(body)


def json_response(body: Any, status: int = 200) -> Response:
    if status == 204:
        return Response(body="", status_code=204, headers={})
    return Response(body=_serialize(body), status_code=status, headers=dict(JSON_HEADERS))


def _parse_body(raw: bytes | None, model: type[B]) -> B:
    if raw is not None and len(raw) > get_settings().max_body_bytes:
        raise PayloadTooLarge(
            f"request body is larger than {get_settings().max_body_bytes} bytes",
            limit=get_settings().max_body_bytes,
        )
    if not raw or not raw.strip():
        raw = b"{}"
    decoded = json_input.parse_body(raw)
    if not isinstance(decoded, dict):
        raise ValidationFailed("request body must be a JSON object", field="body")
    return parse_body(decoded, model)


def _raw_bytes(raw: str | bytes | None) -> bytes:
    if raw is None:
        return b""
    return raw.encode() if isinstance(raw, str) else raw


def _single_values(params: Any) -> dict[str, str]:
    """Query parameters, each given once: a repeated one is ambiguous, so refused (400)."""
    if not params:
        return {}
    repeated = getattr(params, "getlist", None)  # a plain dict names each parameter once
    for name in params:
        if repeated is not None and len(repeated(name)) > 1:
            raise ValidationFailed(f"query parameter {name} is given more than once", field=name)
    return dict(params)


def _parse_query(params: dict[str, str] | None, model: type[Q]) -> Q:
    json_input.check_strings(params or {})
    try:
        return model.model_validate(dict(params or {}))
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc) from exc


def _check_path(path_params: dict[str, str]) -> None:
    """A path id of the wrong shape names nothing: 404, before any read."""
    for name, value in path_params.items():
        kind = ids.PATH_PARAMETER_KINDS.get(name)
        if kind is not None and not ids.is_id(kind, value):
            raise not_found(kind, value)


def _authorized_query(
    spec: RouteSpec, caller: Caller, path: dict[str, str], raw: bytes, params: dict[str, str]
) -> Any:
    """The parsed query, once the caller is known to hold the route's action.

    A write is refused before its query or body is parsed; a GET's query is parsed first,
    since the project it names is the one whose listing (or usage) is checked.
    """
    if spec.method == "GET":
        parsed = _parse_query(params, spec.query)
        authorization.authorize(spec.access, spec.shape, caller, path, raw, parsed)
        return parsed
    authorization.authorize(spec.access, spec.shape, caller, path, raw)
    return _parse_query(params, spec.query)


def camel_case(snake: str) -> str:
    """``create_eval_run`` -> ``createEvalRun``."""
    head, *rest = snake.split("_")
    return head + "".join(word.capitalize() for word in rest)


def endpoint(
    bp: Blueprint,
    path: str,
    method: str,
    *,
    access: Access,
    body: type[BaseModel] | None = None,
    query: type[BaseModel] = NoQuery,
    response: Any = None,
    status: int = 200,
    summary: str = "",
    tag: str = "",
    published_body: Callable[[], Any] | None = None,
    surface: str = "v1",
    errors: ErrorRenderer | None = None,
    raw_body: tuple[str, ...] = (),
    documented: bool = True,
    operation_id: str = "",
) -> Callable[[Callable[[Call[Any, Any]], Any]], Callable[..., Response]]:
    """Register ``handler(call)`` as ``method path`` on ``bp``.

    ``errors`` renders every failure of the route (authentication, parsing, the handler)
    in the surface's own envelope; without it, the ``/api/v1`` envelope.
    ``raw_body``: the media types the route takes a body of that is not one JSON object
    (``body`` stays None; the handler parses ``call.raw_body`` itself).
    ``operation_id`` defaults to the handler's name in camel case (``list_runs`` ->
    ``listRuns``); name it when SOAT has the operation under another name.
    ``access``: the IAM action and the SRN the route acts on (required: no route escapes
    authorization; :data:`chalicelib.api.access.PUBLIC` for the few that take no key).
    """
    if not isinstance(access, Access):
        raise TypeError(f"{method} {path}: access must be a chalicelib.api.access.Access")

    def decorate(handler: Callable[[Call[Any, Any]], Any]) -> Callable[..., Response]:
        spec = RouteSpec(
            path=path,
            method=method,
            name=handler.__name__,
            summary=summary or (handler.__doc__ or "").strip().split("\n")[0],
            body=body,
            query=query,
            response=response,
            status=status,
            tag=tag,
            public=access.target == "public",
            published_body=published_body,
            surface=surface,
            raw_body=raw_body,
            documented=documented,
            operation_id=operation_id or camel_case(handler.__name__),
            handler=handler,
            access=access,
        )
        ROUTES.append(spec)

        render = errors or response_for

        def view(**path_params: str) -> Response:
            # Every exception becomes the surface's envelope here, so Chalice's own
            # handling of a view's exception (its {"Code", "Message"} shape) is never reached.
            try:
                return respond(path_params)
            except Exception as exc:
                return render(exc)

        def respond(path_params: dict[str, str]) -> Response:
            request = bp.current_request
            headers = dict(request.headers or {})
            caller = Caller(is_admin=False) if spec.public else authenticate(headers)
            raw = _raw_bytes(request.raw_body) if method in {"POST", "PUT", "PATCH"} else b""
            result = dispatch(spec, caller, path_params, request.query_params, raw, headers)
            if isinstance(result, Response):
                return result
            if isinstance(result, Reply):
                return json_response(result.body, result.status)
            return json_response(result, status)

        view.__name__ = f"{handler.__module__.rsplit('.', 1)[-1]}_{handler.__name__}"
        content_types = {"content_types": list(raw_body)} if raw_body else {}
        bp.route(path, methods=[method], **content_types)(view)
        return view

    return decorate


def dispatch(
    spec: RouteSpec,
    caller: Caller,
    path_params: dict[str, str],
    params: Any,
    raw: bytes = b"",
    headers: dict[str, str] | None = None,
) -> Any:
    """``spec``'s handler called as ``caller``, after every check the route makes: the path's
    id shapes, the route's action (its denial shape: empty page, 404 or 403), the query and
    body models, and the body's references. What the handler answers is returned as is;
    every refusal is raised. The REST view and the console both reach handlers only here.
    ``params``: the query (Chalice's multi-valued parameters, or a plain dict).
    """
    assert spec.handler is not None
    _check_path(path_params)
    try:
        parsed_query = _authorized_query(spec, caller, path_params, raw, _single_values(params))
    except authorization.EmptyList as denied:
        return empty_page(denied.query)
    parsed_body = _parse_body(raw, spec.body) if spec.body is not None else None
    spec.authorize_body(caller, parsed_body, path_params)
    call: Call[Any, Any] = Call(
        caller=caller,
        body=parsed_body,
        query=parsed_query,
        path=path_params,
        raw_body=raw or b"",
        headers=headers or {},
    )
    return spec.handler(call)


def route(method: str, path: str) -> RouteSpec:
    """The declared route ``method path`` (its blueprint must have been loaded)."""
    for spec in ROUTES:
        if spec.method == method and spec.path == path:
            return spec
    raise LookupError(f"no route {method} {path}")


def parse_body(decoded: dict[str, Any], model: type[B]) -> B:
    """``decoded`` checked by a route's body model, refusing as the route would (400)."""
    try:
        return model.model_validate(decoded)
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc) from exc


def empty_page(query: Any) -> dict[str, Any]:
    """The answer to a list the caller may not read: a page with nothing on it."""
    return page(pagination.Listing([], None, query.limit, query.offset, total=0))


def page(listing: pagination.Listing[Any]) -> dict[str, Any]:
    """A list's answer (``Page``): the items, where they sit in the whole, the next cursor."""
    return {
        "data": [
            i.model_dump(mode="json") if isinstance(i, BaseModel) else i for i in listing.items
        ],
        "total": listing.total,
        "limit": listing.limit,
        "offset": listing.offset,
        "next_cursor": listing.next_cursor,
    }
