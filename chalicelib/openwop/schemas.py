"""The vendored OpenWOP JSON Schemas (``schemas/``) and validators over them.

The schemas reference ``ids.schema.json``, which the spec material does not include;
:data:`IDS_STAND_IN` resolves the ids it names as non-empty strings.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).parent / "schemas"
SUITE = "agent-eval-suite.schema.json"
SUMMARY = "eval-summary.schema.json"
ERROR_ENVELOPE = "error-envelope.schema.json"
EVENT_PAYLOADS = "run-event-payloads.eval-defs.excerpt.json"
CAPABILITY = "capabilities.schema.agents.evalSuite.excerpt.json"
#: Event type -> its payload definition in :data:`EVENT_PAYLOADS`.
EVENT_DEFS = {
    "eval.started": "evalStarted",
    "eval.scored": "evalScored",
    "eval.completed": "evalCompleted",
}
_ID = {"type": "string", "minLength": 1}
IDS_STAND_IN: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://openwop.dev/spec/v2/ids.schema.json",
    "$defs": {"runId": _ID, "agentId": _ID, "nodeId": _ID, "eventId": _ID},
}


@cache
def load(name: str) -> dict[str, Any]:
    """One vendored schema file as JSON."""
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / name).read_text())
    return loaded


IDS_URI = "https://openwop.dev/spec/v2/ids.schema.json"


def _registry() -> Registry[Any]:
    resource: Resource[Any] = Resource.from_contents(IDS_STAND_IN)
    return Registry().with_resources([(IDS_URI, resource), ("ids.schema.json", resource)])


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A 2020-12 validator of ``schema`` that resolves the ids stand-in."""
    return Draft202012Validator(schema, registry=_registry())


@cache
def suite_validator() -> Draft202012Validator:
    return validator(load(SUITE))


def event_payload_schema(event_type: str) -> dict[str, Any]:
    """The payload schema of one ``eval.*`` event type."""
    return dict(load(EVENT_PAYLOADS)["$defs"][EVENT_DEFS[event_type]])


def capability_schema() -> dict[str, Any]:
    """``agents.evalSuite`` as the capabilities schema declares it (excerpt)."""
    return dict(load(CAPABILITY)["evalSuite"])
