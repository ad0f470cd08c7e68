"""The webhook delivery worker: one SQS message is one attempt of one delivery.

Only unexpected failures (an AWS error, a malformed message) are reported in
``batchItemFailures``, so SQS redelivers them and, past ``maxReceiveCount``, parks
them in the DLQ. A receiver that fails is not an unexpected failure: the attempt is
recorded and the next one is enqueued by :func:`chalicelib.webhooks.delivery.deliver`.
"""

from __future__ import annotations

import logging
from typing import Any

from chalice import Blueprint
from chalice.app import SQSEvent

from chalicelib.settings import get_settings
from chalicelib.webhooks.delivery import DeliveryMessage, deliver

log = logging.getLogger("pawl.workers.webhooks")

bp = Blueprint(__name__)


@bp.on_sqs_message(queue=get_settings().webhook_queue, batch_size=10)
def deliver_webhooks(event: SQSEvent) -> dict[str, Any]:
    """Deliver each message's attempt; report the messages that raised."""
    failures: list[dict[str, str]] = []
    for record in event:
        message_id = record.to_dict().get("messageId", "")
        try:
            deliver(DeliveryMessage.parse(record.body))
        except Exception:
            log.exception("webhook message %s failed", message_id)
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}
