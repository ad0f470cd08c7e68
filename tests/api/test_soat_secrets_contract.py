"""SOAT's Secrets OpenAPI document as a contract: pawl has each of its operations (same
method, path and operation id), answers with the document's success status, and each
answer validates against the document's response schema.

The document is reference material outside the project, beside the evaluations document
(``tests/support/soat_spec.SPEC_FILE``): the test is skipped where it is absent.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from openapi_schema_validator import OAS30ReadValidator

from chalicelib import wiring
from tests.support.soat_spec import SPEC_FILE

SECRETS_SPEC = SPEC_FILE.parent / "soat" / "secrets.openapi.yaml"
pytestmark = pytest.mark.skipif(
    not SECRETS_SPEC.exists(), reason=f"SOAT's secrets document is not at {SECRETS_SPEC}"
)
METHODS = ("get", "post", "put", "patch", "delete")


def _document() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(SECRETS_SPEC.read_text())
    return loaded


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                found[item[method]["operationId"]] = (method, path, item[method])
    return found


def test_pawl_has_every_operation_under_the_same_name() -> None:
    ours = _operations(wiring.openapi_document())
    for operation_id, (method, path, _) in _operations(_document()).items():
        assert operation_id in ours, operation_id
        assert ours[operation_id][:2] == (method, path), operation_id


def _check(operation: dict[str, Any], response: Any) -> None:
    expected = str(response.status)
    assert expected in operation["responses"], (operation["operationId"], response)
    content = operation["responses"][expected].get("content")
    if content:
        schema = content["application/json"]["schema"]
        OAS30ReadValidator(schema).validate(response.json)


def test_every_answer_has_the_documents_status_and_shape(api: Any, project: dict[str, Any]) -> None:
    operations = {k: v[2] for k, v in _operations(_document()).items()}
    body = {"project_id": project["id"], "name": "DATABASE_PASSWORD", "value": "supersecret"}
    created = api.post("/api/v1/secrets", body)
    _check(operations["createSecret"], created)
    path = f"/api/v1/secrets/{created.json['id']}"
    _check(operations["listSecrets"], api.get(f"/api/v1/secrets?project_id={project['id']}"))
    _check(operations["getSecret"], api.get(path))
    _check(operations["updateSecret"], api.request("PATCH", path, {"value": "rotated"}))
    _check(operations["deleteSecret"], api.request("DELETE", path))
    assert api.get(path).status == 404
