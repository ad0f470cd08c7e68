"""The stand-in process: it answers, dies with its parent, and its patches keep moto's answers.

The patched stand-in (moto's server in a child process with ``moto_patches`` and
``moto_server_patches``) and plain moto (its own server in another child that never
imports pawl, so nothing is patched) run the same DynamoDB and SQS calls; what comes back
must agree once per-call randomness (ids, receipt handles, timestamps) is set aside. The
TransactWriteItems conversation is also run through this process's in-process moto, which
the test suite patches (``tests/conftest.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from pawl.local.standin import AwsStandIn
from tests.support.plain_moto import aws_clients, plain_moto_server

pytestmark = pytest.mark.slow

VOLATILE = {
    "ResponseMetadata",
    "MessageId",
    "ReceiptHandle",
    "MD5OfBody",
    "MD5OfMessageAttributes",
    "SentTimestamp",
    "ApproximateFirstReceiveTimestamp",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "CreationDateTime",
    "TableId",
    "SenderId",
}


@pytest.fixture(scope="module")
def standin() -> Iterator[AwsStandIn]:
    server = AwsStandIn()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def plain_moto() -> Iterator[str]:
    with plain_moto_server() as endpoint:
        yield endpoint


def _standin_clients(server: AwsStandIn) -> tuple[Any, Any]:
    """Clients signing with the stand-in's own key pair."""
    return aws_clients(server.endpoint, server.credentials)


