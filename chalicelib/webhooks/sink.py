"""The built-in webhook sink: a plugin registered through ``pawl_deliver_event`` like any other.

It only records and enqueues: one pending delivery row per subscribed, active webhook and one
message per delivery on the webhook queue. The HTTP work happens in the delivery
worker (:mod:`chalicelib.webhooks.delivery`), so the run engine is never held up by a
slow or dead receiver.
"""

from __future__ import annotations

import hashlib
import json
import logging
import string
from collections.abc import Iterable
from typing import Any

from chalicelib import queues
from chalicelib.domain import console_links
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.webhooks import canonical_event
from chalicelib.ids import PREFIXES
from chalicelib.plugins.markers import hookimpl
from chalicelib.settings import get_settings
from chalicelib.store import webhooks as store
from chalicelib.webhooks.delivery import DeliveryMessage

log = logging.getLogger("pawl.webhooks")

_ID_ALPHABET = string.ascii_letters + string.digits
_ID_LENGTH = 16


def subscribes(patterns: Iterable[str], event: str) -> bool:
    """True when one of ``patterns`` (exact names or ``<prefix>.*``, either spelling of the
    run namespace) matches ``event``."""
    for pattern in map(canonical_event, patterns):
        if pattern == event or pattern == "*":
            return True
        if pattern.endswith(".*") and event.startswith(pattern[:-1]):
            return True
    return False


def delivery_id(event_id: str, webhook_id: str) -> str:
    """The delivery id of (event, webhook): deterministic, so a repeated event is one delivery.

    Shaped like every other id (prefix + 16 characters of ``[A-Za-z0-9]``), drawn from a
    SHA-256 of the pair instead of from a random source.
    """
    number = int.from_bytes(hashlib.sha256(f"{event_id}\x00{webhook_id}".encode()).digest())
    chars = []
    for _ in range(_ID_LENGTH):
        number, index = divmod(number, len(_ID_ALPHABET))
        chars.append(_ID_ALPHABET[index])
    return f"{PREFIXES['delivery']}_{''.join(chars)}"


def webhook_body(event: LifecycleEvent, public_url: str | None) -> dict[str, Any]:
    """The envelope, plus (a pawl addition) ``console_url``: the run's console page under
    ``public_url``, when pawl knows the URL it is reached at and the event is a run's."""
    body = event.envelope()
    eval_id = event.data.get("eval_id")
    if public_url and event.resource_type == "eval_run" and isinstance(eval_id, str):
        body["console_url"] = console_links.run_url(public_url, eval_id, event.resource_id)
    return body


def _record_deliveries(event: LifecycleEvent) -> list[DeliveryMessage]:
    """One pending row per subscribed webhook; the messages that must (still) be sent.

    The payload is stored as sent, so the signature of every attempt covers it whole,
    ``console_url`` included.
    """
    body = webhook_body(event, get_settings().public_url)
    payload = json.dumps(body, separators=(",", ":"))
    messages = []
    for target in store.project_targets(event.project_id):
        if not target.active or not subscribes(target.events, event.event):
            continue  # an inactive webhook records nothing (no delivery to redeliver later)
        did = delivery_id(event.id, target.id)
        created = store.create_delivery(did, target, event.id, event.event, payload)
        if not created:
            existing = store.get_delivery(did)
            # A repeat of an event whose first call may have died between the put and the
            # send: re-send while no attempt was made. The worker drops duplicates.
            if existing is None or existing.delivery.attempts > 0:
                continue
            if existing.delivery.status != "pending":
                continue
        messages.append(DeliveryMessage(delivery_id=did, attempt=1))
    return messages


@hookimpl
def pawl_deliver_event(event: LifecycleEvent) -> None:
    """Record and enqueue one delivery per webhook of the project subscribed to the event."""
    messages = _record_deliveries(event)
    if messages:
        queues.send_many(get_settings().webhook_queue, (m.body() for m in messages))
    log.info("event %s (%s) queued for %d webhook(s)", event.id, event.event, len(messages))
