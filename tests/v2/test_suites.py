"""``/v2`` errors, discovery and suites: validation, immutability, tenant isolation."""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator

from chalicelib.openwop import schemas
from tests.conftest import Api
from tests.v2.conftest import assert_envelope, suite


def test_no_key_and_a_bad_key_are_unauthenticated_in_the_openwop_envelope(api: Api) -> None:
    assert_envelope(api.as_key(None).get("/v2/discovery"), 401, "unauthenticated")
    assert_envelope(api.as_key("pawl_nonsense").get("/v2/discovery"), 401, "unauthenticated")
    assert "code" not in str(api.as_key(None).get("/v2/discovery").json)


def test_the_admin_key_is_refused_on_the_tenant_surface(api: Api) -> None:
    assert_envelope(api.get("/v2/discovery"), 403, "forbidden")


def test_wrong_method_is_the_openwop_envelope(tenant_a: Api) -> None:
    response = tenant_a.request("DELETE", "/v2/discovery")
    assert_envelope(response, 405, "pawl.method_not_allowed")


def test_discovery_advertises_what_pawl_gates(tenant_a: Api) -> None:
    response = tenant_a.get("/v2/discovery")
    assert response.status == 200, response
    capability = response.json["agents"]["evalSuite"]
    assert capability == {
        "modes": ["golden", "regression"],
        "maxTasksPerSuite": 1000,
        "regressionVerdict": True,
        "baselineSelection": True,
    }
    # The capabilities excerpt predates RFC 0251 §A and RFC 0244: its two members added.
    schema = copy.deepcopy(schemas.capability_schema())
    schema["properties"]["baselineSelection"] = {"type": "boolean"}
    schema["properties"]["regressionVerdict"] = {"type": "boolean"}
    assert list(Draft202012Validator(schema).iter_errors(capability)) == []
    assert {
        "conformance-eval-regression-base",
        "conformance-eval-regression-candidate",
    } <= set(response.json["fixtures"])


def test_rubric_is_advertised_only_with_a_judge(api: Api, tenant_a: Api) -> None:
    project = tenant_a.get("/api/v1/projects").json["data"][0]
    provider = tenant_a.post(
        "/api/v1/ai-providers",
        {"name": "judge", "base_url": "https://judge.example.com/v1", "default_model": "m"},
    )
    assert provider.status == 201, provider
    updated = tenant_a.put(
        f"/api/v1/projects/{project['id']}", {"default_ai_provider_id": provider.json["id"]}
    )
    assert updated.status == 200, updated
    modes = tenant_a.get("/v2/discovery").json["agents"]["evalSuite"]["modes"]
    assert modes == ["golden", "rubric", "regression"]


def test_register_list_and_read_a_suite(tenant_a: Api) -> None:
    document = suite()
    created = tenant_a.post("/v2/eval-suites", document)
    assert created.status == 201, created
    assert created.json == {"suiteId": "acme.tests.evals.basic", "version": "1.0.0"}
    second = tenant_a.post("/v2/eval-suites", suite(version="1.10.0"))
    assert second.status == 201, second
    listed = tenant_a.get("/v2/eval-suites/acme.tests.evals.basic")
    assert listed.status == 200, listed
    assert [v["version"] for v in listed.json["versions"]] == ["1.0.0", "1.10.0"]
    read = tenant_a.get("/v2/eval-suites/acme.tests.evals.basic/1.0.0")
    assert read.status == 200 and read.json == document


def test_a_version_is_immutable(tenant_a: Api) -> None:
    assert tenant_a.post("/v2/eval-suites", suite()).status == 201
    again = tenant_a.post("/v2/eval-suites", suite())
    assert again.status == 200, again
    changed = suite()
    changed["tasks"][0]["input"] = "something else"
    assert_envelope(tenant_a.post("/v2/eval-suites", changed), 409, "version_conflict")
    read = tenant_a.get("/v2/eval-suites/acme.tests.evals.basic/1.0.0")
    assert read.json["tasks"][0]["input"] == "hello"


