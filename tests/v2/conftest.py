"""Fixtures of the ``/v2`` (OpenWOP) tests: two tenants, schema checks, run draining."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from chalicelib.openwop import schemas
from tests.conftest import Api

PAIRED_FIELDS = {
    "pairedTaskCount": {"type": "integer", "minimum": 0},
    "verdict": {"enum": ["improved", "regressed", "unchanged", "inconclusive"]},
    "improvedCount": {"type": "integer", "minimum": 0},
    "regressedCount": {"type": "integer", "minimum": 0},
    "pValue": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    "passRateDeltaInterval": {
        "type": "object",
        "required": ["low", "high", "level", "method"],
        "additionalProperties": False,
        "properties": {
            "low": {"type": "number", "minimum": -1, "maximum": 1},
            "high": {"type": "number", "minimum": -1, "maximum": 1},
            "level": {"type": "number"},
            "method": {"const": "newcombe_hybrid_score"},
        },
    },
    "pairedTasksNeeded": {"type": ["integer", "null"], "minimum": 1},
    "pairedScoreDelta": {"type": "number", "minimum": -1, "maximum": 1},
    "pairedScoreDeltaInterval": {
        "type": ["object", "null"],
        "required": ["low", "high", "level", "method"],
        "additionalProperties": False,
        "properties": {
            "low": {"type": "number"},
            "high": {"type": "number"},
            "level": {"type": "number"},
            "method": {"const": "paired_t"},
        },
    },
    "signedRank": {
        "type": "object",
        "required": ["statistic", "pValue", "method", "n"],
        "additionalProperties": False,
        "properties": {
            "statistic": {"type": "number", "minimum": 0},
            "pValue": {"type": "number", "minimum": 0, "maximum": 1},
            "method": {"enum": ["exact", "exact_permutation", "normal_approximation"]},
            "n": {"type": "integer", "minimum": 0},
        },
    },
}


def summary_validator() -> Draft202012Validator:
    """``eval-summary.schema.json`` with the paired fields of the issue on ``regression``
    (still closed): the one documented extension (``docs/openwop.md``)."""
    schema = copy.deepcopy(schemas.load(schemas.SUMMARY))
    schema["properties"]["regression"]["properties"].update(PAIRED_FIELDS)
    return schemas.validator(schema)


def assert_summary(body: Any) -> None:
    errors = [e.message for e in summary_validator().iter_errors(body)]
    assert errors == [], errors


def assert_events(events: list[dict[str, Any]]) -> None:
    sequences = [e["sequence"] for e in events]
    assert sequences == sorted(set(sequences)), sequences
    for event in events:
        assert set(event) == {"sequence", "type", "at", "payload"}
        validator = schemas.validator(schemas.event_payload_schema(event["type"]))
        problems = [e.message for e in validator.iter_errors(event["payload"])]
        assert problems == [], (event, problems)


def assert_envelope(response: Any, status: int, code: str) -> None:
    assert response.status == status, response
    envelope = schemas.validator(schemas.load(schemas.ERROR_ENVELOPE))
    assert list(envelope.iter_errors(response.json)) == [], response.json
    assert response.json["error"] == code, response.json


def _tenant(api: Api, name: str) -> str:
    project = api.post("/api/v1/projects", {"name": name}).json
    return api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "k"}).json["key"]


@pytest.fixture
def tenant_a(api: Api) -> Api:
    return api.as_key(_tenant(api, "tenant-a"))


@pytest.fixture
def tenant_b(api: Api) -> Api:
    return api.as_key(_tenant(api, "tenant-b"))


@pytest.fixture
def drain(app: Any) -> Callable[[], None]:
    """Run every queued message through the app's workers (as Lambda would)."""
    from tests.support.drain import drain_queues

    def run() -> None:
        drain_queues(app)

    return run


def suite(
    suite_id: str = "acme.tests.evals.basic",
    version: str = "1.0.0",
    tasks: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A small valid suite (echo-agent friendly: each task expects its input back)."""
    document: dict[str, Any] = {
        "suiteId": suite_id,
        "version": version,
        "modes": ["golden", "regression"],
        "tasks": tasks
        or [
            {
                "taskId": "one",
                "input": "hello",
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "hello"}},
            }
        ],
    }
    document.update(extra)
    return document
