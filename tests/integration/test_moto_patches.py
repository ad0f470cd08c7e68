"""pawl's moto patches against plain moto: same TransactWriteItems answers, and a version guard.

The same transactions (conditions met and failed, cancellation reasons with and without
the old item, malformed requests that must be rejected as a whole, rollbacks) run through
plain moto's server in a process of its own (``tests/support/plain_moto.py``), through the
patched stand-in, and through this process's in-process moto, which ``tests/conftest.py``
patches. Every answer and the table's contents after each transaction must agree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from pawl.local import moto_patches
from pawl.local.standin import AwsStandIn
from tests.support.plain_moto import aws_clients, plain_moto_server

pytestmark = pytest.mark.slow

TABLE = "ledger"
RUN = {"pk": {"S": "run"}, "sk": {"S": "1"}}
ITEM_2 = {"pk": {"S": "run"}, "sk": {"S": "2"}}
ITEM_3 = {"pk": {"S": "run"}, "sk": {"S": "3"}}
NEW = {"pk": {"S": "run"}, "sk": {"S": "9"}}
ABSENT = "attribute_not_exists(pk)"


def _put(item: dict[str, Any], condition: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"TableName": TABLE, "Item": item}
    return {"Put": op | ({"ConditionExpression": condition} if condition else {})}


def _check(key: dict[str, Any], condition: str) -> dict[str, Any]:
    return {"ConditionCheck": {"TableName": TABLE, "Key": key, "ConditionExpression": condition}}


def _update(key: dict[str, Any], expression: str, **extra: Any) -> dict[str, Any]:
    return {"Update": {"TableName": TABLE, "Key": key, "UpdateExpression": expression, **extra}}


ONE = {":one": {"N": "1"}}
FAILS = _check(ITEM_3, ABSENT)  # ITEM_3 exists: this condition fails
FAILS_WITH_OLD = {
    "ConditionCheck": {**FAILS["ConditionCheck"], "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
}

#: name -> the TransactItems of one call.
TRANSACTIONS: dict[str, list[dict[str, Any]]] = {
    "all conditions met": [
        _put(NEW, ABSENT),
        _update(
            RUN, "SET n = n + :one", ConditionExpression="n = :one", ExpressionAttributeValues=ONE
        ),
        {
            "Delete": {
                "TableName": TABLE,
                "Key": ITEM_2,
                "ConditionExpression": "attribute_exists(pk)",
            }
        },
        _check(ITEM_3, "attribute_exists(pk)"),
    ],
    "failed conditions cancel, with the old item when asked": [
        _put({**NEW, "v": {"S": "x"}}),
        FAILS_WITH_OLD,
        _update(RUN, "SET n = :one", ExpressionAttributeValues=ONE),
        _check(ITEM_2, "attribute_not_exists(sk)"),
    ],
    "an operation on a missing table is a cancellation reason": [
        _put(NEW),
        {"ConditionCheck": {"TableName": "nowhere", "Key": RUN, "ConditionExpression": ABSENT}},
    ],
    "a reserved word in a condition rejects the request": [
        _put(NEW),
        FAILS,
        _check(RUN, "attribute_exists(name)"),
    ],
    "redundant parentheses in a condition reject the request": [
        _put(NEW),
        _check(RUN, "((attribute_exists(pk)))"),
    ],
    "a malformed update after a failed condition rejects the request": [
        FAILS,
        _update(NEW, "SET s = s + :one", ExpressionAttributeValues=ONE),
    ],
    "a mistyped operand after a failed condition rejects the request": [
        FAILS,
        _update(RUN, "SET s = s + :one", ExpressionAttributeValues=ONE),
    ],
    "updating a key attribute rejects the request and undoes earlier writes": [
        _put(NEW),
        _update(RUN, "SET sk = :one", ExpressionAttributeValues={":one": {"S": "1"}}),
    ],
    "a key of the wrong type rejects the request and undoes earlier writes": [
        _update(RUN, "SET n = n + :one", ExpressionAttributeValues=ONE),
        _put({"pk": {"N": "1"}, "sk": {"S": "1"}}),
    ],
    "two operations on one item reject the request": [_put(NEW), FAILS, _check(NEW, ABSENT)],
}


def transaction_conversation(dynamodb: Any) -> list[Any]:
    """Each transaction's answer and the table's contents after it."""
    dynamodb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
    )
    answers: list[Any] = []
    for name, items in TRANSACTIONS.items():
        for item in (
            RUN | {"n": {"N": "1"}, "s": {"S": "text"}},
            ITEM_2,
            ITEM_3 | {"n": {"N": "3"}},
        ):
            dynamodb.put_item(TableName=TABLE, Item=item)
        dynamodb.delete_item(TableName=TABLE, Key=NEW)
        answers.append((name, _outcome(dynamodb, items)))
        answers.append(sorted(dynamodb.scan(TableName=TABLE)["Items"], key=lambda i: i["sk"]["S"]))
    return answers


def _outcome(dynamodb: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    try:
        dynamodb.transact_write_items(TransactItems=items)
    except ClientError as exc:
        error = exc.response["Error"]
        reasons = exc.response.get("CancellationReasons")
        return {"code": error["Code"], "message": error["Message"], "reasons": reasons}
    return {"code": None}


@pytest.fixture(scope="module")
def plain_answers() -> list[Any]:
    with plain_moto_server() as endpoint:
        dynamodb, _ = aws_clients(endpoint)
        return transaction_conversation(dynamodb)


def test_the_conversation_covers_cancellations_and_whole_rejections(
    plain_answers: list[Any],
) -> None:
    codes = [answer[1]["code"] for answer in plain_answers[::2]]
    assert codes.count("TransactionCanceledException") == 2
    assert codes.count("ValidationException") == 7
    assert codes[0] is None
    old = plain_answers[2][1]["reasons"][1]
    assert old["Code"] == "ConditionalCheckFailed" and old["Item"]["n"] == {"N": "3"}


def test_in_process_transactions_answer_like_plain_moto(plain_answers: list[Any]) -> None:
    assert DynamoDBBackend.transact_write_items is moto_patches._transact_write_items
    with mock_aws():
        dynamodb, _ = aws_clients(None)
        assert transaction_conversation(dynamodb) == plain_answers


def test_standin_transactions_answer_like_plain_moto(plain_answers: list[Any]) -> None:
    server = AwsStandIn()
    server.start()
    try:
        dynamodb, _ = aws_clients(server.endpoint, server.credentials)
        assert transaction_conversation(dynamodb) == plain_answers
    finally:
        server.stop()


def test_the_pinned_moto_is_the_one_the_patches_were_written_for() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    local = pyproject["project"]["optional-dependencies"]["local"]  # moto is the local extra's
    pins = [d for d in local if d.startswith("moto[")]
    assert pins == [f"moto[server]=={moto_patches.PATCHED_MOTO_VERSION}"]
    assert moto_patches.moto_is_known()


def test_an_unknown_moto_is_left_unpatched_with_a_warning() -> None:
    # A child whose moto says it is another release (set before pawl's modules read it).
    child = textwrap.dedent(
        """
        import logging, moto
        moto.__version__ = "0.0.0"
        from moto.dynamodb.models import DynamoDBBackend
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication as Dispatcher
        from moto.sqs.models import SQSBackend
        before = (DynamoDBBackend.transact_write_items, SQSBackend.receive_message,
                  Dispatcher.get_backend_for_host)
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        from pawl.local import moto_patches, moto_server_patches
        applied = moto_patches.apply(), moto_server_patches.apply()
        after = (DynamoDBBackend.transact_write_items, SQSBackend.receive_message,
                 Dispatcher.get_backend_for_host)
        app = object()
        print(applied, before == after, moto_server_patches.front(app) is app)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(False,", "False)", "True", "True"]
    assert "moto 0.0.0 is installed" in done.stderr and "written for moto 5.2.5" in done.stderr
    assert done.stderr.count("moto patches were written for") == 1  # warned once
