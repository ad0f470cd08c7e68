"""The resource types a formation may declare, each reached through its REST routes.

An entry names the routes of one resource type; creating, reading, updating and deleting
a declared resource calls those routes' handlers with a caller scoped to the formation's
project, so a formation validates, refuses and writes exactly as the REST API does (and a
foreign id reads as missing). The registry is filled by the composition root
(:func:`chalicelib.wiring.build`, :mod:`chalicelib.formations.types`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from chalicelib import ids
from chalicelib.api import access as authorization
from chalicelib.api.auth import Caller
from chalicelib.api.routing import Call, Reply, parse_body, route
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.formations.types import ResourceType, resource_type

__all__ = ["ResourceType", "check_shape", "create", "delete", "read", "resource_type", "update"]


def acting_caller(caller: Caller, project_id: str) -> Caller:
    """The caller every formation call acts as: the formation's project and nothing else,
    under the requester's policies (the admin key's deploy: the whole project)."""
    return Caller(
        is_admin=False, project_id=project_id, key_id=caller.key_id, policies=caller.policies
    )


def _body_model(method: str, path: str) -> type[BaseModel] | None:
    return route(method, path).body


def split_properties(
    rtype: ResourceType, properties: Mapping[str, Any], field_name: str
) -> tuple[str | None, dict[str, Any]]:
    """``(parent id, body fields)``; ``project_id`` is the formation's, never a property."""
    body = dict(properties)
    if "project_id" in body:
        raise ValidationFailed(
            "project_id is not a property: a formation's resources are in its project",
            field=f"{field_name}.project_id",
        )
    if rtype.parent is None:
        return None, body
    parent = body.pop(rtype.parent, None)
    if not isinstance(parent, str) or not ids.is_id(ids.PATH_PARAMETER_KINDS[rtype.parent], parent):
        raise ValidationFailed(
            f"{rtype.parent} is required: the id of a {rtype.parent.removesuffix('_id')}",
            field=f"{field_name}.{rtype.parent}",
        )
    return parent, body


def _create_body(model: type[BaseModel], body: dict[str, Any], project_id: str) -> dict[str, Any]:
    return {**body, "project_id": project_id} if "project_id" in model.model_fields else body


def check_shape(rtype: ResourceType, properties: Mapping[str, Any], field_name: str) -> None:
    """400 when the create route would refuse these properties' shape (nothing is written)."""
    _, body = split_properties(rtype, properties, field_name)
    model = _body_model("POST", rtype.collection)
    assert model is not None
    placeholder = ids.new_id("project")
    try:
        parse_body(_create_body(model, body, placeholder), model)
    except ValidationFailed as exc:
        where = exc.meta.get("field", "body")
        raise ValidationFailed(
            f"{field_name}: {exc.message}",
            field=f"{field_name}.{where}",
            errors=exc.meta.get("errors"),
        ) from None


def _answer(result: Any) -> dict[str, Any]:
    if isinstance(result, Reply):
        result = result.body
    if isinstance(result, BaseModel):
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped
    return dict(result or {})


