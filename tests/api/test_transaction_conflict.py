"""A transaction DynamoDB cancels with ``TransactionConflict`` (another transaction was
writing the same item at that moment) answers 409 CONCURRENT_UPDATE and writes nothing.

moto never produces that race by itself, so a botocore ``before-call`` handler on the
DynamoDB client gives the answer DynamoDB gives: a ``TransactionCanceledException``
whose cancellation reasons name ``TransactionConflict``. Everything of ours runs as is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse

from chalicelib.store.base import connection

EVENT = "before-call.dynamodb.TransactWriteItems"
AGENTS = "/api/v1/agents"
DATASETS = "/api/v1/datasets"


def _cancelled(item_count: int, reasons: dict[int, str]) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's answer to a cancelled TransactWriteItems: one reason per item."""
    codes = [reasons.get(i, "None") for i in range(item_count)]
    parsed = {
        "Error": {
            "Code": "TransactionCanceledException",
            "Message": f"Transaction cancelled, please refer cancellation reasons for "
            f"specific reasons [{', '.join(codes)}]",
        },
        "CancellationReasons": [
            {"Code": code, "Message": "Transaction is ongoing for the item"}
            if code == "TransactionConflict"
            else {"Code": code}
            for code in codes
        ],
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}},
    }
    return AWSResponse("https://dynamodb.local/", 400, {}, None), parsed


@contextmanager
def cancelled_transactions(
    times: int, reasons: dict[int, str] | None = None
) -> Iterator[list[Any]]:
    """The next ``times`` TransactWriteItems calls are cancelled (default: the first item
    in a TransactionConflict); yields the request bodies that were refused."""
    refused: list[Any] = []

    def cancel(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if len(refused) >= times:
            return None
        body = json.loads(params["body"])
        refused.append(body)
        return _cancelled(len(body["TransactItems"]), reasons or {0: "TransactionConflict"})

    events = connection().client.meta.events
    events.register_first(EVENT, cancel)
    try:
        yield refused
    finally:
        events.unregister(EVENT, cancel)


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
