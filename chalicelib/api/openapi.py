"""OpenAPI 3.1, generated from the route registry and the pydantic models it names."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter

from chalicelib.api.routing import ROUTES, RouteSpec
from chalicelib.jsonvalues import json_schema
from chalicelib.settings import get_settings

REF = "#/components/schemas/{model}"
#: Request-side components are named apart from response ones: only they state the input
#: rules (:mod:`chalicelib.jsonvalues.json_schema`), which say nothing about what is answered.
INPUT_REF = "#/components/schemas/{model}.input"
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "meta"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "meta": {"type": "object"},
            },
        }
    },
}


def _schema_of(annotation: Any, components: dict[str, Any]) -> dict[str, Any]:
    schema = TypeAdapter(annotation).json_schema(ref_template=REF)
    components.update(schema.pop("$defs", {}))
    return schema


def _input_schema_of(annotation: Any, components: dict[str, Any]) -> dict[str, Any]:
    schema = TypeAdapter(annotation).json_schema(ref_template=INPUT_REF)
    for name, definition in schema.pop("$defs", {}).items():
        components[f"{name}.input"] = json_schema.tighten(definition)
    return dict(json_schema.tighten(schema))


def _parameters(spec: RouteSpec) -> list[dict[str, Any]]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", spec.path)
    ]
    query_schema = json_schema.tighten(spec.query.model_json_schema())
    required = set(query_schema.get("required", []))
    for name, prop in query_schema.get("properties", {}).items():
        params.append({"name": name, "in": "query", "required": name in required, "schema": prop})
    return params


#: What any route can refuse with, besides the codes of :func:`_error_responses`.
COMMON_ERRORS = {
    "400": "Validation failed (VALIDATION_FAILED, naming the field)",
    "404": "Not found, or not visible to this key (RESOURCE_NOT_FOUND)",
    "405": "Method not allowed on this path (METHOD_NOT_ALLOWED)",
    "413": "Body over the size limit (PAYLOAD_TOO_LARGE)",
    "415": "Body not application/json (UNSUPPORTED_MEDIA_TYPE)",
}
AUTH_ERRORS = {
    "401": "Missing or invalid key (UNAUTHORIZED)",
    "403": "Key not allowed here (FORBIDDEN, API_KEY_PROJECT_SCOPE)",
}
WRITE_ERRORS = {"409": "Conflict (NAME_CONFLICT, CONCURRENT_UPDATE, ...)"}


def _error_responses(spec: RouteSpec) -> dict[str, Any]:
    """Every error status the route can answer, each with the envelope's schema."""
    described = dict(COMMON_ERRORS)
    if not spec.public:
        described.update(AUTH_ERRORS)
    if spec.method in {"POST", "PUT", "PATCH", "DELETE"}:
        described.update(WRITE_ERRORS)
    described["default"] = "Any other error (INTERNAL_ERROR, ...), in the same envelope"
    envelope = {"application/json": {"schema": {"$ref": REF.format(model="Error")}}}
    return {
        status: {"description": text, "content": envelope} for status, text in described.items()
    }


def _operation(spec: RouteSpec, components: dict[str, Any]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": spec.operation_id,
        "summary": spec.summary,
        "tags": [spec.tag] if spec.tag else [],
        "parameters": _parameters(spec),
        "responses": _error_responses(spec),
    }
    if not spec.public:
        op["security"] = [{"bearer": []}]
    if spec.body is not None:
        body = spec.published_body() if spec.published_body else spec.body
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _input_schema_of(body, components)}},
        }
    elif spec.raw_body:
        text = {"schema": {"type": "string"}}
        op["requestBody"] = {"required": True, "content": dict.fromkeys(spec.raw_body, text)}
    success: dict[str, Any] = {"description": "OK"}
    if spec.response is not None and spec.status != 204:
        success["content"] = {"application/json": {"schema": _schema_of(spec.response, components)}}
    op["responses"][str(spec.status)] = success
    return op


def build_document() -> dict[str, Any]:
    """The document of this deployment (its plugins and python-agent allow-list)."""
    return _document(tuple(get_settings().python_agent_modules))


@lru_cache(maxsize=4)
def _document(python_agent_modules: tuple[str, ...]) -> dict[str, Any]:
    # The argument only keys the cache: the published agent bodies read the same setting.
    components: dict[str, Any] = {"Error": ERROR_SCHEMA, **json_schema.COMPONENTS}
    paths: dict[str, dict[str, Any]] = {}
    for spec in ROUTES:
        if spec.surface != "v1" or not spec.documented:
            continue
        paths.setdefault(spec.path, {})[spec.method.lower()] = _operation(spec, components)
    return {
        "openapi": "3.1.0",
        "info": {"title": "pawl", "version": "1.0.0"},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def reset_document_cache() -> None:
    """Forget the built documents (the composition root's reset)."""
    _document.cache_clear()
