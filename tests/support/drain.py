"""Drive a Chalice app's SQS handlers against moto's queues, the way Lambda would.

``drain_queues(app)`` receives from every queue an ``@on_sqs_message`` handler reads, calls
the handler with a Lambda-shaped event, deletes what succeeded and makes the records the
handler reported in ``batchItemFailures`` (or every record, if it raised) visible again at
once, until every queue is empty. Bounded: it gives up after ``max_rounds`` rounds.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from chalice import Chalice
from chalice.app import SQSEventConfig

from chalicelib import aws, queues
from chalicelib.settings import get_settings

log = logging.getLogger("tests.drain")


@dataclass
class DrainReport:
    batches: int = 0
    delivered: int = 0
    failed: int = 0
    failed_ids: list[str] = field(default_factory=list)


def _sources(app: Chalice) -> list[tuple[str, str, int]]:
    return [
        (config.name, config.queue, config.batch_size)
        for config in app.event_sources
        if isinstance(config, SQSEventConfig) and config.queue
    ]


def lambda_event(messages: list[dict[str, Any]], queue: str) -> dict[str, Any]:
    region = get_settings().region
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes", {})),
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:{region}:123456789012:{queue}",
                "awsRegion": region,
            }
            for m in messages
        ]
    }


def receive(queue: str, max_messages: int) -> list[dict[str, Any]]:
    """Up to ``max_messages`` visible messages: SQS gives 10 per call, so as many calls as it
    takes (a batch of more than 10, as Lambda gathers one; no waiting for more)."""
    messages: list[dict[str, Any]] = []
    while len(messages) < max_messages:
        response = aws.client("sqs").receive_message(
            QueueUrl=queues.queue_url(queue),
            MaxNumberOfMessages=min(10, max_messages - len(messages)),
            AttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        received = response.get("Messages", [])
        if not received:
            break
        messages += received
    return messages


def deliver(app: Chalice, name: str, queue: str, messages: list[dict[str, Any]]) -> list[str]:
    """Call the handler once with ``messages``; settle them as Lambda would. Returns failed ids."""
    sqs = aws.client("sqs")
    url = queues.queue_url(queue)
    try:
        result = app.handler_map[name](lambda_event(messages, queue), None)
        failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
    except Exception:
        log.exception("handler %s raised", name)
        failed = {m["MessageId"] for m in messages}
    for message in messages:
        if message["MessageId"] in failed:
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        else:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return sorted(failed)


def drain_queues(app: Chalice, max_rounds: int = 500) -> DrainReport:
    """Deliver until every handler's queue is empty; raise if that takes ``max_rounds``."""
    report = DrainReport()
    for _ in range(max_rounds):
        busy = False
        for name, queue, batch_size in _sources(app):
            messages = receive(queue, batch_size)
            if not messages:
                continue
            busy = True
            failed = deliver(app, name, queue, messages)
            report.batches += 1
            report.delivered += len(messages)
            report.failed += len(failed)
            report.failed_ids += failed
        if not busy:
            return report
    raise RuntimeError(f"queues still busy after {max_rounds} rounds: {report}")
