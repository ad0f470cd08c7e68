"""SOAT's evaluations OpenAPI document as a contract: its operations, examples and schemas.

The document is reference material kept outside the project, in ``../shared/spec``
beside the repository (:data:`SPEC_DIR`; ``PAWL_SPEC_DIR`` names another directory,
``PAWL_SOAT_SPEC`` another OpenAPI file); nothing of it is copied here. Every test that
reads the reference material finds it through :func:`spec_path`. It refers to a
sibling ``metadata.yaml`` for its metadata bags, which the reference material does not
include: :data:`METADATA_BAGS` stands in for it with what the module page says a bag is
(a JSON object; the nullable one may be null).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from openapi_schema_validator import OAS30ReadValidator, oas30_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

#: The repository's root (this file is ``tests/support/soat_spec.py``).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Where the reference material lives: ``../shared/spec`` beside the repository.
SPEC_DIR = Path(os.environ.get("PAWL_SPEC_DIR") or REPO_ROOT.parent / "shared" / "spec")


def spec_path(relative: str) -> Path:
    """A file of the reference material (it may be absent: a fresh clone has none)."""
    return SPEC_DIR / relative


SPEC_FILE = Path(os.environ.get("PAWL_SOAT_SPEC") or spec_path("soat-evaluations.openapi.yaml"))
#: SOAT's agents module document (versions and releases; no external references).
AGENTS_SPEC_FILE = spec_path("soat/agents.openapi.yaml")
_BASE = "https://soat.invalid/spec/"
_DOCUMENT_URI = _BASE + "soat-evaluations.openapi.yaml"
METADATA_BAGS = {
    "components": {
        "schemas": {
            "MetadataBag": {"type": "object"},
            "NullableMetadataBag": {"type": "object", "nullable": True},
        }
    }
}
METHODS = ("get", "post", "put", "patch", "delete")
#: A value per JSON type, for a required field the document gives no example of.
_PLAIN = {"string": "example", "integer": 1, "number": 0.5, "boolean": True}


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    #: The success status the document declares ("200", "201", "204").
    status: int
    parameters: tuple[dict[str, Any], ...]
    request_schema: dict[str, Any] | None
    #: JSON pointer (in the document) of the success response's schema, if it has one.
    response_pointer: str | None


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Spec:
    def __init__(self, document: dict[str, Any], uri: str = _DOCUMENT_URI) -> None:
        self.document = document
        self.uri = uri
        self.registry: Registry[Any] = Registry().with_resources(
            [
                (uri, Resource.from_contents(document, default_specification=DRAFT4)),
                (_BASE + "metadata.yaml", Resource.from_contents(METADATA_BAGS, DRAFT4)),
            ]
        )

    def operations(self) -> list[Operation]:
        found = []
        for path, item in self.document["paths"].items():
            for method in METHODS:
                if method in item:
                    found.append(self._operation(path, method, item[method]))
        return found

    def _operation(self, path: str, method: str, op: dict[str, Any]) -> Operation:
        status = next(code for code in op["responses"] if code.startswith("2"))
        success = op["responses"][status]
        pointer = None
        if "content" in success:
            where = ["paths", _escape(path), method, "responses", status, "content"]
            pointer = "/".join(["#", *where, _escape("application/json"), "schema"])
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
        return Operation(
            op["operationId"],
            method.upper(),
            path,
            int(status),
            tuple(op.get("parameters", ())),
            body.get("schema"),
            pointer,
        )

    def response_errors(self, operation: Operation, body: Any) -> list[tuple[str, str, str]]:
        """(JSON path, failed keyword, message) of each way ``body`` breaks the schema."""
        assert operation.response_pointer is not None
        return self.schema_errors(operation.response_pointer, body)

    def schema_errors(self, pointer: str, body: Any) -> list[tuple[str, str, str]]:
        """:meth:`response_errors` against the schema at ``pointer`` (``#/components/...``)."""
        schema = {"$ref": self.uri + pointer}
        validator = OAS30ReadValidator(
            schema, registry=self.registry, format_checker=oas30_format_checker
        )
        return [
            ("/".join(str(p) for p in error.absolute_path), str(error.validator), error.message)
            for error in validator.iter_errors(body)
        ]

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with a top-level ``$ref`` followed (within the document only)."""
        while "$ref" in schema and schema["$ref"].startswith("#/"):
            node: Any = self.document
            for token in schema["$ref"][2:].split("/"):
                node = node[token.replace("~1", "/").replace("~0", "~")]
            schema = node
        return schema

    def example(self, schema: dict[str, Any]) -> Any:
        """A value of ``schema`` made of the document's own examples where it gives them.

        An object gets its properties that carry an example and its required ones; a
        union its first choice; a required field with no example a plain value of its type.
        """
        schema = self.resolve(schema)
        if "example" in schema:
            return schema["example"]
        if "allOf" in schema:
            return self.example(schema["allOf"][0])
        if "oneOf" in schema:
            return self.example(schema["oneOf"][0])
        if "enum" in schema:
            return schema["enum"][0]
        if schema.get("type") == "array":
            return [self.example(schema["items"])]
        if schema.get("type") == "object" or "properties" in schema:
            required = set(schema.get("required", ()))
            return {
                name: self.example(prop)
                for name, prop in schema.get("properties", {}).items()
                if name in required or "example" in self.resolve(prop)
            }
        return _PLAIN.get(schema.get("type", "string"), "example")


def load(path: Path = SPEC_FILE) -> Spec | None:
    """The document at ``path``, or None where it is not on disk (a fresh clone)."""
    if not path.is_file():
        return None
    return Spec(yaml.safe_load(path.read_text()), _BASE + path.name)


def load_document(relative: str) -> Spec | None:
    """Another OpenAPI document of the reference material (``soat/generations.openapi.yaml``),
    or None where it is not on disk."""
    return load(spec_path(relative))
