"""``/v2`` runs on a real HTTP agent: paired verdicts over a 30+-task suite, idempotency,
reads before and after the end, rubric tasks through a real judge, tenancy of every read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import Api
from tests.support.servers import Reply, Request, Server, serve
from tests.v2.conftest import assert_envelope, assert_events, assert_summary, suite

TASKS = 32
SUITE_ID = "acme.tests.evals.arithmetic"


def arithmetic_suite(version: str = "1.0.0") -> dict[str, Any]:
    tasks = []
    for n in range(TASKS):
        strategy = ("exact", "contains", "json-match")[n % 3]
        value: Any = {"sum": n + n} if strategy == "json-match" else str(n + n)
        tasks.append(
            {
                "taskId": f"add-{n}",
                "input": {"a": n, "b": n},
                "expected": {"kind": "golden", "match": {"strategy": strategy, "value": value}},
            }
        )
    return {
        "suiteId": SUITE_ID,
        "version": version,
        "modes": ["golden", "regression"],
        "thresholds": {"passScore": 0.9, "maxCostUsd": 1.0},
        "tasks": tasks,
    }


def _answer(request: Request, broken: bool) -> Reply:
    question = json.loads(request.json()["input"][-1]["content"])
    total = question["a"] + question["b"]
    if broken and question["a"] % 2 == 1:  # half the tasks: a wrong sum
        total += 1
    wants_json = question["a"] % 3 == 2
    output = json.dumps({"sum": total}, indent=2) if wants_json else str(total)
    usage = {"input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001}
    return Reply(200, {"output": output, "usage": usage})


@pytest.fixture
def agents(tenant_a: Api) -> Iterator[dict[str, str]]:
    """Two real HTTP agents of tenant A: a correct adder and one wrong on odd tasks."""
    with (
        serve(lambda r: _answer(r, broken=False)) as good,
        serve(lambda r: _answer(r, broken=True)) as broken,
    ):
        yield {
            "good": _http_agent(tenant_a, "good", good),
            "broken": _http_agent(tenant_a, "broken", broken),
        }


def _http_agent(tenant: Api, name: str, server: Server) -> str:
    created = tenant.post(
        "/api/v1/agents", {"name": name, "type": "http", "config": {"url": f"{server.url}/"}}
    )
    assert created.status == 201, created
    return str(created.json["id"])


def run(tenant: Api, drain: Callable[[], None], agent_id: str, **extra: Any) -> dict[str, Any]:
    created = tenant.post(
        "/v2/runs",
        {"mode": "eval", "evalSuiteRef": f"{SUITE_ID}@1.0.0", "agentId": agent_id, **extra},
    )
    assert created.status == 201, created
    drain()
    run_id = created.json["runId"]
    summary = tenant.get(f"/v2/runs/{run_id}/eval-summary")
    assert summary.status == 200, summary
    assert_summary(summary.json)
    events = tenant.get(f"/v2/runs/{run_id}/events").json["data"]
    assert_events(events)
    assert [e["payload"]["taskId"] for e in events if e["type"] == "eval.scored"] == [
        f"add-{n}" for n in range(TASKS)
    ]
    return {"runId": run_id, "summary": summary.json}


def test_a_good_agent_passes_a_half_broken_one_regressed_and_itself_unchanged(
    tenant_a: Api, drain: Callable[[], None], agents: dict[str, str]
) -> None:
    assert tenant_a.post("/v2/eval-suites", arithmetic_suite()).status == 201
    good = run(tenant_a, drain, agents["good"])
    assert good["summary"]["aggregateScore"] == 1.0 and good["summary"]["passed"] is True
    assert good["summary"]["totalCostUsd"] == pytest.approx(TASKS * 0.001)
    assert all(t["latencyMs"] >= 0 and t["costUsd"] == 0.001 for t in good["summary"]["tasks"])

    regression = {"evalModes": ["golden", "regression"], "baselineRunId": good["runId"]}
    broken = run(tenant_a, drain, agents["broken"], **regression)
    assert broken["summary"]["aggregateScore"] == 0.5 and broken["summary"]["passed"] is False
    verdict = broken["summary"]["regression"]
    assert verdict["scoreDelta"] == pytest.approx(-0.5, abs=1e-9)
    assert (verdict["pairedTaskCount"], verdict["regressedCount"]) == (TASKS, TASKS // 2)
    assert verdict["verdict"] == "regressed" and verdict["pValue"] < 0.05

    again = run(tenant_a, drain, agents["good"], **regression)["summary"]["regression"]
    assert again["verdict"] == "unchanged" and again["scoreDelta"] == 0.0
    assert again["pValue"] == 1.0


def test_idempotency_key_replays_the_run_and_refuses_another_body(
    tenant_a: Api, drain: Callable[[], None]
) -> None:
    body = {
        "mode": "eval",
        "evalSuiteRef": "conformance-eval-regression-base",
        "agentId": "conformance-eval-agent",
    }
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {tenant_a.key}",
        "Idempotency-Key": "retry-1",
    }

    def post(payload: dict[str, Any]) -> Any:
        answer = tenant_a.client.http.post("/v2/runs", headers=headers, body=json.dumps(payload))
        return answer.status_code, json.loads(answer.body)

    first = post(body)
    assert first[0] == 201, first
    second = post(dict(reversed(list(body.items()))))  # same body, other key order
    assert second[0] == 201 and second[1]["runId"] == first[1]["runId"]
    status, refused = post({**body, "tags": ["other"]})
    assert status == 409 and refused["error"] == "idempotency_key_mismatch"
    evals = tenant_a.get("/api/v1/evals").json["data"]
    runs = tenant_a.get(f"/api/v1/evals/{evals[0]['id']}/runs").json["data"]
    assert [r["id"] for r in runs] == [first[1]["runId"]]


def test_reads_before_the_end_and_the_summary_409(tenant_a: Api, drain: Callable[[], None]) -> None:
    created = tenant_a.post(
        "/v2/runs",
        {
            "mode": "eval",
            "agentId": "conformance-eval-agent",
            "evalSuiteRef": "conformance-eval-regression-base",
            "tags": ["nightly"],
            "metadata": {"commit": "abc"},
        },
    )
    run_id = created.json["runId"]
    queued = tenant_a.get(f"/v2/runs/{run_id}")
    assert queued.status == 200, queued
    assert queued.json["status"] == "queued" and queued.json["tags"] == ["nightly"]
    assert queued.json["evalSuiteRef"] == "conformance-eval-regression-base"
    assert queued.json["agentId"] == "conformance-eval-agent"
    pending = tenant_a.get(f"/v2/runs/{run_id}/eval-summary")
    assert_envelope(pending, 409, "run_state_conflict")
    assert pending.json["details"]["runStatus"] == "queued"
    early = tenant_a.get(f"/v2/runs/{run_id}/events").json["data"]
    assert [e["type"] for e in early] == ["eval.started"]
    assert_events(early)
    drain()
    late = tenant_a.get(f"/v2/runs/{run_id}/events").json["data"]
    assert_events(late)
    assert late[0] == early[0]  # an answer is a prefix of every later one
    assert [e["sequence"] for e in late] == [1, 2, 3, 4, 5]


def test_v2_reads_of_unknown_and_non_v2_runs_are_404(tenant_a: Api) -> None:
    for path in (
        "/v2/runs/evrun_0123456789abcdef",
        "/v2/runs/nonsense/events",
        "/v2/runs/evrun_0123456789abcdef/eval-summary",
    ):
        assert_envelope(tenant_a.get(path), 404, "not_found")


def test_a_bad_body_and_a_bad_idempotency_key_are_400(tenant_a: Api) -> None:
    assert_envelope(tenant_a.post("/v2/runs", raw=b"not json"), 400, "validation_error")
    assert_envelope(tenant_a.post("/v2/runs", raw=b"[]"), 400, "validation_error")
    headers = {
        "Authorization": f"Bearer {tenant_a.key}",
        "Idempotency-Key": "x" * 300,
        "Content-Type": "application/json",
    }
    body = json.dumps(
        {
            "mode": "eval",
            "evalSuiteRef": "conformance-eval-regression-base",
            "agentId": "conformance-eval-agent",
        }
    )
    answer = tenant_a.client.http.post("/v2/runs", headers=headers, body=body)
    assert answer.status_code == 400
    assert json.loads(answer.body)["error"] == "idempotency_key_invalid"


def test_another_tenants_agent_is_refused(
    tenant_a: Api, tenant_b: Api, agents: dict[str, str]
) -> None:
    assert tenant_b.post("/v2/eval-suites", arithmetic_suite()).status == 201
    refused = tenant_b.post(
        "/v2/runs", {"mode": "eval", "evalSuiteRef": SUITE_ID, "agentId": agents["good"]}
    )
    assert_envelope(refused, 400, "validation_error")
    assert agents["good"] not in str(refused.json)


def _judge(request: Request) -> Reply:
    prompt = request.json()["messages"][0]["content"]
    assert "0. answers" in prompt and "1. is terse" in prompt
    content = json.dumps({"met": [True, False]})
    return Reply(
        200,
        {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ]
        },
    )


def test_rubric_tasks_are_graded_by_the_projects_judge(
    tenant_a: Api, drain: Callable[[], None]
) -> None:
    rubric_suite = suite(
        "acme.tests.evals.manners",
        modes=["golden", "rubric"],
        tasks=[
            {
                "taskId": "greet",
                "input": "say hi",
                "expected": {
                    "kind": "rubric",
                    "rubric": [
                        {"criterion": "answers", "weight": 0.75},
                        {"criterion": "is terse", "weight": 0.25},
                    ],
                },
            }
        ],
        thresholds={"passScore": 0.5},
    )
    assert tenant_a.post("/v2/eval-suites", rubric_suite).status == 201
    body = {
        "mode": "eval",
        "evalSuiteRef": "acme.tests.evals.manners",
        "agentId": "conformance-eval-agent",
    }
    assert_envelope(tenant_a.post("/v2/runs", body), 400, "validation_error")  # no judge yet
    with serve(_judge) as judge:
        project = tenant_a.get("/api/v1/projects").json["data"][0]
        provider = tenant_a.post(
            "/api/v1/ai-providers",
            {"name": "judge", "base_url": f"{judge.url}/v1", "default_model": "judge"},
        )
        assert provider.status == 201, provider
        tenant_a.put(
            f"/api/v1/projects/{project['id']}", {"default_ai_provider_id": provider.json["id"]}
        )
        created = tenant_a.post("/v2/runs", body)
        assert created.status == 201, created
        drain()
        summary = tenant_a.get(f"/v2/runs/{created.json['runId']}/eval-summary").json
    assert_summary(summary)
    task = summary["tasks"][0]
    assert (task["taskId"], task["score"], task["passed"]) == ("greet", 0.75, True)
    assert summary["aggregateScore"] == 0.75 and summary["passed"] is True
    assert "answers" not in json.dumps(summary)  # rubric prose never leaves the judge call


def test_an_idempotency_key_in_flight_is_409_and_an_expired_one_is_reused(
    tenant_a: Api,
) -> None:
    from chalicelib import clock
    from chalicelib.store import openwop as records

    project_id = tenant_a.get("/api/v1/projects").json["data"][0]["id"]
    body = {
        "mode": "eval",
        "evalSuiteRef": "conformance-eval-regression-base",
        "agentId": "conformance-eval-agent",
    }
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {tenant_a.key}"}
    from chalicelib.api.v2.runs import body_hash

    pk = records.idempotency_key(project_id, "busy")
    records.put_new(
        pk,
        records.NO_SORT,
        project_id,
        {"hash": body_hash(body), "runId": None, "expiresAt": "9999-01-01T00:00:00Z"},
    )
    busy = tenant_a.client.http.post(
        "/v2/runs", headers={**headers, "Idempotency-Key": "busy"}, body=json.dumps(body)
    )
    assert busy.status_code == 409 and json.loads(busy.body)["error"] == "idempotency_in_flight"
    old = records.idempotency_key(project_id, "old")
    records.put_new(
        old,
        records.NO_SORT,
        project_id,
        {"hash": "another body", "runId": "evrun_0000000000000000", "expiresAt": clock.now_iso()},
    )
    reused = tenant_a.client.http.post(
        "/v2/runs", headers={**headers, "Idempotency-Key": "old"}, body=json.dumps(body)
    )
    assert reused.status_code == 201, reused.body
    assert records.get(old)["runId"] == json.loads(reused.body)["runId"]


def _published(answer: Any, path: str, method: str, status: str) -> list[str]:
    """Problems of ``answer`` against what /v2/openapi.json publishes for it."""
    from chalicelib.api.v2.openapi import build_document
    from chalicelib.openwop import schemas

    document = build_document()
    operation = document["paths"][path][method]
    published = operation["responses"][status]["content"]["application/json"]["schema"]
    rooted = {**published, "components": document["components"]}
    return [e.message for e in schemas.validator(rooted).iter_errors(answer)]


def test_answers_match_the_published_openapi_schemas(
    tenant_a: Api, drain: Callable[[], None]
) -> None:
    assert _published(tenant_a.get("/v2/discovery").json, "/v2/discovery", "get", "200") == []
    base = tenant_a.post(
        "/v2/runs",
        {
            "mode": "eval",
            "agentId": "conformance-eval-agent",
            "evalSuiteRef": "conformance-eval-regression-base",
        },
    )
    assert _published(base.json, "/v2/runs", "post", "201") == []
    drain()
    run_id = base.json["runId"]
    candidate = tenant_a.post(
        "/v2/runs",
        {
            "mode": "eval",
            "agentId": "conformance-eval-agent",
            "evalSuiteRef": "conformance-eval-regression-candidate",
            "evalModes": ["golden", "regression"],
            "baselineRunId": run_id,
        },
    )
    drain()
    other = candidate.json["runId"]
    for path, template in (
        (f"/v2/runs/{other}", "/v2/runs/{runId}"),
        (f"/v2/runs/{other}/events", "/v2/runs/{runId}/events"),
        (f"/v2/runs/{other}/eval-summary", "/v2/runs/{runId}/eval-summary"),
        ("/v2/eval-suites/core.openwop.evals.conformance-regression", "/v2/eval-suites/{suiteId}"),
        (
            "/v2/eval-suites/core.openwop.evals.conformance-regression/1.1.0",
            "/v2/eval-suites/{suiteId}/{version}",
        ),
    ):
        answer = tenant_a.get(path)
        assert answer.status == 200, answer
        assert _published(answer.json, template, "get", "200") == [], path
