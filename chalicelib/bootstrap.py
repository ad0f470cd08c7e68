"""Idempotent creation of what pawl needs in AWS: tables, queues (each with a DLQ), bucket.

Real deployments get these from ``infra/``; the local runtime and the tests call
:func:`ensure_resources` against the stand-in.
"""

from __future__ import annotations

import json

from chalicelib import aws
from chalicelib.settings import get_settings
from chalicelib.store.base import create_tables

MAX_RECEIVE_COUNT = 5
VISIBILITY_TIMEOUT_S = 360


def ensure_queues() -> None:
    sqs = aws.client("sqs")
    for name in get_settings().queue_names():
        dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        sqs.create_queue(
            QueueName=name,
            Attributes={
                "VisibilityTimeout": str(VISIBILITY_TIMEOUT_S),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
                ),
            },
        )


def ensure_bucket() -> None:
    s3 = aws.client("s3")
    bucket = get_settings().bucket
    existing = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    if bucket not in existing:
        s3.create_bucket(Bucket=bucket)


def ensure_resources() -> None:
    create_tables()
    ensure_queues()
    ensure_bucket()
