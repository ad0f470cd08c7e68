"""Webhooks: the rules a subscription's writes follow beyond the body.

The URL must be one the outbound client would call (no private, metadata or pawl's own
address unless allow-listed) on create, on update and again on every redelivery; the
project must exist; a subscription without a ``secret`` gets a new signing secret (shown
by create and rotate-secret, readable through get-secret).
"""

from __future__ import annotations

from typing import Any

from chalicelib import ids, outbound, queues
from chalicelib.domain.webhooks import (
    CreatedWebhook,
    Delivery,
    EventPattern,
    PendingDelivery,
    Webhook,
)
from chalicelib.errors import Conflict, ValidationFailed
from chalicelib.settings import get_settings
from chalicelib.store import tenancy
from chalicelib.store import webhooks as store
from chalicelib.webhooks import signing
from chalicelib.webhooks.delivery import DeliveryMessage


def check_url(url: str) -> None:
    """Refuse a URL the outbound client would refuse (scheme, private or metadata address)."""
    try:
        outbound.check_url(url)
    except outbound.OutboundError as exc:
        raise ValidationFailed(f"url is not allowed: {exc}", field="url") from None


def create_webhook(
    project_id: str,
    url: str,
    events: list[EventPattern],
    secret: str | None,
    **described: Any,
) -> CreatedWebhook:
    """Subscribe ``url`` to the project's lifecycle events matching ``events``.

    ``described``: ``name``, ``description``, ``active`` (the store's defaults otherwise).
    """
    check_url(url)
    tenancy.get_project(project_id)
    new_secret = secret or signing.new_secret()
    return store.create_webhook(project_id, url, events, new_secret, **described)


def update_webhook(current: Webhook, changes: dict[str, Any]) -> Webhook:
    """Apply a partial update; a new ``url`` is checked as on create, before any write."""
    if "url" in changes:
        check_url(changes["url"])
    return store.update_webhook(current, changes)


def rotate_secret(current: Webhook) -> CreatedWebhook:
    """A new signing secret, in force at once: the old one signs nothing from now on."""
    return store.replace_secret(current, signing.new_secret())


def redeliver(found: PendingDelivery) -> Delivery:
    """A new pending delivery of ``found``'s stored payload to its webhook's current
    URL, queued for its first attempt; the original stays as it was (history).

    Refused before anything is written: 404 when the webhook is gone, 409
    ``WEBHOOK_NOT_ACTIVE`` while it is inactive, 400 naming ``url`` when its URL is one
    the outbound client would not call now.
    """
    webhook = store.get_webhook(found.delivery.webhook_id)
    if not webhook.active:
        raise Conflict(f"webhook {webhook.id} is not active", code="WEBHOOK_NOT_ACTIVE")
    check_url(webhook.url)
    delivery_id = ids.new_id("delivery")
    store.create_delivery(
        delivery_id,
        webhook,
        found.event_id,
        found.delivery.event_type,
        found.payload,
        redelivery_of=found.delivery.id,
    )
    # Written before it is queued: a lost message is resumed from the row by the sweep.
    queues.send(get_settings().webhook_queue, DeliveryMessage(delivery_id, 1).body())
    created = store.get_delivery(delivery_id)
    assert created is not None
    return created.delivery
