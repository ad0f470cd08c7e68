"""OpenAPI 3.1, generated from the route registry and the pydantic models it names."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter

from chalicelib.api.routing import ROUTES, RouteSpec

REF = "#/components/schemas/{model}"
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


def _parameters(spec: RouteSpec) -> list[dict[str, Any]]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", spec.path)
    ]
    query_schema = spec.query.model_json_schema()
    required = set(query_schema.get("required", []))
    for name, prop in query_schema.get("properties", {}).items():
        params.append({"name": name, "in": "query", "required": name in required, "schema": prop})
    return params


def _operation(spec: RouteSpec, components: dict[str, Any]) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": spec.name,
        "summary": spec.summary,
        "tags": [spec.tag] if spec.tag else [],
        "parameters": _parameters(spec),
        "responses": {
            "default": {
                "description": "Error",
                "content": {"application/json": {"schema": {"$ref": REF.format(model="Error")}}},
            }
        },
    }
    if not spec.public:
        op["security"] = [{"bearer": []}]
    if spec.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _schema_of(spec.body, components)}},
        }
    success: dict[str, Any] = {"description": "OK"}
    if spec.response is not None and spec.status != 204:
        success["content"] = {"application/json": {"schema": _schema_of(spec.response, components)}}
    op["responses"][str(spec.status)] = success
    return op


@lru_cache(maxsize=1)
def build_document() -> dict[str, Any]:
    components: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for spec in ROUTES:
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
