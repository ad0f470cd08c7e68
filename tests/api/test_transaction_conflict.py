"""A transaction DynamoDB cancels with ``TransactionConflict`` (another transaction was
writing the same item at that moment) answers 409 CONCURRENT_UPDATE and writes nothing;
so does a single-item write DynamoDB refuses with ``TransactionConflictException``.

moto never produces that race by itself, so a botocore ``before-call`` handler on the
DynamoDB client gives the answer DynamoDB gives: a ``TransactionCanceledException``
whose cancellation reasons name ``TransactionConflict``, or for a single-item write a
``TransactionConflictException``. Everything of ours runs as is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, cast

import pytest
from botocore.awsrequest import AWSResponse

from chalicelib.store.base import connection
from tests.support.refusals import refusal

AGENTS = "/api/v1/agents"
DATASETS = "/api/v1/datasets"
WEBHOOKS = "/api/v1/webhooks"
API_KEYS = "/api/v1/api-keys"


def _cancelled(item_count: int, reasons: dict[int, str]) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's answer to a cancelled TransactWriteItems: one reason per item."""
    codes = [reasons.get(i, "None") for i in range(item_count)]
    error = {
        "Code": "TransactionCanceledException",
        "Message": f"Transaction cancelled, please refer cancellation reasons for "
        f"specific reasons [{', '.join(codes)}]",
    }
    cancellation_reasons = [
        {"Code": code, "Message": "Transaction is ongoing for the item"}
        if code == "TransactionConflict"
        else {"Code": code}
        for code in codes
    ]
    return refusal(error, CancellationReasons=cancellation_reasons)


@contextmanager
def _answering(
    operation: str, times: int, answer: Callable[[dict[str, Any]], tuple[AWSResponse, Any]]
) -> Iterator[list[Any]]:
    """The next ``times`` calls of ``operation`` get ``answer(request body)`` instead of
    reaching moto; yields the request bodies that were answered so."""
    answered: list[Any] = []

    def intercept(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, Any] | None:
        if len(answered) >= times:
            return None
        body = json.loads(params["body"])
        answered.append(body)
        return answer(body)

    event = f"before-call.dynamodb.{operation}"
    events = connection().client.meta.events
    events.register_first(event, intercept)
    try:
        yield answered
    finally:
        events.unregister(event, intercept)


def cancelled_transactions(
    times: int, reasons: dict[int, str] | None = None
) -> AbstractContextManager[list[Any]]:
    """The next ``times`` TransactWriteItems calls are cancelled (default: the first item
    in a TransactionConflict); yields the request bodies that were refused."""
    return _answering(
        "TransactWriteItems",
        times,
        lambda body: _cancelled(len(body["TransactItems"]), reasons or {0: "TransactionConflict"}),
    )


def refused_single_writes(operation: str, times: int) -> AbstractContextManager[list[Any]]:
    """The next ``times`` ``operation`` calls (PutItem, DeleteItem...) are refused because a
    transaction is writing the item at that moment."""
    error = {
        "Code": "TransactionConflictException",
        "Message": "Transaction is ongoing for the item",
    }
    return _answering(operation, times, lambda _: refusal(error))


def _retry_advice(response: Any) -> None:
    assert response.status == 409 and response.code == "CONCURRENT_UPDATE", response
    assert "retry" in response.json["error"]["message"]


def _agent(api: Any, project: Any) -> tuple[dict[str, Any], str]:
    """An http agent (never called here) and its path."""
    body = {"project_id": project["id"], "name": "support", "type": "http"}
    response = api.post(AGENTS, {**body, "config": {"url": "http://127.0.0.1:9/agent"}})
    assert response.status == 201, response
    return response.json, f"{AGENTS}/{response.json['id']}"


def test_create_that_loses_a_race_is_409_and_writes_nothing(api: Any, project: Any) -> None:
    body = {"project_id": project["id"], "name": "golden"}
    with cancelled_transactions(times=1) as refused:
        response = api.post(DATASETS, body)
    assert len(refused) == 1
    _retry_advice(response)
    assert api.get(f"{DATASETS}?project_id={project['id']}").json["data"] == []
    # The name was not claimed either: the retried request gets it.
    retried = api.post(DATASETS, body)
    assert retried.status == 201 and retried.json["name"] == "golden"


