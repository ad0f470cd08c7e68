"""Webhook delivery end to end: sink -> moto SQS -> worker handler -> a real HTTP receiver.

The receiver verifies every signature with :func:`chalicelib.webhooks.signing.verify`
and answers 401 when it does not hold, so a delivery can only succeed when signed right.
Retries are re-enqueued with ``DelaySeconds`` = 0 here (``PAWL_WEBHOOK_RETRY_BASE_S=0``),
so draining the queue needs no waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chalicelib import aws, queues, wiring
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.webhooks import CreatedWebhook, Delivery
from chalicelib.plugins import hookimpl
from chalicelib.plugins.manager import plugins
from chalicelib.settings import get_settings
from chalicelib.store import tenancy
from chalicelib.store import webhooks as store
from chalicelib.store.pagination import Window
from chalicelib.webhooks import signing
from chalicelib.webhooks.sink import delivery_id
from chalicelib.workers.webhook_delivery import deliver_webhooks
from tests.support.servers import Reply, Request, allow_loopback_port, serve


@pytest.fixture
def env(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_WEBHOOK_RETRY_BASE_S", "0")
    wiring.reload_settings()
    yield
    monkeypatch.delenv("PAWL_WEBHOOK_RETRY_BASE_S")
    wiring.reload_settings()


@pytest.fixture
def project_id(env: None) -> str:
    return tenancy.create_project("acme").id


class Receiver:
    """Answers the scripted statuses in turn (the last one repeats); 401 on a bad signature."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.secret = ""
        self.verified: list[bool] = []

    def __call__(self, request: Request) -> Reply:
        header = request.headers.get(signing.SIGNATURE_HEADER, "")
        ok = signing.verify(self.secret, header, request.body)
        self.verified.append(ok)
        if not ok:
            return Reply(status=401, body={"error": "bad signature"})
        index = min(len(self.verified) - 1, len(self.statuses) - 1)
        return Reply(status=self.statuses[index], body={"ok": True})


def subscribe(project_id: str, url: str, events: list[str], receiver: Receiver) -> CreatedWebhook:
    hook = store.create_webhook(project_id, url, events, signing.new_secret())
    receiver.secret = hook.secret
    return hook


def run_event(project_id: str, name: str = "eval_run.completed", n: int = 1) -> LifecycleEvent:
    run_id = f"evrun_{n:016d}"
    return LifecycleEvent(
        id=f"evt_{n:016d}",
        event=name,
        project_id=project_id,
        resource_type="eval_run",
        resource_id=run_id,
        data={"id": run_id, "status": name.split(".")[1], "passed": True},
        timestamp="2026-01-31T12:00:00.000Z",
    )


def sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event Lambda's SQS event source hands a handler, built from received messages."""
    queue = get_settings().webhook_queue
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": f"arn:aws:sqs:us-east-1:000000000000:{queue}",
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


def receive(max_messages: int = 10) -> list[dict[str, Any]]:
    response = aws.client("sqs").receive_message(
        QueueUrl=queues.queue_url(get_settings().webhook_queue),
        MaxNumberOfMessages=max_messages,
        WaitTimeSeconds=0,
    )
    messages: list[dict[str, Any]] = response.get("Messages", [])
    return messages


def drain(handler: Callable[[dict[str, Any], Any], Any] = deliver_webhooks) -> list[str]:
    """Feed the queue to the handler like Lambda does until it is empty (bounded).

    Deletes what the handler acknowledged; returns the ids it reported as failed.
    """
    failed: list[str] = []
    sqs = aws.client("sqs")
    url = queues.queue_url(get_settings().webhook_queue)
    for _ in range(50):
        messages = receive()
        if not messages:
            return failed
        answer = handler(sqs_event(messages), None)
        reported = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
        failed += sorted(reported)
        for m in messages:
            if m["MessageId"] not in reported:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    raise AssertionError("the webhook queue never drained")


def deliveries(hook_id: str) -> list[Delivery]:
    return store.list_deliveries(hook_id, Window(limit=100)).items


def test_success_is_signed_and_carries_the_envelope(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, f"{server.url}/hook", ["eval_run.*"], receiver)
        event = run_event(project_id)
        assert plugins().deliver_event(event) == []
        assert server.requests == []  # the sink only queues: no HTTP on the engine's path
        assert drain() == []

    [request] = server.requests
    assert receiver.verified == [True]
    assert request.method == "POST" and request.path == "/hook"
    assert request.json() == event.envelope()
    assert request.headers[signing.EVENT_HEADER] == "eval_run.completed"
    assert request.headers[signing.DELIVERY_HEADER] == delivery_id(event.id, hook.id)
    assert request.headers["Content-Type"] == "application/json"
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts, row.status_code) == ("success", 1, 200)
    assert row.last_error is None and row.next_attempt_at is None


