"""The SQS poller behaves like Lambda's event source mapping (real queues in moto)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from chalice import Chalice
from chalice.app import SQSEvent
from moto import mock_aws

from chalicelib import aws
from pawl.local.pollers import (
    QueuePoller,
    SqsSource,
    build_sqs_event,
    failed_message_ids,
    sqs_sources,
)
from pawl.local.quiesce import Quiesce
from tests.conftest import reset_process_state

MAX_RECEIVES = 3


@dataclass
class Queues:
    url: str
    dlq_url: str


@dataclass
class Seen:
    bodies: Counter[str] = field(default_factory=Counter)
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture
def queues() -> Iterator[Queues]:
    with mock_aws():
        reset_process_state()
        sqs = aws.client("sqs")
        dlq_url = sqs.create_queue(QueueName="toy-dlq")["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        policy = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVES)}
        url = sqs.create_queue(
            QueueName="toy",
            Attributes={"VisibilityTimeout": "60", "RedrivePolicy": json.dumps(policy)},
        )["QueueUrl"]
        yield Queues(url, dlq_url)
    reset_process_state()


def toy_app(seen: Seen) -> Chalice:
    """A handler that fails records whose body is 'poison' and raises on 'explode'."""
    app = Chalice("poller-test")

    @app.on_sqs_message(queue="toy", batch_size=10)
    def handle(event: SQSEvent) -> dict[str, Any]:
        raw = event.to_dict()
        with seen.lock:
            seen.events.append(raw)
            seen.bodies.update(record["body"] for record in raw["Records"])
        if any(record["body"] == "explode" for record in raw["Records"]):
            raise RuntimeError("boom")
        failures = [
            {"itemIdentifier": record["messageId"]}
            for record in raw["Records"]
            if record["body"] == "poison"
        ]
        return {"batchItemFailures": failures}

    return app


def _poller(app: Chalice, **kwargs: Any) -> QueuePoller:
    (source,) = sqs_sources(app)
    return QueuePoller(app, source, quiesce=Quiesce(), retry_delay_s=0, wait_s=0, **kwargs)


def _bodies(url: str) -> list[str]:
    sqs = aws.client("sqs")
    found = []
    for _ in range(3):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        found = [m["Body"] for m in got.get("Messages", [])]
        if found:
            break
    return sorted(found)


def _send(url: str, *bodies: str) -> None:
    for body in bodies:
        aws.client("sqs").send_message(QueueUrl=url, MessageBody=body)


def test_sources_come_from_the_apps_sqs_registrations() -> None:
    assert sqs_sources(toy_app(Seen())) == [SqsSource("handle", "toy", 10)]


def test_event_is_lambda_shaped_with_a_distinct_id_per_record(queues: Queues) -> None:
    _send(queues.url, "a", "b")
    seen = Seen()
    poller = _poller(toy_app(seen))
    while sum(seen.bodies.values()) < 2:
        assert poller.poll_once() > 0
    records = [r for event in seen.events for r in event["Records"]]
    assert len({r["messageId"] for r in records}) == 2
    for record in records:
        assert record["eventSource"] == "aws:sqs"
        assert record["eventSourceARN"].endswith(":toy")
        assert record["attributes"]["ApproximateReceiveCount"] == "1"
        assert record["receiptHandle"]


def test_only_reported_failures_stay_and_reach_the_dlq_after_max_receives(
    queues: Queues,
) -> None:
    _send(queues.url, "a", "poison", "b")
    seen = Seen()
    poller = _poller(toy_app(seen))
    for _ in range(20):  # bounded: each poll either handles records or moves one to the DLQ
        poller.poll_once()
        if _bodies(queues.dlq_url):
            break
    assert _bodies(queues.dlq_url) == ["poison"]
    assert _bodies(queues.url) == []
    assert seen.bodies == Counter({"a": 1, "b": 1, "poison": MAX_RECEIVES})
    assert poller.stats.deleted == 2
    assert poller.stats.retried == MAX_RECEIVES


def test_a_handler_that_raises_fails_the_whole_batch(queues: Queues) -> None:
    _send(queues.url, "fine", "explode")
    seen = Seen()
    poller = _poller(toy_app(seen))
    handled = 0
    while handled < 2:
        handled += poller.poll_once()
    assert _bodies(queues.url) == ["explode", "fine"]
    assert poller.stats.handler_errors >= 1
    assert poller.stats.deleted == 0


def test_worker_threads_handle_every_message_once(queues: Queues) -> None:
    bodies = [f"m{i}" for i in range(25)]
    _send(queues.url, *bodies)
    seen = Seen()
    app = toy_app(seen)
    (source,) = sqs_sources(app)
    poller = QueuePoller(app, source, quiesce=Quiesce(), workers=2, retry_delay_s=0, wait_s=1)
    poller.start()
    try:
        deadline = time.monotonic() + 30
        while sum(seen.bodies.values()) < len(bodies) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        poller.stop()
    assert seen.bodies == Counter(bodies)
    assert _bodies(queues.url) == []


def test_failed_ids_follow_lambdas_rules() -> None:
    batch = ["m1", "m2", "m3"]
    assert failed_message_ids(None, batch) == set()
    assert failed_message_ids({"batchItemFailures": []}, batch) == set()
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": "m2"}]}, batch) == {"m2"}
    # An identifier that is missing, empty or not in the batch fails every record.
    assert failed_message_ids({"batchItemFailures": [{"itemIdentifier": "zz"}]}, batch) == set(
        batch
    )
    assert failed_message_ids({"batchItemFailures": [{}]}, batch) == set(batch)
    assert failed_message_ids({"batchItemFailures": "m1"}, batch) == set(batch)


def test_message_attributes_take_lambdas_shape() -> None:
    message = {
        "MessageId": "id-1",
        "ReceiptHandle": "rh",
        "Body": "{}",
        "Attributes": {"ApproximateReceiveCount": "2"},
        "MessageAttributes": {
            "kind": {"StringValue": "item", "DataType": "String"},
            "raw": {"BinaryValue": b"\x00\x01", "DataType": "Binary"},
        },
    }
    (record,) = build_sqs_event([message], "arn:aws:sqs:us-east-1:1:q", "us-east-1")["Records"]
    assert record["messageAttributes"]["kind"]["stringValue"] == "item"
    assert record["messageAttributes"]["raw"]["binaryValue"] == "AAE="
    assert record["attributes"]["ApproximateReceiveCount"] == "2"


def test_records_received_after_a_stop_go_back_to_the_queue_at_once(queues: Queues) -> None:
    """A long poll that returns after the stop: nothing handled, nothing held for 60 s."""
    _send(queues.url, "late")
    seen = Seen()
    poller = _poller(toy_app(seen))
    poller.request_stop()
    assert poller.poll_once() == 0
    assert seen.bodies == Counter()
    assert _bodies(queues.url) == ["late"]  # visible now, not after the queue's 60 s


def test_without_a_batching_window_one_receive_is_the_batch(queues: Queues) -> None:
    """Lambda hands a batch of at most 10 over as one receive returned it, with no window
    to wait for more: the poller makes one receive per batch, however short."""
    _send(queues.url, "a", "b", "c")
    seen = Seen()
    poller = _poller(toy_app(seen))
    assert poller.source.batching_window_s == 0
    receives: list[str] = []

    def count(model: Any, **_: Any) -> None:
        receives.append(model.name)

    sqs = aws.client("sqs")
    sqs.meta.events.register("before-call.sqs.ReceiveMessage", count)
    try:
        handled = 0
        while handled < 3:
            got = poller.poll_once()
            assert got > 0
            handled += got
    finally:
        sqs.meta.events.unregister("before-call.sqs.ReceiveMessage", count)
    assert len(receives) == len(seen.events)  # never a second receive to fill a batch
    assert sorted(seen.bodies) == ["a", "b", "c"]
