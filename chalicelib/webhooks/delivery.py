"""Delivering one webhook attempt: sign, POST, record, and schedule the next attempt.

Each SQS message names a delivery and the attempt it is for. SQS delivers at least
once, so an attempt whose number is already recorded (or a delivery no longer
pending) is skipped, and the row is updated with a conditional write that a duplicate
cannot win twice. A failed attempt re-enqueues the next one with a growing
``DelaySeconds`` *before* recording the failure: a crash in between leaves a duplicate
message (dropped later), never a delivery stuck in ``pending``.

Before it POSTs, a worker claims the attempt (a conditional update with a lease), so of
two messages for the same attempt — a stale one and one re-enqueued by the sweeper or
a restart (:mod:`chalicelib.webhooks.resume`) — only one reaches the receiver.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from chalicelib import clock, outbound, queues
from chalicelib.domain.webhooks import (
    MAX_ATTEMPTS,
    MAX_RESPONSE_BODY_CHARS,
    AttemptAnswer,
    PendingDelivery,
    WebhookTarget,
)
from chalicelib.settings import get_settings
from chalicelib.store import webhooks as store
from chalicelib.webhooks import signing

log = logging.getLogger("pawl.webhooks")

#: SQS refuses a DelaySeconds above 15 minutes.
MAX_DELAY_S = 900
USER_AGENT = "pawl-webhooks/1"
#: A receiver should acknowledge quickly and do its work later.
TIMEOUT_S = 10.0
#: Only the status matters; a receiver's long answer is not read past this.
MAX_ANSWER_BYTES = 64 * 1024
#: How long a claimed attempt is reserved: the POST's timeout and room to record it.
CLAIM_LEASE_S = TIMEOUT_S + 20.0

Outcome = Literal["succeeded", "retrying", "failed", "skipped"]


@dataclass(frozen=True)
class DeliveryMessage:
    """The body of a webhook-queue message: which delivery, and which attempt (1-based)."""

    delivery_id: str
    attempt: int

    def body(self) -> dict[str, Any]:
        return {"delivery_id": self.delivery_id, "attempt": self.attempt}

    @classmethod
    def parse(cls, raw: str) -> DeliveryMessage:
        """Decode a message body; ``ValueError`` when it is not one of ours."""
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("webhook message is not a JSON object")
        delivery_id, attempt = data.get("delivery_id"), data.get("attempt")
        if not isinstance(delivery_id, str) or not isinstance(attempt, int) or attempt < 1:
            raise ValueError("webhook message needs delivery_id (str) and attempt (int >= 1)")
        return cls(delivery_id=delivery_id, attempt=attempt)


def post_once(url: str, body: bytes, headers: dict[str, str]) -> AttemptAnswer:
    """One POST through the shared outbound client, which retries nothing here: the
    delivery's own attempts (spaced by SQS delays) are the retry policy."""
    try:
        response = outbound.request(
            "POST",
            url,
            body=body,
            headers=headers,
            timeout_s=TIMEOUT_S,
            max_attempts=1,
            max_bytes=MAX_ANSWER_BYTES,
        )
    except outbound.OutboundError as exc:
        return AttemptAnswer(status_code=None, error=str(exc))
    kept = response.text[:MAX_RESPONSE_BODY_CHARS] or None
    if response.ok:
        return AttemptAnswer(status_code=response.status, error=None, body=kept)
    return AttemptAnswer(response.status, f"receiver answered HTTP {response.status}", kept)


def retry_delay_s(failed_attempt: int, base_s: int) -> int:
    """Delay before the attempt after ``failed_attempt``: base, 4x base, 16x base, ..."""
    return min(base_s * 4 ** (failed_attempt - 1), MAX_DELAY_S)


def _headers(target: WebhookTarget, pending: PendingDelivery, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.EVENT_HEADER: pending.delivery.event_type,
        signing.DELIVERY_HEADER: pending.delivery.id,
        # Signed at send time, so a retry carries a fresh timestamp.
        signing.SIGNATURE_HEADER: signing.sign(target.secret, body, int(time.time())),
    }


def _is_due(pending: PendingDelivery, message: DeliveryMessage) -> bool:
    delivery = pending.delivery
    if delivery.status != "pending" or delivery.attempts >= message.attempt:
        log.info(
            "delivery %s attempt %d already handled (%s, %d attempts); skipped",
            delivery.id,
            message.attempt,
            delivery.status,
            delivery.attempts,
        )
        return False
    return True


def deliver(message: DeliveryMessage) -> Outcome:
    """Make attempt ``message.attempt`` of one delivery and record what happened."""
    pending = store.get_delivery(message.delivery_id)
    if pending is None:
        log.warning("delivery %s does not exist; message dropped", message.delivery_id)
        return "skipped"
    if not _is_due(pending, message):
        return "skipped"
    target = store.get_target(pending.delivery.webhook_id)
    if target is None:
        store.abandon_delivery(message.delivery_id, "webhook was deleted before delivery")
        return "failed"
    if not target.active:
        store.abandon_delivery(message.delivery_id, "webhook was deactivated before delivery")
        return "failed"
    if not store.claim_attempt(message.delivery_id, message.attempt, CLAIM_LEASE_S):
        log.info(
            "delivery %s attempt %d is being made by another worker; skipped",
            message.delivery_id,
            message.attempt,
        )
        return "skipped"
    body = pending.payload.encode()
    result = post_once(target.url, body, _headers(target, pending, body))
    log.info(
        "delivery %s attempt %d to webhook %s: %s",
        message.delivery_id,
        message.attempt,
        target.id,
        result.status_code if result.status_code is not None else result.error,
    )
    return _record(message, result)


def _record(message: DeliveryMessage, result: AttemptAnswer) -> Outcome:
    attempt = message.attempt
    if result.ok:
        store.record_attempt(message.delivery_id, attempt, "succeeded", result, None)
        return "succeeded"
    if attempt >= MAX_ATTEMPTS:
        store.record_attempt(message.delivery_id, attempt, "failed", result, None)
        return "failed"
    delay_s = retry_delay_s(attempt, get_settings().webhook_retry_base_s)
    next_message = DeliveryMessage(delivery_id=message.delivery_id, attempt=attempt + 1)
    queues.send(get_settings().webhook_queue, next_message.body(), delay_s=delay_s)
    next_at = clock.iso(clock.now() + timedelta(seconds=delay_s))
    store.record_attempt(message.delivery_id, attempt, "pending", result, next_at)
    return "retrying"