def test_only_subscribed_webhooks_of_the_project_receive(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        completed = subscribe(project_id, server.url, ["eval_run.completed"], receiver)
        failed_only = store.create_webhook(project_id, server.url, ["eval_run.failed"], "s" * 20)
        elsewhere = tenancy.create_project("globex").id
        foreign = store.create_webhook(elsewhere, server.url, ["eval_run.*"], "s" * 20)
        plugins().deliver_event(run_event(project_id, "eval_run.completed"))
        drain()
    assert len(server.requests) == 1 and receiver.verified == [True]
    assert [d.status for d in deliveries(completed.id)] == ["success"]
    assert deliveries(failed_only.id) == [] and deliveries(foreign.id) == []


def test_soats_eval_runs_spelling_subscribes_and_delivers_the_canonical_name(
    project_id: str,
) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        completed = subscribe(project_id, server.url, ["eval_runs.completed"], receiver)
        everything = store.create_webhook(project_id, server.url, ["eval_runs.*"], "s" * 20)
        failed_only = store.create_webhook(project_id, server.url, ["eval_runs.failed"], "s" * 20)
        plugins().deliver_event(run_event(project_id, "eval_run.completed"))
        drain()
    assert {r.headers[signing.EVENT_HEADER] for r in server.requests} == {"eval_run.completed"}
    assert {r.json()["event"] for r in server.requests} == {"eval_run.completed"}
    assert [d.status for d in deliveries(completed.id)] == ["success"]
    assert [d.event_type for d in deliveries(completed.id) + deliveries(everything.id)] == [
        "eval_run.completed"
    ] * 2
    assert deliveries(failed_only.id) == []


def test_two_failures_then_success_takes_three_attempts(project_id: str) -> None:
    receiver = Receiver([500, 500, 200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.failed"], receiver)
        event = run_event(project_id, "eval_run.failed")
        plugins().deliver_event(event)
        assert drain() == []
    assert receiver.verified == [True, True, True]
    assert {r.headers[signing.DELIVERY_HEADER] for r in server.requests} == {
        delivery_id(event.id, hook.id)
    }
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts, row.status_code) == ("success", 3, 200)
    assert row.last_error is None


def test_three_failures_mark_the_delivery_failed(project_id: str) -> None:
    receiver = Receiver([500])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        assert drain() == []
    assert len(server.requests) == 3 and all(receiver.verified)
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts, row.status_code) == ("failed", 3, 500)
    assert row.last_error == "receiver answered HTTP 500" and row.next_attempt_at is None
    assert receive() == []


def test_attempt_state_between_retries(project_id: str) -> None:
    receiver = Receiver([503, 200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        first = receive()
        assert len(first) == 1
        deliver_webhooks(sqs_event(first), None)
        [row] = deliveries(hook.id)
        assert (row.status, row.attempts, row.status_code) == ("pending", 1, 503)
        assert row.last_error == "receiver answered HTTP 503" and row.next_attempt_at
        # The first message was not deleted: a redelivery of it must not attempt again.
        deliver_webhooks(sqs_event(first), None)
        assert len(server.requests) == 1
        drain()
    assert [d.attempts for d in deliveries(hook.id)] == [2]


def test_unreachable_receiver_records_the_error(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        closed_url = server.url
    with allow_loopback_port(server.port):  # still named, but the server is gone
        hook = subscribe(project_id, closed_url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        assert drain() == []
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts, row.status_code) == ("failed", 3, None)
    assert row.last_error is not None and "could not connect" in row.last_error


def test_same_event_twice_is_one_delivery(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        event = run_event(project_id)
        plugins().deliver_event(event)
        plugins().deliver_event(event)
        drain()
        plugins().deliver_event(event)  # after it succeeded: nothing is queued at all
        assert receive() == []
    assert len(server.requests) == 1
    assert [d.status for d in deliveries(hook.id)] == ["success"]


def test_duplicate_sqs_message_posts_once(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        [message] = receive()
        twin = {**message, "MessageId": "a-redelivered-copy"}
        answer = deliver_webhooks(sqs_event([message, twin]), None)
    assert answer == {"batchItemFailures": []}
    assert len(server.requests) == 1
    assert [d.attempts for d in deliveries(hook.id)] == [1]


def test_deleted_webhook_fails_its_pending_delivery_unsent(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        store.delete_webhook(hook.id)
        drain()
    assert server.requests == []
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts) == ("failed", 0)
    assert row.last_error == "webhook was deleted before delivery"


def test_malformed_message_is_reported_for_the_dlq(env: None) -> None:
    queues.send(get_settings().webhook_queue, {"nonsense": True})
    [message] = receive()
    answer = deliver_webhooks(sqs_event([message]), None)
    assert answer == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}


class RaisingSink:
    @hookimpl
    def pawl_deliver_event(self, event: LifecycleEvent) -> None:
        raise RuntimeError("this sink is broken")


@pytest.mark.parametrize("raising_first", [True, False])
def test_a_raising_sink_does_not_stop_the_webhook_sink(
    project_id: str, raising_first: bool
) -> None:
    host = wiring.new_plugin_host(load_entry_points=False)
    sink_name = "chalicelib.webhooks.sink"
    if raising_first:
        # Re-register the built-in sink after the broken one, so the broken one runs first.
        sink = host.pm.unregister(name=sink_name)
        host.pm.register(RaisingSink(), name="raising")
        host.pm.register(sink, name=sink_name)
    else:
        host.pm.register(RaisingSink(), name="raising")
    order = [i.plugin_name for i in host.pm.hook.pawl_deliver_event.get_hookimpls()]
    assert (order.index("raising") < order.index(sink_name)) == raising_first

    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        assert host.deliver_event(run_event(project_id)) == ["raising"]
        drain()
    assert len(server.requests) == 1
    assert [d.status for d in deliveries(hook.id)] == ["success"]


def test_secret_never_reaches_pawl_logs(project_id: str, caplog: pytest.LogCaptureFixture) -> None:
    # pawl's own loggers, at every level. (botocore/pynamodb DEBUG logs dump whole request
    # bodies, this row included: never run them at DEBUG in production.)
    caplog.set_level("DEBUG", logger="pawl")
    receiver = Receiver([500, 200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        drain()
    assert len(server.requests) == 2
    ours = [r for r in caplog.records if r.name.startswith("pawl")]
    assert len(ours) >= 3, "the sink and both attempts should log"
    assert all(hook.secret not in r.getMessage() for r in ours)
