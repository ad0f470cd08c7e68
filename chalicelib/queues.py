"""The SQS client pawl's engine and webhooks use: send one message or many in batches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from chalicelib import aws

SQS_BATCH = 10
_urls: dict[str, str] = {}
_lock = threading.Lock()


def queue_url(name: str) -> str:
    url = _urls.get(name)
    if url is None:
        with _lock:
            url = aws.client("sqs").get_queue_url(QueueName=name)["QueueUrl"]
            _urls[name] = url
    return url


def reset() -> None:
    with _lock:
        _urls.clear()


def send(queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
    aws.client("sqs").send_message(
        QueueUrl=queue_url(queue), MessageBody=json.dumps(body), DelaySeconds=delay_s
    )


def send_many(queue: str, bodies: Iterable[dict[str, Any]]) -> int:
    """Send in SQS batches of 10; retries entries SQS reports as failed. Returns the count."""
    return send_many_encoded(queue, (json.dumps(body) for body in bodies))


def send_many_encoded(queue: str, bodies: Iterable[str]) -> int:
    """:func:`send_many` for bodies already encoded as JSON text."""
    url = queue_url(queue)
    sqs = aws.client("sqs")
    sent = 0
    batch: list[dict[str, Any]] = []
    for body in bodies:
        batch.append({"Id": str(len(batch)), "MessageBody": body})
        if len(batch) == SQS_BATCH:
            sent += _send_batch(sqs, url, batch)
            batch = []
    if batch:
        sent += _send_batch(sqs, url, batch)
    return sent


def _send_batch(sqs: Any, url: str, entries: list[dict[str, Any]]) -> int:
    pending = entries
    for _ in range(5):
        response = sqs.send_message_batch(QueueUrl=url, Entries=pending)
        failed_ids = {f["Id"] for f in response.get("Failed", [])}
        if not failed_ids:
            return len(entries)
        pending = [e for e in pending if e["Id"] in failed_ids]
    raise RuntimeError(f"SQS refused {len(pending)} messages after retries")