def test_update_lost_on_every_attempt_is_409_and_writes_nothing(api: Any, project: Any) -> None:
    agent, path = _agent(api, project)
    with cancelled_transactions(times=100) as refused:
        response = api.put(path, {"name": "support-v2"})
    # The agent update retries a lost race; every attempt lost it here.
    assert len(refused) > 1
    _retry_advice(response)
    assert api.get(path).json == agent
    assert [v["version"] for v in api.get(f"{path}/versions").json["data"]] == [1]
    assert api.put(path, {"name": "support-v2"}).json["name"] == "support-v2"


def test_update_that_loses_one_race_is_retried(api: Any, project: Any) -> None:
    _, path = _agent(api, project)
    with cancelled_transactions(times=1) as refused:
        response = api.put(path, {"name": "support-v2"})
    assert len(refused) == 1
    assert response.status == 200 and response.json["version"] == 2, response
    assert [v["version"] for v in api.get(f"{path}/versions").json["data"]] == [1, 2]


def test_a_failed_condition_outranks_a_conflict(api: Any, project: Any) -> None:
    """When the name claim's condition failed too, the answer is about the name."""
    body = {"project_id": project["id"], "name": "golden"}
    assert api.post(DATASETS, body).status == 201
    # create_dataset puts the name claim first, then the dataset row.
    reasons = {0: "ConditionalCheckFailed", 1: "TransactionConflict"}
    with cancelled_transactions(times=1, reasons=reasons):
        response = api.post(DATASETS, {**body, "name": "other"})
    assert response.status == 409 and response.code == "NAME_CONFLICT", response
    assert len(api.get(f"{DATASETS}?project_id={project['id']}").json["data"]) == 1


def _webhook_body(project: Any) -> dict[str, Any]:
    return {"project_id": project["id"], "url": "http://127.0.0.1:9/hook", "events": ["eval_run.*"]}


def _listed(api: Any, resource: str, project: Any) -> list[Any]:
    return cast(list[Any], api.get(f"{resource}?project_id={project['id']}").json["data"])


def test_webhook_create_in_a_deleted_project_is_still_404(api: Any, project: Any) -> None:
    """The project check rides in the transaction: a failed condition is not a race."""
    # PynamoDB sends the project check before the webhook row; the project is gone.
    with cancelled_transactions(times=1, reasons={0: "ConditionalCheckFailed"}):
        response = api.post(WEBHOOKS, _webhook_body(project))
    assert response.status == 404 and response.code == "RESOURCE_NOT_FOUND", response
    assert _listed(api, WEBHOOKS, project) == []


def test_webhook_delete_that_loses_a_race_is_409_and_deletes_nothing(
    api: Any, project: Any
) -> None:
    hook = api.post(WEBHOOKS, _webhook_body(project)).json
    path = f"{WEBHOOKS}/{hook['id']}"
    with refused_single_writes("DeleteItem", times=1) as refused:
        response = api.delete(path)
    assert len(refused) == 1
    _retry_advice(response)
    assert api.get(path).status == 200
    assert api.delete(path).status == 204 and api.get(path).status == 404


@pytest.mark.parametrize(
    "resource, body",
    [
        (WEBHOOKS, _webhook_body),
        (API_KEYS, lambda project: {"project_id": project["id"], "name": "ci"}),
    ],
    ids=["webhook", "api_key"],
)
def test_project_scoped_create_that_loses_a_race_is_409_and_writes_nothing(
    api: Any, project: Any, resource: str, body: Callable[[Any], dict[str, Any]]
) -> None:
    with cancelled_transactions(times=1) as refused:
        response = api.post(resource, body(project))
    assert len(refused) == 1
    _retry_advice(response)
    assert _listed(api, resource, project) == []
    # The retried request creates exactly one, and it reads back.
    retried = api.post(resource, body(project))
    assert retried.status == 201, retried
    assert [row["id"] for row in _listed(api, resource, project)] == [retried.json["id"]]
    assert api.get(f"{resource}/{retried.json['id']}").status == 200
