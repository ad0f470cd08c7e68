"""The tests' restored resources (tests/support/moto_resources.py) are what
``bootstrap.ensure_resources`` makes, and nothing one test writes reaches the next."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from chalicelib import aws, bootstrap
from chalicelib.settings import get_settings
from chalicelib.store.base import connection
from tests.conftest import reset_process_state
from tests.support import moto_resources


def _described() -> dict[str, Any]:
    """Every table's schema and TTL, every queue's attributes, the buckets: by name."""
    dynamodb, sqs, s3 = connection().client, aws.client("sqs"), aws.client("s3")
    tables = {}
    for name in dynamodb.list_tables()["TableNames"]:
        table = dynamodb.describe_table(TableName=name)["Table"]
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        tables[name] = (
            table["KeySchema"],
            sorted(table["AttributeDefinitions"], key=lambda a: a["AttributeName"]),
            sorted(
                (i["IndexName"], i["KeySchema"], i["Projection"])
                for i in table.get("GlobalSecondaryIndexes", [])
            ),
            table["TableStatus"],
            ttl.get("AttributeName"),
        )
    queues = {}
    for url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        for changing in ("CreatedTimestamp", "LastModifiedTimestamp"):
            attributes.pop(changing, None)
        queues[url] = attributes
    buckets = sorted(b["Name"] for b in s3.list_buckets()["Buckets"])
    return {"tables": tables, "queues": queues, "buckets": buckets}


@pytest.fixture
def fresh_moto() -> Iterator[None]:
    with mock_aws():
        reset_process_state()
        yield
    reset_process_state()


def _in_fresh_moto(make: Any) -> dict[str, Any]:
    with mock_aws():
        reset_process_state()
        make()
        described = _described()
    reset_process_state()
    return described


def test_restored_resources_are_what_bootstrap_makes() -> None:
    made = _in_fresh_moto(bootstrap.ensure_resources)
    _in_fresh_moto(moto_resources.ensure_resources)  # makes the pickle if none yet
    restored = _in_fresh_moto(moto_resources.ensure_resources)  # from the pickle
    assert len(made["tables"]) >= 20 and len(made["queues"]) >= 2, made.keys()
    assert made["buckets"] == [get_settings().bucket]
    assert restored == made


def _first_key(table: str) -> dict[str, Any]:
    """An item holding only the table's key (a "1" of each key attribute's type)."""
    described = connection().client.describe_table(TableName=table)["Table"]
    kinds = {a["AttributeName"]: a["AttributeType"] for a in described["AttributeDefinitions"]}
    return {k["AttributeName"]: {kinds[k["AttributeName"]]: "1"} for k in described["KeySchema"]}


def test_what_one_test_writes_is_gone_in_the_next() -> None:
    def write() -> None:
        moto_resources.ensure_resources()
        for table in connection().client.list_tables()["TableNames"]:
            connection().client.put_item(TableName=table, Item=_first_key(table))
        for queue in aws.client("sqs").list_queues()["QueueUrls"]:
            aws.client("sqs").send_message(QueueUrl=queue, MessageBody="left")
        aws.client("s3").put_object(Bucket=get_settings().bucket, Key="left", Body=b"left")

    def look() -> None:
        moto_resources.ensure_resources()
        for table in connection().client.list_tables()["TableNames"]:
            assert connection().client.scan(TableName=table)["Items"] == [], table
        for queue in aws.client("sqs").list_queues()["QueueUrls"]:
            received = aws.client("sqs").receive_message(QueueUrl=queue, WaitTimeSeconds=0)
            assert received.get("Messages", []) == [], queue
        listed = aws.client("s3").list_objects_v2(Bucket=get_settings().bucket)
        assert listed["KeyCount"] == 0

    _in_fresh_moto(moto_resources.ensure_resources)  # makes the pickle if none yet
    _in_fresh_moto(write)  # a test writing into the restored models
    _in_fresh_moto(look)  # the test after it


def test_models_already_holding_resources_take_bootstraps_own_path(fresh_moto: None) -> None:
    moto_resources.ensure_resources()
    table = connection().client.list_tables()["TableNames"][0]
    item = _first_key(table)
    connection().client.put_item(TableName=table, Item=item)
    moto_resources.ensure_resources()  # not a fresh mock: idempotent, keeps what is there
    assert connection().client.scan(TableName=table)["Items"] == [item]
