"""``GET /v2/openapi.json``: the ``/v2`` routes, their bodies and the OpenWOP envelope."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from chalicelib.api.routing import ROUTES, RouteSpec
from chalicelib.api.v2 import responses as v2_responses
from chalicelib.api.v2.bodies import SuiteDocument
from chalicelib.jsonvalues import json_schema
from chalicelib.openwop import schemas

REF = "#/components/schemas/{model}"
ERROR = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "description": "a registered OpenWOP error code"},
        "message": {"type": "string", "minLength": 1},
        "details": {"type": "object"},
    },
}
ERRORS = {
    "400": "validation_error (or idempotency_key_invalid)",
    "401": "unauthenticated",
    "403": "forbidden: the admin key on a tenant surface",
    "404": "not_found (another tenant's resource reads the same)",
    "409": "version_conflict, idempotency_key_mismatch, idempotency_in_flight, run_state_conflict",
    "default": "internal_error",
}


def _inline_ids(schema: Any) -> Any:
    """``schema`` with every ``ids.schema.json`` reference replaced by what it stands for
    (the file is not part of the document, so a client could not resolve it)."""
    if isinstance(schema, list):
        return [_inline_ids(entry) for entry in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("ids.schema.json#/$defs/"):
        name = ref.rsplit("/", 1)[1]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**schemas.IDS_STAND_IN["$defs"][name], **rest}
    return {key: _inline_ids(value) for key, value in schema.items()}


def _body_schema(spec: RouteSpec, components: dict[str, Any]) -> dict[str, Any]:
    if spec.body is SuiteDocument:
        components["AgentEvalSuite"] = _inline_ids(schemas.load(schemas.SUITE))
        return {"$ref": REF.format(model="AgentEvalSuite")}
    assert spec.body is not None
    schema = TypeAdapter(spec.body).json_schema(ref_template=REF)
    components.update(schema.pop("$defs", {}))
    return dict(json_schema.tighten(schema))


def _operation(spec: RouteSpec, components: dict[str, Any]) -> dict[str, Any]:
    error = {"application/json": {"schema": {"$ref": REF.format(model="Error")}}}
    responses: dict[str, Any] = {
        status: {"description": text, "content": error} for status, text in ERRORS.items()
    }
    success: dict[str, Any] = {"description": "OK"}
    if isinstance(spec.response, dict):
        success["content"] = {"application/json": {"schema": _inline_ids(spec.response)}}
    responses[str(spec.status)] = success
    if spec.name == "register_suite":
        responses["200"] = {**success, "description": "the same content was registered before"}
    op: dict[str, Any] = {
        "operationId": f"v2_{spec.name}",
        "summary": spec.summary,
        "tags": [spec.tag],
        "parameters": [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in re.findall(r"{(\w+)}", spec.path)
        ],
        "responses": responses,
    }
    if spec.name == "create_run":
        op["parameters"].append(
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            }
        )
    if not spec.public:
        op["security"] = [{"bearer": []}]
    if spec.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _body_schema(spec, components)}},
        }
    return op


@cache
def build_document() -> dict[str, Any]:
    components: dict[str, Any] = {
        "Error": ERROR,
        **_inline_ids(v2_responses.components()),
    }
    paths: dict[str, dict[str, Any]] = {}
    for spec in ROUTES:
        if spec.surface == "v2":
            paths.setdefault(spec.path, {})[spec.method.lower()] = _operation(spec, components)
    return {
        "openapi": "3.1.0",
        "info": {"title": "pawl /v2 (OpenWOP eval runs)", "version": "2.0.0"},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
