"""Webhook deliveries resume when their message is lost, and are never POSTed twice.

The rows are the truth: the sweeper (a schedule) and a restart re-enqueue the next attempt
of a pending delivery; a claim with a lease makes sure that of two messages for the same
attempt (a stale one and a re-enqueued one) only one reaches the receiver.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from chalicelib import aws, queues, wiring
from chalicelib.plugins.manager import plugins
from chalicelib.settings import get_settings
from chalicelib.store import tenancy
from chalicelib.store import webhooks as store
from chalicelib.webhooks import resume
from chalicelib.webhooks.delivery import DeliveryMessage, deliver
from chalicelib.webhooks.sink import delivery_id
from chalicelib.workers.schedules import resume_stalled_deliveries
from pawl.local.scheduler import scheduled_event
from tests.integration.test_webhook_delivery import (
    Receiver,
    deliveries,
    drain,
    receive,
    run_event,
    subscribe,
)
from tests.support.servers import Reply, Request, serve


@pytest.fixture
def project_id(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("PAWL_WEBHOOK_RETRY_BASE_S", "0")
    monkeypatch.setenv("PAWL_WEBHOOK_SWEEP_GRACE_S", "0")
    wiring.reload_settings()
    yield tenancy.create_project("acme").id
    monkeypatch.delenv("PAWL_WEBHOOK_RETRY_BASE_S")
    monkeypatch.delenv("PAWL_WEBHOOK_SWEEP_GRACE_S")
    wiring.reload_settings()


#: The tick EventBridge sends the sweeper (the local runtime's scheduler builds the same).
SCHEDULED = scheduled_event(
    "resume_stalled_deliveries", "us-east-1", datetime(2026, 1, 1, tzinfo=UTC)
)


def lose_every_message() -> None:
    """What a restart of the local runtime (or an expired message on AWS) does."""
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(get_settings().webhook_queue))


def test_a_lost_retry_is_resumed_by_the_sweeper_and_keeps_its_attempt_count(
    project_id: str,
) -> None:
    receiver = Receiver([500, 200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        deliver(DeliveryMessage.parse(receive()[0]["Body"]))  # attempt 1 answers 500
        lose_every_message()  # the message for attempt 2 is gone
        [row] = deliveries(hook.id)
        assert (row.status, row.attempts) == ("pending", 1)

        assert resume_stalled_deliveries(SCHEDULED, None) == {"resumed": 1}
        drain()
        assert resume_stalled_deliveries(SCHEDULED, None) == {"resumed": 0}  # nothing left pending
    assert len(server.requests) == 2
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts, row.status_code) == ("success", 2, 200)
    assert list(store.iter_pending_delivery_ids()) == []


def test_the_sweeper_leaves_deliveries_that_are_not_overdue(
    project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAWL_WEBHOOK_SWEEP_GRACE_S", "300")
    wiring.reload_settings()
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        plugins().deliver_event(run_event(project_id))
        assert resume.sweep().resumed == 0  # its own message is still on the way
        drain()
    assert [d.status for d in deliveries(hook.id)] == ["success"]


def test_a_stale_and_a_resumed_message_racing_post_once(project_id: str) -> None:
    in_post = threading.Event()
    release = threading.Event()

    def slow_receiver(request: Request) -> Reply:
        in_post.set()
        release.wait(10)
        return Reply(status=200, body={"ok": True})

    with serve(slow_receiver) as server:
        hook = store.create_webhook(project_id, server.url, ["eval_run.*"], "s" * 32)
        plugins().deliver_event(run_event(project_id))
        [stale] = receive()
        message = DeliveryMessage.parse(stale["Body"])
        outcomes: list[str] = []
        first = threading.Thread(target=lambda: outcomes.append(deliver(message)))
        first.start()
        assert in_post.wait(10)
        assert resume.sweep().resumed == 1  # overdue (grace 0): re-enqueued while in flight
        [resumed] = receive()
        assert deliver(DeliveryMessage.parse(resumed["Body"])) == "skipped"  # claimed
        release.set()
        first.join(10)
    assert outcomes == ["succeeded"]
    assert len(server.requests) == 1
    [row] = deliveries(hook.id)
    assert (row.status, row.attempts) == ("success", 1)


def test_a_restart_releases_a_dead_workers_claim(project_id: str) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = subscribe(project_id, server.url, ["eval_run.*"], receiver)
        event = run_event(project_id)
        plugins().deliver_event(event)
        did = delivery_id(event.id, hook.id)
        # A worker claimed attempt 1 and died before POSTing (its lease has long to run).
        assert store.claim_attempt(did, 1, lease_s=3600)
        lose_every_message()
        assert resume.sweep().resumed == 1
        drain()
        assert server.requests == []  # the sweeper respects a live-looking claim
        report = resume.resume_after_restart()  # no worker survives a restart
        assert (report.resumed, report.claims_released) == (1, 1)
        drain()
    assert len(server.requests) == 1
    assert [(d.status, d.attempts) for d in deliveries(hook.id)] == [("success", 1)]