def _call(
    method: str,
    path: str,
    acting: Caller,
    params: dict[str, str],
    body: dict[str, Any] | None,
    query_params: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The route's handler called as ``acting``, authorized as a REST call would be."""
    spec = route(method, path)
    assert spec.handler is not None
    authorization.require(spec.access, acting, params)
    parsed = parse_body(body or {}, spec.body) if spec.body is not None else None
    spec.authorize_body(acting, parsed, params)
    query = spec.query.model_validate(dict(query_params or {}))
    call: Call[Any, Any] = Call(acting, parsed, query, params)
    return _answer(spec.handler(call))


def check_allowed(rtype: ResourceType, acting: Caller, parent: str | None) -> None:
    """403 unless ``acting`` may create ``rtype`` (under ``parent``): before any write."""
    authorization.require(route("POST", rtype.collection).access, acting, rtype.path(parent))


def create(rtype: ResourceType, acting: Caller, properties: Mapping[str, Any]) -> dict[str, Any]:
    parent, body = split_properties(rtype, properties, "properties")
    model = _body_model("POST", rtype.collection)
    assert model is not None and acting.project_id is not None
    return _call(
        "POST",
        rtype.collection,
        acting,
        rtype.path(parent),
        _create_body(model, body, acting.project_id),
    )


def read(
    rtype: ResourceType, acting: Caller, parent: str | None, physical_id: str
) -> dict[str, Any] | None:
    """The resource as its GET route answers it, or None when it is gone."""
    try:
        return _call("GET", rtype.item, acting, rtype.path(parent, physical_id), None)
    except NotFound:
        return None


def update(
    rtype: ResourceType,
    acting: Caller,
    parent: str | None,
    physical_id: str,
    properties: Mapping[str, Any],
) -> dict[str, Any]:
    new_parent, body = split_properties(rtype, properties, "properties")
    if rtype.parent is not None and new_parent != parent:
        raise ValidationFailed(
            f"{rtype.parent} is immutable: {rtype.name} {physical_id!r} belongs to {parent!r}. "
            f"Declare a new {rtype.name} instead.",
            field=f"properties.{rtype.parent}",
        )
    return _call(rtype.update_method, rtype.item, acting, rtype.path(parent, physical_id), body)


def delete(rtype: ResourceType, acting: Caller, parent: str | None, physical_id: str) -> None:
    """Delete the resource; one already gone is deleted (idempotent)."""
    try:
        path = rtype.path(parent, physical_id)
        _call("DELETE", rtype.item, acting, path, None, rtype.delete_query)
    except NotFound:
        return


#: Kinds of id a property may name literally, and the route that reads one (tenancy check).
REFERENCE_ROUTES = {
    "agent": "/api/v1/agents/{agent_id}",
    "dataset": "/api/v1/datasets/{dataset_id}",
    "eval": "/api/v1/evals/{eval_id}",
    "webhook": "/api/v1/webhooks/{webhook_id}",
    "trigger": "/api/v1/triggers/{trigger_id}",
    "tool": "/api/v1/tools/{tool_id}",
    "ai_provider": "/api/v1/ai-providers/{provider_id}",
    "decider": "/api/v1/deciders/{decider_id}",
    "secret": "/api/v1/secrets/{secret_id}",
}


def _path_param(path: str) -> str:
    return path.rsplit("{", 1)[1].rstrip("}")


def _names_an_id(key: str) -> bool:
    return key.endswith("_id") or key.endswith("_ids")


def literal_ids(value: Any, field_name: str, key: str = "") -> list[tuple[str, str, str]]:
    """Every ``(field, kind, id)`` a ``*_id`` / ``*_ids`` property names literally.

    Only those keys: a dataset item's input text that happens to look like an id is text.
    """
    if isinstance(value, str):
        if not _names_an_id(key):
            return []
        return [(field_name, kind, value) for kind in REFERENCE_ROUTES if ids.is_id(kind, value)]
    if isinstance(value, list):
        found: list[tuple[str, str, str]] = []
        for index, child in enumerate(value):
            found += literal_ids(child, f"{field_name}.{index}", key)
        return found
    if isinstance(value, dict):
        found = []
        for child_key, child in value.items():
            found += literal_ids(child, f"{field_name}.{child_key}", str(child_key))
        return found
    return []


def check_reference(acting: Caller, field_name: str, kind: str, value: str) -> None:
    """400 when ``value`` names no ``kind`` of the project (another project's reads as missing)."""
    path = REFERENCE_ROUTES[kind]
    try:
        _call("GET", path, acting, {_path_param(path): value}, None)
    except NotFound:
        raise ValidationFailed(
            f"{kind} {value} not found in this project", field=field_name, id=value
        ) from None
