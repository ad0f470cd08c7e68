"""Idempotent creation of what pawl needs in AWS: tables, queues (each with a DLQ), bucket.

Everything is read from :mod:`chalicelib.infra.definitions`, the same definitions the
deployed stack's CloudFormation is generated from, so the local runtime and a deployment
cannot drift. The local runtime and the tests call :func:`ensure_resources` against the
stand-in; a deployment gets these resources from its stack (``make package``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.exceptions import ClientError

from chalicelib import aws
from chalicelib.infra.definitions import TableSpec, queue_specs, table_specs
from chalicelib.settings import get_settings
from chalicelib.store.base import bind, connection

_QUEUE_EXISTS = {"QueueAlreadyExists", "QueueNameExists", "AWS.SimpleQueueService.QueueNameExists"}


def _create_table(client: Any, spec: TableSpec) -> None:
    kwargs: dict[str, Any] = {
        "TableName": spec.name,
        "KeySchema": spec.key_schema,
        "AttributeDefinitions": spec.attribute_definitions,
        "BillingMode": "PAY_PER_REQUEST",
    }
    if spec.global_secondary_indexes:
        kwargs["GlobalSecondaryIndexes"] = spec.global_secondary_indexes
    client.create_table(**kwargs)
    # Tables are usable once ACTIVE; the stand-in creates them ACTIVE, real AWS within
    # seconds, so only real AWS needs the wait.
    if get_settings().aws_endpoint_url is None:
        client.get_waiter("table_exists").wait(TableName=spec.name)
    if spec.ttl_attribute:
        client.update_time_to_live(
            TableName=spec.name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
        )


def _ensure_indexes(client: Any, spec: TableSpec) -> list[str]:
    """Add the GSIs ``spec`` declares that an existing table lacks (a local state made by an
    older pawl); DynamoDB indexes the rows already there. Returns the indexes it added."""
    table = client.describe_table(TableName=spec.name)["Table"]
    present = {i["IndexName"] for i in table.get("GlobalSecondaryIndexes", [])}
    added = []
    for index in spec.global_secondary_indexes:
        if index["IndexName"] in present:
            continue
        client.update_table(
            TableName=spec.name,
            AttributeDefinitions=spec.attribute_definitions,
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        if get_settings().aws_endpoint_url is None:  # real AWS: one index build at a time
            _wait_for_indexes(client, spec.name)
        added.append(index["IndexName"])
    return added


def _wait_for_indexes(client: Any, table_name: str, poll_s: float = 5.0) -> None:
    """Until every index of the table is ACTIVE (real AWS builds a new one for minutes)."""
    while True:
        table = client.describe_table(TableName=table_name)["Table"]
        statuses = {i.get("IndexStatus") for i in table.get("GlobalSecondaryIndexes", [])}
        if statuses <= {"ACTIVE"}:
            return
        time.sleep(poll_s)


def ensure_tables() -> list[str]:
    """Create every missing table, and every missing index of an existing one (idempotent).
    Returns the names of the tables it created."""
    bind()
    client = connection().client
    existing: set[str] = set()
    for page in client.get_paginator("list_tables").paginate():
        existing.update(page.get("TableNames", []))
    created = []
    for spec in table_specs():
        if spec.name not in existing:
            _create_table(client, spec)
            created.append(spec.name)
        else:
            _ensure_indexes(client, spec)
    return created


def ensure_queues() -> None:
    sqs = aws.client("sqs")
    for spec in queue_specs():
        dlq_url = sqs.create_queue(QueueName=spec.dlq_name)["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(spec.max_receive_count)}
        attributes = {
            "VisibilityTimeout": str(spec.visibility_timeout_s),
            "RedrivePolicy": json.dumps(redrive),
        }
        try:
            sqs.create_queue(QueueName=spec.name, Attributes=attributes)
        except ClientError as exc:
            # Made by an older definition (another visibility timeout): converge to this one.
            if exc.response.get("Error", {}).get("Code") not in _QUEUE_EXISTS:
                raise
            url = sqs.get_queue_url(QueueName=spec.name)["QueueUrl"]
            sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)


def ensure_bucket() -> None:
    s3 = aws.client("s3")
    bucket = get_settings().bucket
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket not in existing:
        s3.create_bucket(Bucket=bucket)


def ensure_resources() -> None:
    ensure_tables()
    ensure_queues()
    ensure_bucket()