def _bad(change: Any) -> dict[str, Any]:
    document = suite()
    change(document)
    return document


BAD_SUITES = {
    "unknown root property": lambda d: d.update(owner="me"),
    "suiteId pattern": lambda d: d.update(suiteId="Not An Id"),
    "version not semver": lambda d: d.update(version="1.0"),
    "no tasks": lambda d: d.update(tasks=[]),
    "mode outside the vocabulary": lambda d: d.update(modes=["vibes"]),
    "unknown task property": lambda d: d["tasks"][0].update(notes="x"),
    "passScore above 1": lambda d: d.update(thresholds={"passScore": 1.5}),
    "repeated task id": lambda d: d["tasks"].append(copy.deepcopy(d["tasks"][0])),
    "golden without match": lambda d: d["tasks"][0]["expected"].pop("match"),
}


def test_every_invalid_suite_is_a_400_that_says_where(tenant_a: Api) -> None:
    for reason, change in BAD_SUITES.items():
        response = tenant_a.post("/v2/eval-suites", _bad(change))
        assert_envelope(response, 400, "validation_error")
        assert response.json["details"]["problems"], reason
    assert tenant_a.get("/api/v1/datasets").json["data"] == []  # nothing was written


def test_a_body_that_is_not_an_object_is_refused(tenant_a: Api) -> None:
    assert_envelope(tenant_a.post("/v2/eval-suites", raw=b"[1]"), 400, "validation_error")
    assert_envelope(tenant_a.post("/v2/eval-suites", raw=b"{nope"), 400, "validation_error")


def test_another_tenants_suite_reads_as_nonexistent(tenant_a: Api, tenant_b: Api) -> None:
    assert tenant_a.post("/v2/eval-suites", suite()).status == 201
    for path in (
        "/v2/eval-suites/acme.tests.evals.basic",
        "/v2/eval-suites/acme.tests.evals.basic/1.0.0",
    ):
        assert_envelope(tenant_b.get(path), 404, "not_found")
    assert_envelope(tenant_b.get("/v2/eval-suites/acme.tests.evals.never"), 404, "not_found")
    # Tenant B may register the same id with its own content: suites are per tenant.
    own = suite()
    own["tasks"][0]["input"] = "bonjour"
    assert tenant_b.post("/v2/eval-suites", own).status == 201


def test_the_openapi_document_describes_every_v2_route(api: Api) -> None:
    document = api.as_key(None).get("/v2/openapi.json")
    assert document.status == 200, document
    paths = document.json["paths"]
    assert set(paths) == {
        "/v2/discovery",
        "/v2/eval-suites",
        "/v2/eval-suites/{suiteId}",
        "/v2/eval-suites/{suiteId}/{version}",
        "/v2/runs",
        "/v2/runs/{runId}",
        "/v2/runs/{runId}/events",
        "/v2/runs/{runId}/eval-summary",
        "/v2/openapi.json",
    }
    body = paths["/v2/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["additionalProperties"] is False
    assert {"mode", "evalSuiteRef", "agentId", "evalModes", "baselineRunId"} <= set(
        body["properties"]
    )
    assert "ids.schema.json" not in json.dumps(document.json)  # every reference resolves
    v1 = api.as_key(None).get("/api/v1/openapi.json").json["paths"]
    assert not [p for p in v1 if p.startswith("/v2")]


def test_a_bare_suite_id_runs_its_newest_version(tenant_a: Api) -> None:
    for version in ("1.2.0", "1.10.0", "1.9.9"):
        assert tenant_a.post("/v2/eval-suites", suite(version=version)).status == 201
    created = tenant_a.post(
        "/v2/runs",
        {
            "mode": "eval",
            "evalSuiteRef": "acme.tests.evals.basic",
            "agentId": "conformance-eval-agent",
        },
    )
    assert created.status == 201, created
    run = tenant_a.get(f"/v2/runs/{created.json['runId']}").json
    assert (run["suiteVersion"], run["evalSuiteRef"]) == ("1.10.0", "acme.tests.evals.basic")
