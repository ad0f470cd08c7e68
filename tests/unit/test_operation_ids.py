"""OpenAPI operationIds: SOAT's for SOAT's operations, the same style for pawl's own."""

from __future__ import annotations

import re
from typing import Any

import yaml

from chalicelib import wiring
from tests.support.soat_spec import spec_path

#: SOAT's evaluations module (soat-evaluations.openapi.yaml), by method and path shape.
SOAT_OPERATIONS = {
    ("GET", "/api/v1/datasets"): "listDatasets",
    ("POST", "/api/v1/datasets"): "createDataset",
    ("GET", "/api/v1/datasets/{}"): "getDataset",
    ("PUT", "/api/v1/datasets/{}"): "updateDataset",
    ("DELETE", "/api/v1/datasets/{}"): "deleteDataset",
    ("GET", "/api/v1/datasets/{}/items"): "listDatasetItems",
    ("POST", "/api/v1/datasets/{}/items"): "createDatasetItem",
    ("POST", "/api/v1/datasets/{}/items/from-generation"): "createDatasetItemFromGeneration",
    ("PUT", "/api/v1/datasets/{}/items/{}"): "updateDatasetItem",
    ("DELETE", "/api/v1/datasets/{}/items/{}"): "deleteDatasetItem",
    ("GET", "/api/v1/evals"): "listEvals",
    ("POST", "/api/v1/evals"): "createEval",
    ("GET", "/api/v1/evals/{}"): "getEval",
    ("PUT", "/api/v1/evals/{}"): "updateEval",
    ("DELETE", "/api/v1/evals/{}"): "deleteEval",
    ("GET", "/api/v1/evals/{}/runs"): "listEvalRuns",
    ("POST", "/api/v1/evals/{}/runs"): "startEvalRun",
    ("GET", "/api/v1/evals/{}/runs/{}"): "getEvalRun",
    ("GET", "/api/v1/evals/{}/runs/{}/results"): "listEvalResults",
    ("POST", "/api/v1/evals/{}/runs/{}/cancel"): "cancelEvalRun",
}
#: In ../shared/spec beside the repository; absent on a fresh clone (the table above stands in).
SPEC_FILE = spec_path("soat-evaluations.openapi.yaml")
METHODS = ("get", "post", "put", "patch", "delete")


def _operation_ids(document: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(METHOD, path with its parameter names blanked) -> operationId."""
    found = {}
    for path, item in document["paths"].items():
        shape = re.sub(r"{\w+}", "{}", path)
        for method in METHODS:
            if method in item:
                found[(method.upper(), shape)] = item[method]["operationId"]
    return found


def test_the_table_is_soats_own() -> None:
    if SPEC_FILE.is_file():
        assert _operation_ids(yaml.safe_load(SPEC_FILE.read_text())) == SOAT_OPERATIONS


def test_every_soat_operation_has_soats_operation_id() -> None:
    pawl = _operation_ids(wiring.openapi_document())
    assert {op: pawl.get(op) for op in SOAT_OPERATIONS} == SOAT_OPERATIONS


def test_pawls_own_operation_ids_are_unique_and_in_soats_style() -> None:
    ids = list(_operation_ids(wiring.openapi_document()).values())
    assert len(ids) == len(set(ids))
    for operation_id in ids:  # lowerCamelCase: verb first (listAgents, getHealth, fireTrigger)
        assert re.fullmatch(r"[a-z]+(?:[A-Z0-9][a-z0-9]*)+", operation_id), operation_id


#: SOAT's agents module (soat/agents.openapi.yaml): the operations pawl serves. (Its
#: generation routes are not pawl's: pawl's one generate is ``generateAgentResponse``.)
SOAT_AGENT_OPERATIONS = {
    ("GET", "/api/v1/agents"): "listAgents",
    ("POST", "/api/v1/agents"): "createAgent",
    ("GET", "/api/v1/agents/{}"): "getAgent",
    ("PUT", "/api/v1/agents/{}"): "updateAgent",
    ("PATCH", "/api/v1/agents/{}"): "patchAgent",
    ("DELETE", "/api/v1/agents/{}"): "deleteAgent",
    ("GET", "/api/v1/agents/{}/versions"): "listAgentVersions",
    ("GET", "/api/v1/agents/{}/versions/{}"): "getAgentVersion",
    ("POST", "/api/v1/agents/{}/versions/{}/restore"): "restoreAgentVersion",
    ("PUT", "/api/v1/agents/{}/release"): "setAgentRelease",
    ("POST", "/api/v1/agents/{}/release/promote"): "promoteAgentRelease",
    ("POST", "/api/v1/agents/{}/release/abort"): "abortAgentRelease",
}
AGENTS_SPEC_FILE = spec_path("soat/agents.openapi.yaml")


def test_the_agents_operations_pawl_serves_have_soats_operation_ids() -> None:
    pawl = _operation_ids(wiring.openapi_document())
    assert {op: pawl.get(op) for op in SOAT_AGENT_OPERATIONS} == SOAT_AGENT_OPERATIONS
    if AGENTS_SPEC_FILE.is_file():
        soat = _operation_ids(yaml.safe_load(AGENTS_SPEC_FILE.read_text()))
        assert {op: soat.get(op) for op in SOAT_AGENT_OPERATIONS} == SOAT_AGENT_OPERATIONS
