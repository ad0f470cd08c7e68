"""The JSON Schemas of ``/v2``'s success answers, as ``GET /v2/openapi.json`` publishes them.

The summary and the suite are the vendored OpenWOP schemas (components ``EvalSummary``,
``AgentEvalSuite``); event payloads are the vendored ``eval.*`` definitions.
"""

from __future__ import annotations

import copy
from typing import Any

from chalicelib.openwop import schemas

REF = "#/components/schemas/{model}"
STRING = {"type": "string", "minLength": 1}
TIMESTAMP = {"type": ["string", "null"]}
MODES = {"type": "array", "items": {"type": "string"}}
STATUS = {"enum": ["queued", "running", "completed", "failed", "cancelled"]}
#: The paired verdict members ``regression`` carries beyond the schema (docs/openwop.md).
PAIRED = {
    "pairedTaskCount": {"type": "integer", "minimum": 0},
    "verdict": {"enum": ["improved", "regressed", "unchanged", "inconclusive"]},
    "improvedCount": {"type": "integer", "minimum": 0},
    "regressedCount": {"type": "integer", "minimum": 0},
    "pValue": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
}


def _closed(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }


def capability() -> dict[str, Any]:
    """``agents.evalSuite``: the capabilities excerpt plus RFC 0251 / RFC 0244's members."""
    schema = copy.deepcopy(schemas.capability_schema())
    schema["properties"]["baselineSelection"] = {"type": "boolean"}
    schema["properties"]["regressionVerdict"] = {"type": "boolean"}
    return schema


def summary() -> dict[str, Any]:
    """``EvalSummary`` with the paired verdict on ``regression`` (still closed)."""
    schema = copy.deepcopy(schemas.load(schemas.SUMMARY))
    schema["properties"]["regression"]["properties"].update(PAIRED)
    return schema


def event() -> dict[str, Any]:
    variants = [
        _closed(
            ["sequence", "type", "at", "payload"],
            {
                "sequence": {"type": "integer", "minimum": 1},
                "type": {"const": kind},
                "at": STRING,
                "payload": schemas.event_payload_schema(kind),
            },
        )
        for kind in schemas.EVENT_DEFS
    ]
    return {"oneOf": variants}


DISCOVERY = _closed(
    ["protocol", "host", "agents", "fixtures", "builtinAgents"],
    {
        "protocol": {"const": "openwop"},
        "host": STRING,
        "agents": _closed(["evalSuite"], {"evalSuite": {"$ref": REF.format(model="EvalSuite")}}),
        "fixtures": {"type": "array", "items": STRING},
        "builtinAgents": {"type": "array", "items": STRING},
    },
)
SUITE_REF = _closed(["suiteId", "version"], {"suiteId": STRING, "version": STRING})
VERSIONS = _closed(
    ["suiteId", "versions"],
    {
        "suiteId": STRING,
        "versions": {
            "type": "array",
            "items": _closed(
                ["version", "taskCount", "modes"],
                {"version": STRING, "taskCount": {"type": "integer"}, "modes": MODES},
            ),
        },
    },
)
CREATED = _closed(
    ["runId", "status", "eventsUrl"], {"runId": STRING, "status": STATUS, "eventsUrl": STRING}
)
RUN = _closed(
    ["runId", "mode", "status", "evalSuiteRef", "suiteId", "suiteVersion", "agentId"],
    {
        "runId": STRING,
        "mode": {"const": "eval"},
        "status": STATUS,
        "evalSuiteRef": STRING,
        "suiteId": STRING,
        "suiteVersion": STRING,
        "agentId": STRING,
        "evalModes": MODES,
        "baselineRunId": STRING,
        "tags": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object"},
        "createdAt": STRING,
        "startedAt": TIMESTAMP,
        "finishedAt": TIMESTAMP,
        "eventsUrl": STRING,
    },
)
EVENTS = _closed(
    ["data"], {"data": {"type": "array", "items": {"$ref": REF.format(model="RunEvent")}}}
)
SUITE = {"$ref": REF.format(model="AgentEvalSuite")}
SUMMARY = {"$ref": REF.format(model="EvalSummary")}
OPENAPI = {"type": "object"}


def components() -> dict[str, Any]:
    return {"EvalSuite": capability(), "EvalSummary": summary(), "RunEvent": event()}
