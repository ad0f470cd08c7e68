"""SOAT's webhooks OpenAPI document (``soat/webhooks.openapi.yaml``), run against pawl.

The same contract as :mod:`tests.api.test_soat_contract` for the evaluations document:
every operation is called, in an order that gives each what it needs, with a body made
of the document's own examples; the answer must have the document's success status and
validate against its response schema. The document gives no examples for a webhook's
``url`` and ``events``, so they are swapped for a real receiver on 127.0.0.1 and a run
event pawl emits (pawl's events are the run lifecycle's: ``docs/webhooks.md``). A
delivery comes from a real run of a real eval.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.integration.test_webhook_delivery import drain
from tests.support import soat_spec
from tests.support.servers import Reply, Request, serve

DOCUMENT = soat_spec.spec_path("soat/webhooks.openapi.yaml")
SPEC = soat_spec.Spec(yaml.safe_load(DOCUMENT.read_text())) if DOCUMENT.is_file() else None
pytestmark = pytest.mark.skipif(SPEC is None, reason=f"SOAT's document is not at {DOCUMENT}")

#: The order the operations run in; the delete comes last.
ORDER = [
    "createWebhook",
    "getWebhook",
    "updateWebhook",
    "listWebhooks",
    "getWebhookSecret",
    "rotateWebhookSecret",
    "listWebhookDeliveries",
    "getWebhookDelivery",
    "redeliverWebhookDelivery",
    "deleteWebhook",
]


@pytest.fixture
def receiver() -> Iterator[str]:
    """A webhook receiver that acknowledges every delivery (and an agent that answers)."""

    def answer(request: Request) -> Reply:
        return Reply(200, {"output": "ok"})

    with serve(answer) as server:
        yield server.url


def _delivery_from_a_run(api: Any, ids: dict[str, str], agent_url: str) -> None:
    """A real run of a one-item eval; its ``eval_run.completed`` reaches the webhook."""
    project = ids["project_id"]
    agent = {"project_id": project, "name": "a", "type": "http", "config": {"url": agent_url}}
    agent_id = api.post("/api/v1/agents", agent).json["id"]
    dataset_id = api.post("/api/v1/datasets", {"project_id": project, "name": "d"}).json["id"]
    item = {"input": [{"role": "user", "content": "hi"}], "expected_output": "ok"}
    assert api.post(f"/api/v1/datasets/{dataset_id}/items", item).status == 201
    body = {"project_id": project, "name": "e", "agent_id": agent_id, "dataset_id": dataset_id}
    body["scorers"] = [{"type": "exact_match"}]
    eval_id = api.post("/api/v1/evals", body).json["id"]
    run = api.post(f"/api/v1/evals/{eval_id}/runs", {"wait": True})
    assert run.status == 201 and run.json["status"] == "completed", run
    drain()
    listed = api.get(f"/api/v1/webhook-deliveries?webhook_id={ids['webhook_id']}").json
    [delivery] = listed["data"]
    assert delivery["status"] == "success", delivery
    ids["delivery_id"] = delivery["id"]


def _request(op: soat_spec.Operation, ids: dict[str, str], url: str) -> tuple[str, Any]:
    assert SPEC is not None
    path, query = op.path, []
    for param in op.parameters:
        if param["in"] == "path":
            path = path.replace("{" + param["name"] + "}", ids[param["name"]])
        elif param["name"] in ids:  # project_id, webhook_id
            query.append(f"{param['name']}={ids[param['name']]}")
        else:  # limit, offset: the document's defaults, given explicitly
            query.append(f"{param['name']}={param['schema']['default']}")
    target = path + ("?" + "&".join(query) if query else "")
    if op.request_schema is None:
        return target, None
    body = SPEC.example(op.request_schema)
    body.update({"url": f"{url}/hook", "events": ["eval_runs.completed"]})
    if "project_id" in SPEC.resolve(op.request_schema).get("properties", {}):
        body["project_id"] = ids["project_id"]
    return target, body


def test_every_webhooks_operation_answers_as_the_document_says(api: Any, receiver: str) -> None:
    assert SPEC is not None
    declared = {op.operation_id: op for op in SPEC.operations()}
    assert sorted(declared) == sorted(ORDER)
    ids = {"project_id": api.post("/api/v1/projects", {"name": "acme"}).json["id"]}
    seen: dict[str, Any] = {}
    for operation_id in ORDER:
        op = declared[operation_id]
        if operation_id == "listWebhookDeliveries":
            _delivery_from_a_run(api, ids, f"{receiver}/agent")
        target, body = _request(op, ids, receiver)
        response = api.request(op.method, target, body)
        assert response.status == op.status, (operation_id, body, response)
        if op.response_pointer is None:
            assert response.raw == b"", (operation_id, response)
        else:
            assert SPEC.response_errors(op, response.json) == [], (operation_id, response.json)
        seen[operation_id] = response.json
        if operation_id == "createWebhook":
            ids["webhook_id"] = response.json["id"]
    print(f"SOAT webhooks contract: {len(seen)} operations called, answers validated")
    # What the examples said went through, and what each operation is for held.
    assert seen["createWebhook"]["name"] == "example" and seen["updateWebhook"]["active"]
    assert seen["getWebhookSecret"]["secret"] == seen["createWebhook"]["secret"]
    assert seen["rotateWebhookSecret"]["secret"] != seen["createWebhook"]["secret"]
    redelivered = seen["redeliverWebhookDelivery"]
    assert redelivered["redelivery_of"] == ids["delivery_id"]
    assert redelivered["payload"] == seen["getWebhookDelivery"]["payload"]
    assert api.get(f"/api/v1/webhooks/{ids['webhook_id']}").status == 404


def test_every_webhooks_path_and_parameter_has_soats_name_in_pawls_document() -> None:
    assert SPEC is not None
    from chalicelib.wiring import openapi_document

    pawl = openapi_document()["paths"]
    for op in SPEC.operations():
        assert op.path in pawl, op.path
        mine = pawl[op.path][op.method.lower()]
        assert mine["operationId"] == op.operation_id
        assert {p["name"] for p in op.parameters} <= {p["name"] for p in mine.get("parameters", ())}


#: Refusals the document declares, provoked on purpose: (operationId, method, path, body, status).
def test_the_documented_refusals_answer_their_status(api: Any, project: dict[str, Any]) -> None:
    assert SPEC is not None
    hook = api.post(
        "/api/v1/webhooks",
        {"project_id": project["id"], "url": "http://127.0.0.1:9/h", "events": ["eval_run.*"]},
    ).json
    hooks, deliveries = "/api/v1/webhooks", "/api/v1/webhook-deliveries"
    gone_hook, gone_delivery = (
        f"{hooks}/whk_0000000000000000",
        f"{deliveries}/whdl_0000000000000000",
    )
    cases = [
        ("createWebhook", "POST", hooks, {"name": "n"}, 400),
        ("updateWebhook", "PUT", f"{hooks}/{hook['id']}", {"events": []}, 400),
        ("updateWebhook", "PUT", gone_hook, {"name": "n"}, 404),
        ("getWebhookSecret", "GET", f"{gone_hook}/secret", None, 404),
        ("rotateWebhookSecret", "POST", f"{gone_hook}/rotate-secret", None, 404),
        ("listWebhookDeliveries", "GET", f"{deliveries}?webhook_id=whk_00000000", None, 404),
        ("getWebhookDelivery", "GET", gone_delivery, None, 404),
        ("redeliverWebhookDelivery", "POST", f"{gone_delivery}/redeliver", None, 404),
    ]  # fmt: skip
    declared = {op.operation_id: op for op in SPEC.operations()}
    for operation_id, method, path, body, status in cases:
        op = declared[operation_id]
        documented = SPEC.document["paths"][op.path][op.method.lower()]["responses"]
        assert str(status) in documented, (operation_id, status)
        response = api.request(method, path, body)
        assert response.status == status, (operation_id, response)
        assert response.code is not None, response
