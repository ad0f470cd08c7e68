"""The ``/v2`` routes (OpenWOP): discovery, suites, runs, events, summaries, OpenAPI.

Every route authenticates a project API key (the tenant is the key's project; the admin
key is refused: ``/v2`` is a tenant surface), takes a closed body and answers failures in
the OpenWOP envelope.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint

from chalicelib.api.access import PUBLIC, on_project
from chalicelib.api.auth import Caller
from chalicelib.api.routing import Call, Reply, endpoint
from chalicelib.api.v2 import envelope, reads, responses, runs, suites
from chalicelib.api.v2.bodies import CreateRun, SuiteDocument
from chalicelib.errors import Forbidden
from chalicelib.jsonvalues import json_input
from chalicelib.openwop import errors, fixtures

bp = Blueprint(__name__)

TAG = "openwop"
IDEMPOTENCY_HEADER = "idempotency-key"
MAX_IDEMPOTENCY_KEY = 255


def v2_endpoint(path: str, method: str, **options: Any) -> Any:
    return endpoint(bp, path, method, surface="v2", errors=envelope.render, tag=TAG, **options)


def tenant(call: Call[Any, Any]) -> str:
    """The caller's project (the admin key has none: 403)."""
    if call.caller.project_id is None:
        raise Forbidden("/v2 takes a project API key: the tenant is the key's project")
    return call.caller.project_id


def capability(caller: Caller, project_id: str) -> dict[str, Any]:
    """``agents.evalSuite`` for this tenant's caller."""
    return {
        "modes": runs.host_modes(caller, project_id),
        "maxTasksPerSuite": suites.MAX_TASKS_PER_SUITE,
        "regressionVerdict": True,
        "baselineSelection": True,
    }


@v2_endpoint(
    "/v2/discovery", "GET", access=on_project("openwop:GetDiscovery"), response=responses.DISCOVERY
)
def discovery(call: Call[Any, Any]) -> dict[str, Any]:
    """What this host runs: ``agents.evalSuite`` and the fixtures every tenant can run."""
    project_id = tenant(call)
    return {
        "protocol": "openwop",
        "host": "pawl",
        "agents": {"evalSuite": capability(call.caller, project_id)},
        "fixtures": list(fixtures.FIXTURE_IDS),
        "builtinAgents": [fixtures.CONFORMANCE_AGENT_ID],
    }


@v2_endpoint(
    "/v2/eval-suites",
    "POST",
    access=on_project("openwop:RegisterSuite"),
    body=SuiteDocument,
    status=201,
    response=responses.SUITE_REF,
)
def register_suite(call: Call[Any, Any]) -> Any:
    """Register an AgentEvalSuite version (201; the same content again: 200; changed: 409)."""
    project_id = tenant(call)
    document = json_input.parse_body(call.raw_body)
    record, created = suites.register(project_id, document)
    body = {"suiteId": record["suiteId"], "version": record["version"]}
    return Reply(body, 201 if created else 200)


def _versions_body(suite_id: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "suiteId": suite_id,
        "versions": [
            {"version": r["version"], "taskCount": r["taskCount"], "modes": r["modes"]}
            for r in found
        ],
    }


@v2_endpoint(
    "/v2/eval-suites/{suiteId}",
    "GET",
    access=on_project("openwop:GetSuite", missing="suite"),
    response=responses.VERSIONS,
)
def list_suite_versions(call: Call[Any, Any]) -> dict[str, Any]:
    """The versions of one of the caller's suites, oldest first."""
    suite_id = call.path["suiteId"]
    found = suites.versions(tenant(call), suite_id)
    if not found:
        raise errors.not_found("suite")
    return _versions_body(suite_id, found)


@v2_endpoint(
    "/v2/eval-suites/{suiteId}/{version}",
    "GET",
    access=on_project("openwop:GetSuite", missing="suite version"),
    response=responses.SUITE,
)
def get_suite_version(call: Call[Any, Any]) -> dict[str, Any]:
    """One suite version's document, as registered."""
    document = suites.document_of(tenant(call), call.path["suiteId"], call.path["version"])
    if document is None:
        raise errors.not_found("suite version")
    return document


def _idempotency_key(call: Call[Any, Any]) -> str | None:
    headers = {k.lower(): v for k, v in call.headers.items()}
    key = headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise errors.OpenwopError(
            400,
            "idempotency_key_invalid",
            f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY} printable characters",
        )
    return key


def _created(v2: dict[str, Any], status: str = "queued") -> dict[str, Any]:
    run_id = v2["runId"]
    return {"runId": run_id, "status": status, "eventsUrl": f"/v2/runs/{run_id}/events"}


@v2_endpoint(
    "/v2/runs",
    "POST",
    access=on_project("openwop:CreateRun"),
    body=CreateRun,
    status=201,
    response=responses.CREATED,
)
def create_run(call: Call[CreateRun, Any]) -> Any:
    """Start an eval run of a suite on an agent, optionally against a baseline run."""
    project_id = tenant(call)
    key = _idempotency_key(call)
    plan = runs.plan(call.caller, project_id, call.body)
    if key is None:
        return _created(runs.start(plan))
    digest = runs.body_hash(json_input.parse_body(call.raw_body))
    earlier = runs.replay_or_claim(project_id, key, digest)
    if earlier is not None:
        found = reads.get(project_id, earlier)
        return _created(found.record, found.status)
    try:
        started = runs.start(plan)
    except Exception:
        runs.settle_claim(project_id, key, digest, None)
        raise
    runs.settle_claim(project_id, key, digest, started["runId"])
    return _created(started)


@v2_endpoint(
    "/v2/runs/{runId}",
    "GET",
    access=on_project("openwop:GetRun", missing="run"),
    response=responses.RUN,
)
def get_run(call: Call[Any, Any]) -> dict[str, Any]:
    """A run: status, suite, agent, timestamps."""
    return reads.public(reads.get(tenant(call), call.path["runId"]))


@v2_endpoint(
    "/v2/runs/{runId}/events",
    "GET",
    access=on_project("openwop:GetRun", missing="run"),
    response=responses.EVENTS,
)
def list_events(call: Call[Any, Any]) -> dict[str, Any]:
    """The run's eval.* events, by strictly increasing ``sequence``."""
    project_id = tenant(call)
    return {"data": reads.events_of(project_id, reads.get(project_id, call.path["runId"]))}


@v2_endpoint(
    "/v2/runs/{runId}/eval-summary",
    "GET",
    access=on_project("openwop:GetRun", missing="run"),
    response=responses.SUMMARY,
)
def get_eval_summary(call: Call[Any, Any]) -> dict[str, Any]:
    """The EvalSummary of a terminal run (409 while it runs)."""
    project_id = tenant(call)
    return reads.summary_of(project_id, reads.get(project_id, call.path["runId"]))


@v2_endpoint("/v2/openapi.json", "GET", access=PUBLIC, response=responses.OPENAPI)
def openapi_document(call: Call[Any, Any]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``/v2``."""
    from chalicelib.api.v2.openapi import build_document

    return build_document()
