"""schemathesis against ``/v2/openapi.json`` on a real HTTP front (see the ``/api/v1`` one).

Positive data acceptance is not checked here: a schema-valid ``createRun`` names a suite
and an agent that exist only when the caller registered them (references the document
cannot state), so a valid-looking body may rightly be a 400. Every other check is on: no
5xx, answers valid against their published schemas, documented statuses and content
types, and every schema-invalid request refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from chalicelib import wiring
from chalicelib.api.v2.openapi import build_document
from tests.support.fuzz import FUZZ_SETTINGS, MAX_EXAMPLES
from tests.support.http_front import app_over_http, project_over_http

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]

wiring.blueprints()
schema = schemathesis.openapi.from_dict(build_document())
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True)


@pytest.fixture(scope="module")
def live() -> Iterator[dict[str, Any]]:
    with app_over_http() as server:
        _, key = project_over_http(server.url, "fuzz")
        yield {"url": server.url, "key": key}


@schema.parametrize()
@FUZZ_SETTINGS
def test_v2_conforms_to_its_schema(case: Any, live: dict[str, Any]) -> None:
    case.call_and_validate(
        base_url=live["url"], headers={"Authorization": f"Bearer {live['key']}"}, checks=CHECKS
    )
