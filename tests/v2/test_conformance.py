"""RFC 0251's conformance table (``v2-eval-regression-baseline``), driven over HTTP.

Every summary and event these tests see is validated against the vendored OpenWOP
schemas (``assert_summary`` / ``assert_events``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from chalicelib.api.v2.bodies import CreateRun
from tests.conftest import Api
from tests.v2.conftest import assert_envelope, assert_events, assert_summary, suite

BASE = "conformance-eval-regression-base"
CANDIDATE = "conformance-eval-regression-candidate"
AGENT = "conformance-eval-agent"


def start(tenant: Api, ref: str, **extra: Any) -> Any:
    return tenant.post("/v2/runs", {"mode": "eval", "evalSuiteRef": ref, "agentId": AGENT, **extra})


def completed_run(tenant: Api, drain: Callable[[], None], ref: str, **extra: Any) -> str:
    created = start(tenant, ref, **extra)
    assert created.status == 201, created
    assert created.json["status"] == "queued"
    assert created.json["eventsUrl"] == f"/v2/runs/{created.json['runId']}/events"
    drain()
    run = tenant.get(f"/v2/runs/{created.json['runId']}")
    assert run.status == 200 and run.json["status"] == "completed", run
    return str(created.json["runId"])


@pytest.fixture
def base_run(tenant_a: Api, drain: Callable[[], None]) -> str:
    return completed_run(tenant_a, drain, BASE)


@pytest.fixture
def candidate(tenant_a: Api, drain: Callable[[], None], base_run: str) -> dict[str, Any]:
    run_id = completed_run(
        tenant_a, drain, CANDIDATE, evalModes=["golden", "regression"], baselineRunId=base_run
    )
    summary = tenant_a.get(f"/v2/runs/{run_id}/eval-summary")
    assert summary.status == 200, summary
    assert_summary(summary.json)
    events = tenant_a.get(f"/v2/runs/{run_id}/events")
    assert events.status == 200, events
    assert_events(events.json["data"])
    return {"runId": run_id, "summary": summary.json, "events": events.json["data"]}


def test_0251_shape() -> None:
    """§A, §B shapes, server-free: the createRun body takes the two properties, closed."""
    accepted = CreateRun.model_validate(
        {
            "mode": "eval",
            "evalSuiteRef": BASE,
            "agentId": AGENT,
            "evalModes": ["golden", "regression"],
            "baselineRunId": "evrun_x",
        }
    )
    assert accepted.evalModes == ["golden", "regression"]
    for refused in (
        {"mode": "eval", "evalModes": []},
        {"mode": "eval", "evalModes": ["vibes"]},
        {"mode": "eval", "baselineRunId": 7},
        {"mode": "eval", "configurable": {"evalModes": ["golden"]}},
    ):
        with pytest.raises(ValueError):
            CreateRun.model_validate(refused)


def test_the_base_fixture_scores_as_the_rfc_says(tenant_a: Api, base_run: str) -> None:
    summary = tenant_a.get(f"/v2/runs/{base_run}/eval-summary").json
    assert_summary(summary)
    assert [(t["taskId"], t["score"], t["passed"]) for t in summary["tasks"]] == [
        ("base-only", 0.0, False),
        ("shared-a", 1.0, True),
        ("shared-b", 1.0, True),
    ]
    assert summary["aggregateScore"] == pytest.approx(2 / 3)
    assert summary["passed"] is False and summary["passedCount"] == 2
    assert "regression" not in summary


def test_0251_baseline_echoed(candidate: dict[str, Any], base_run: str) -> None:
    started = [e for e in candidate["events"] if e["type"] == "eval.started"]
    assert len(started) == 1 and started[0]["payload"]["baselineRunId"] == base_run
    regression = candidate["summary"]["regression"]
    assert regression["baselineRunId"] == base_run
    assert abs(regression["scoreDelta"] - 1 / 3) < 1e-9
    completed = [e for e in candidate["events"] if e["type"] == "eval.completed"]
    assert len(completed) == 1
    assert abs(completed[0]["payload"]["regressionVsBaseline"] - 1 / 3) < 1e-9


def test_0244_regression_paired(candidate: dict[str, Any]) -> None:
    assert candidate["summary"]["regression"]["pairedTaskCount"] == 2


def test_0244_regression_no_false_verdict(candidate: dict[str, Any]) -> None:
    regression = candidate["summary"]["regression"]
    assert regression["verdict"] not in {"improved", "regressed"}
    assert regression["verdict"] == "unchanged"
    assert (regression["improvedCount"], regression["regressedCount"]) == (0, 0)


def test_events_of_an_eval_run(candidate: dict[str, Any]) -> None:
    kinds = [e["type"] for e in candidate["events"]]
    assert kinds == ["eval.started", "eval.scored", "eval.scored", "eval.scored", "eval.completed"]
    scored = [e["payload"]["taskId"] for e in candidate["events"] if e["type"] == "eval.scored"]
    assert scored == ["shared-a", "shared-b", "candidate-only"]
    started = candidate["events"][0]["payload"]
    assert started["taskCount"] == 3 and started["modes"] == ["golden", "regression"]
    # Content-free: no inputs, outputs or expected values anywhere in the events.
    text = str(candidate["events"])
    assert "alpha" not in text and "bravo" not in text and "delta" not in text


def _refusal(response: Any) -> dict[str, Any]:
    assert_envelope(response, 400, "validation_error")
    return dict(response.json)


#: A well-formed run id that no tenant has.
UNKNOWN_RUN = "evrun_0123456789abcdef"


def _baseline_refusal(tenant: Api, baseline: str) -> dict[str, Any]:
    """The refusal of a regression start of CANDIDATE against ``baseline``."""
    return _refusal(
        start(tenant, CANDIDATE, evalModes=["golden", "regression"], baselineRunId=baseline)
    )


def test_0251_baseline_refused(tenant_a: Api, drain: Callable[[], None], base_run: str) -> None:
    answer = _baseline_refusal(tenant_a, UNKNOWN_RUN)
    assert UNKNOWN_RUN not in str(answer)
    assert tenant_a.post("/v2/eval-suites", suite()).status == 201
    other = completed_run(tenant_a, drain, "acme.tests.evals.basic@1.0.0")
    other_suite = _baseline_refusal(tenant_a, other)
    assert other not in str(other_suite)
    assert other_suite == answer


def test_0251_baseline_uniform(
    tenant_a: Api, tenant_b: Api, drain: Callable[[], None], base_run: str
) -> None:
    foreign = completed_run(tenant_b, drain, BASE)
    unknown = _baseline_refusal(tenant_a, UNKNOWN_RUN)
    refused = _baseline_refusal(tenant_a, foreign)
    assert refused == unknown
    assert foreign not in str(refused)
    assert_envelope(tenant_a.get(f"/v2/runs/{foreign}"), 404, "not_found")
    assert_envelope(tenant_a.get(f"/v2/runs/{foreign}/events"), 404, "not_found")
    assert_envelope(tenant_a.get(f"/v2/runs/{foreign}/eval-summary"), 404, "not_found")


def test_0251_fields_refused(tenant_a: Api, base_run: str) -> None:
    _refusal(start(tenant_a, CANDIDATE, evalModes=["golden"], baselineRunId=base_run))
    _refusal(start(tenant_a, CANDIDATE, evalModes=["golden", "regression"]))


def test_every_refusal_is_decided_before_any_write(tenant_a: Api, base_run: str) -> None:
    before = tenant_a.get("/api/v1/evals").json["data"]
    refusals = [
        {"evalSuiteRef": BASE, "agentId": AGENT, "baselineRunId": base_run},  # no mode
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": AGENT, "priority": 1},
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": AGENT, "evalModes": []},
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": AGENT, "evalModes": ["golden", "golden"]},
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": AGENT, "evalModes": ["rubric"]},
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": AGENT, "evalModes": ["adversarial"]},
        {"mode": "eval", "evalSuiteRef": "acme.tests.evals.nothing", "agentId": AGENT},
        {"mode": "eval", "evalSuiteRef": BASE, "agentId": "agt_0123456789abcdef"},
        {"mode": "eval", "evalSuiteRef": BASE},
    ]
    for body in refusals:
        _refusal(tenant_a.post("/v2/runs", body))
    assert tenant_a.get("/api/v1/evals").json["data"] == before


def test_a_v2_run_is_an_ordinary_pawl_run(tenant_a: Api, base_run: str) -> None:
    evals = tenant_a.get("/api/v1/evals").json["data"]
    assert len(evals) == 1
    run = tenant_a.get(f"/api/v1/evals/{evals[0]['id']}/runs/{base_run}")
    assert run.status == 200, run
    assert run.json["status"] == "completed" and run.json["item_count"] == 3


def test_a_suite_over_max_tasks_per_suite_is_refused_at_create(tenant_a: Api) -> None:
    tasks = [
        {
            "taskId": f"t-{n}",
            "input": "x",
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
        }
        for n in range(1001)
    ]
    assert (
        tenant_a.post("/v2/eval-suites", suite("acme.tests.evals.huge", tasks=tasks)).status == 201
    )
    refused = _refusal(start(tenant_a, "acme.tests.evals.huge"))
    assert "maxTasksPerSuite" in refused["message"]


def test_modes_must_be_declared_by_the_suite_too(tenant_a: Api) -> None:
    project = tenant_a.get("/api/v1/projects").json["data"][0]
    provider = tenant_a.post(
        "/api/v1/ai-providers",
        {"name": "j", "base_url": "https://judge.example.com/v1", "default_model": "m"},
    )
    tenant_a.put(
        f"/api/v1/projects/{project['id']}", {"default_ai_provider_id": provider.json["id"]}
    )
    assert "rubric" in tenant_a.get("/v2/discovery").json["agents"]["evalSuite"]["modes"]
    _refusal(start(tenant_a, BASE, evalModes=["rubric"]))  # the host runs it, the suite not


def test_oversized_metadata_and_a_wrong_content_type_are_refused(tenant_a: Api) -> None:
    _refusal(start(tenant_a, BASE, metadata={"blob": "x" * 20_000}))
    answer = tenant_a.client.http.post(
        "/v2/runs",
        headers={"Authorization": f"Bearer {tenant_a.key}", "Content-Type": "text/plain"},
        body=b"{}",
    )
    assert answer.status_code == 415
    assert json.loads(answer.body)["error"] == "unsupported_media_type"


def test_a_v1_run_and_an_unfinished_run_are_refused_the_same_way(
    tenant_a: Api, base_run: str
) -> None:
    unknown = _baseline_refusal(tenant_a, UNKNOWN_RUN)
    evaluation = tenant_a.get("/api/v1/evals").json["data"][0]
    v1_run = tenant_a.post(f"/api/v1/evals/{evaluation['id']}/runs", {"wait": True})
    assert v1_run.status == 201 and v1_run.json["status"] == "completed", v1_run
    queued = start(tenant_a, BASE)  # never drained: stays queued
    assert queued.status == 201
    for baseline in (v1_run.json["id"], queued.json["runId"]):
        refused = _baseline_refusal(tenant_a, baseline)
        assert refused == unknown