def _stable(value: Any) -> Any:
    """The response without what differs between two correct runs."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _error(call: Callable[[], Any]) -> str:
    try:
        call()
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "no error"


ITEM = {
    "pk": {"S": "run"},
    "empty": {"S": ""},
    "number": {"N": "12.50"},
    "blob": {"B": b"\x00\xffbytes"},
    "blobs": {"BS": [b"a", b"\x01"]},
    "numbers": {"NS": ["1", "2.5"]},
    "strings": {"SS": ["x", "y"]},
    "none": {"NULL": True},
    "flag": {"BOOL": False},
    "nested": {"M": {"a": {"L": [{"S": "q"}, {"M": {}}, {"L": []}, {"N": "3"}]}}},
}


def dynamodb_conversation(dynamodb: Any) -> list[Any]:
    """Table and item calls whose every answer is recorded."""
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    by_group = {
        "IndexName": "by_group",
        "KeySchema": [{"AttributeName": "group", "KeyType": "HASH"}, keys[1]],
        "Projection": {"ProjectionType": "ALL"},
    }
    answers = [
        dynamodb.create_table(
            TableName="conversation",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=keys,
            AttributeDefinitions=[
                {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "group")
            ],
            GlobalSecondaryIndexes=[by_group],
        )
    ]
    for sk in range(30):  # two partitions, one index group across both
        for pk in ("run", "other"):
            item = {**ITEM, "pk": {"S": pk}, "sk": {"S": f"{sk:03d}"}, "group": {"S": "g"}}
            dynamodb.put_item(TableName="conversation", Item=item)
    key = {"pk": {"S": "run"}, "sk": {"S": "007"}}
    answers.append(dynamodb.get_item(TableName="conversation", Key=key))
    answers.append(
        dynamodb.update_item(
            TableName="conversation",
            Key=key,
            UpdateExpression="SET #n = #n + :one",
            ExpressionAttributeNames={"#n": "number"},
            ExpressionAttributeValues={":one": {"N": "1"}},
            ReturnValues="ALL_NEW",
        )
    )
    pages = dynamodb.get_paginator("query").paginate(
        TableName="conversation",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "run"}},
        PaginationConfig={"PageSize": 7},
    )
    answers.extend(pages)
    answers.extend(
        dynamodb.get_paginator("query").paginate(
            TableName="conversation",
            IndexName="by_group",
            KeyConditionExpression="#g = :g AND sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#g": "group"},
            ExpressionAttributeValues={
                ":g": {"S": "g"},
                ":low": {"S": "005"},
                ":high": {"S": "020"},
            },
            PaginationConfig={"PageSize": 9},
        )
    )
    # Backwards through the index, ties on its range key broken by the table's keys; then
    # again after an update moved an item to another index partition (the stand-in groups
    # index partitions once per table state).
    by_group_backwards = {
        "TableName": "conversation",
        "IndexName": "by_group",
        "KeyConditionExpression": "#g = :g",
        "ExpressionAttributeNames": {"#g": "group"},
        "ExpressionAttributeValues": {":g": {"S": "g"}},
        "ScanIndexForward": False,
        "PaginationConfig": {"PageSize": 6},
    }
    answers.extend(dynamodb.get_paginator("query").paginate(**by_group_backwards))
    dynamodb.update_item(
        TableName="conversation",
        Key={"pk": {"S": "other"}, "sk": {"S": "005"}},
        UpdateExpression="SET #g = :h",
        ExpressionAttributeNames={"#g": "group"},
        ExpressionAttributeValues={":h": {"S": "h"}},
    )
    answers.extend(dynamodb.get_paginator("query").paginate(**by_group_backwards))
    answers.extend(
        dynamodb.get_paginator("query").paginate(
            TableName="conversation",
            KeyConditionExpression="pk = :pk AND sk <= :until",
            ExpressionAttributeValues={":pk": {"S": "other"}, ":until": {"S": "017"}},
            ScanIndexForward=False,
            PaginationConfig={"PageSize": 4},
        )
    )
    answers.append(
        dynamodb.query(
            TableName="conversation",
            KeyConditionExpression="pk = :pk AND sk > :after",
            ExpressionAttributeValues={":pk": {"S": "other"}, ":after": {"S": "025"}},
            ScanIndexForward=False,
        )
    )
    answers.append(
        dynamodb.query(
            TableName="conversation",
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": "nobody"}},
        )
    )
    answers.append(dynamodb.batch_get_item(RequestItems={"conversation": {"Keys": [key]}}))
    answers.extend(_projections(dynamodb, key))
    answers.append(dynamodb.describe_table(TableName="conversation"))
    answers.append(
        _error(
            lambda: dynamodb.put_item(
                TableName="conversation",
                Item=ITEM | {"sk": {"S": "007"}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        )
    )
    return answers


#: Projections the stand-in takes attribute by attribute (top-level names of values that
#: survive moto's round trip) and ones it leaves to moto (other types, nested paths).
PROJECTIONS = [
    ["pk", "sk", "empty", "number", "none", "flag"],
    ["sk", "missing", "pk"],
    # Not the sets: moto's round trip puts their members in a set, so their order differs
    # from one process to the next.
    ["pk", "blob"],
    ["pk", "nested"],
    ["nested.a[0]", "number"],
]


def _projection(paths: list[str]) -> dict[str, Any]:
    """A ProjectionExpression of ``paths``, each top-level name a placeholder (some are
    reserved words)."""
    names = {f"#{path.split('.')[0]}": path.split(".")[0] for path in paths}
    expression = ", ".join(f"#{path}" for path in paths)
    return {"ProjectionExpression": expression, "ExpressionAttributeNames": names}


def _projections(dynamodb: Any, key: dict[str, Any]) -> list[Any]:
    """The same items read through each projection by Query, GetItem and BatchGetItem."""
    answers: list[Any] = []
    dynamodb.put_item(
        TableName="conversation", Item=ITEM | {"sk": {"S": "100"}, "number": {"N": "0100"}}
    )
    for paths in PROJECTIONS:
        read = _projection(paths)
        answers.extend(
            dynamodb.get_paginator("query").paginate(
                TableName="conversation",
                KeyConditionExpression="pk = :pk AND sk >= :from",
                ExpressionAttributeValues={":pk": {"S": "run"}, ":from": {"S": "025"}},
                PaginationConfig={"PageSize": 4},
                **read,
            )
        )
        answers.append(dynamodb.get_item(TableName="conversation", Key=key, **read))
        keys = [key, {"pk": {"S": "run"}, "sk": {"S": "100"}}]
        answer = dynamodb.batch_get_item(RequestItems={"conversation": {"Keys": keys, **read}})
        answer["Responses"]["conversation"].sort(key=repr)  # its order is unspecified
        answers.append(answer)
    return answers


def sqs_conversation(sqs: Any) -> list[Any]:
    """Sends, receives, deletes (also twice and with stale handles) and the queue's counts."""
    url = sqs.create_queue(QueueName="conversation", Attributes={"VisibilityTimeout": "60"})[
        "QueueUrl"
    ]
    counts = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
        "MessageRetentionPeriod",
    ]

    def attributes() -> Any:
        return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=counts)["Attributes"]

    for batch in range(3):
        entries = [{"Id": str(i), "MessageBody": f"m{batch}-{i}"} for i in range(10)]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=900)
    answers: list[Any] = [attributes()]
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    messages = received["Messages"]
    answers.append(sorted(m["Body"] for m in messages))
    answers.append(sorted(m["Attributes"]["ApproximateReceiveCount"] for m in messages))
    answers.append(attributes())
    first = messages[0]["ReceiptHandle"]
    answers.append(
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                for i, m in enumerate(messages[:5])
            ],
        )
    )
    answers.append(sqs.delete_message(QueueUrl=url, ReceiptHandle=first))  # deleted twice: fine
    answers.append(_error(lambda: sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")))
    answers.append(attributes())
    # Made visible again and received anew: the old handle still deletes it.
    stale = messages[5]["ReceiptHandle"]
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=stale, VisibilityTimeout=0)
    answers.append(attributes())
    answers.append(sqs.delete_message(QueueUrl=url, ReceiptHandle=stale))
    answers.append(attributes())
    return answers


@pytest.mark.parametrize("conversation", [dynamodb_conversation, sqs_conversation])
def test_the_patched_standin_answers_like_plain_moto(
    standin: AwsStandIn, plain_moto: str, conversation: Any
) -> None:
    def talk(clients: tuple[Any, Any]) -> list[Any]:
        dynamodb, sqs = clients
        return conversation(dynamodb if conversation is dynamodb_conversation else sqs)

    through_standin = talk(_standin_clients(standin))
    through_plain_moto = talk(aws_clients(plain_moto))
    assert _stable(through_standin) == _stable(through_plain_moto)
    assert len(through_standin) > 5


def test_the_standin_exits_when_its_parent_dies(tmp_path: Any) -> None:
    parent = textwrap.dedent(
        """
        import os, sys
        from pawl.local.standin import AwsStandIn, StandInCredentials
        standin = AwsStandIn()
        standin.start()
        print(standin.pid, flush=True)
        os._exit(0)  # no stop(): as if killed
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, env=env, timeout=60
    )
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), f"stand-in {child} outlived its parent"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = f"/proc/{pid}/stat"
    if os.path.exists(stat):  # a zombie (exited, not yet reaped by init) is not running
        with open(stat) as handle:
            return handle.read().split(")")[1].split()[0] != "Z"
    return True


def test_stop_ends_the_process_and_the_endpoint() -> None:
    server = AwsStandIn()
    server.start()
    dynamodb, _ = _standin_clients(server)
    assert dynamodb.list_tables()["TableNames"] == []
    process = server._process
    server.stop()
    assert process is not None and process.poll() is not None
    assert server.endpoint is None
