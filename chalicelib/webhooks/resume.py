"""Resume webhook deliveries whose next attempt's message was lost.

A pending delivery's row says which attempt is next and when it is due
(``next_attempt_at``); the SQS message that carries that attempt can be lost (the local
runtime does not persist messages; on AWS a message can expire or be parked in a DLQ).
The rows are the truth: a delivery that is overdue by a grace period gets a new message
for its next attempt. Re-enqueueing is always safe: the worker skips an attempt already
recorded, and of two messages for the same attempt only the one that claims it POSTs
(:func:`chalicelib.store.webhooks.claim_attempt`), so a receiver still gets each
(webhook, event) once per attempt, with the same attempt count and backoff as before.

Two callers: the ``resume_stalled_deliveries`` schedule (every minute, deployed too), and
the local runtime at start, when every message is known lost and no worker is alive.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from chalicelib import clock, queues
from chalicelib.settings import get_settings
from chalicelib.store import webhooks as store
from chalicelib.webhooks.delivery import MAX_DELAY_S, DeliveryMessage

log = logging.getLogger("pawl.webhooks")


@dataclass
class ResumeReport:
    resumed: int = 0
    #: Claims dropped because their holder is known dead (only at a restart).
    claims_released: int = 0


def sweep(grace_s: int | None = None) -> ResumeReport:
    """Re-enqueue the next attempt of every delivery overdue by more than ``grace_s``."""
    grace = get_settings().webhook_sweep_grace_s if grace_s is None else grace_s
    now = clock.now()
    due_before = clock.iso(now - timedelta(seconds=grace))
    return _resume(store.iter_pending_delivery_ids(due_before), now, after_restart=False)


def resume_after_restart() -> ResumeReport:
    """Re-enqueue every pending delivery (the local runtime lost all messages).

    No worker survived the restart, so claims are released; an attempt not yet due is
    enqueued with the delay it still had to wait.
    """
    return _resume(store.iter_pending_delivery_ids(), clock.now(), after_restart=True)


def _resume(delivery_ids: Iterator[str], now: datetime, after_restart: bool) -> ResumeReport:
    report = ResumeReport()
    queue = get_settings().webhook_queue
    for delivery_id in list(delivery_ids):
        try:
            found = store.get_delivery(delivery_id)
            if found is None or found.delivery.status != "pending":
                continue  # finished since the index was read
            attempt = found.delivery.attempts + 1
            if after_restart and store.release_claim(delivery_id, attempt):
                report.claims_released += 1
            message = DeliveryMessage(delivery_id=delivery_id, attempt=attempt)
            delay_s = _delay_s(found.delivery.next_attempt_at, now)
            queues.send(queue, message.body(), delay_s=delay_s)
            report.resumed += 1
        except Exception:  # one broken row must not stop the sweep
            log.exception("resuming webhook delivery %s", delivery_id)
    if report.resumed:
        log.info("webhook deliveries resumed: %s", report)
    return report


def _delay_s(next_attempt_at: str | None, now: datetime) -> int:
    if not next_attempt_at:
        return 0
    remaining = (clock.parse_iso(next_attempt_at) - now).total_seconds()
    return int(min(max(remaining, 0), MAX_DELAY_S))
