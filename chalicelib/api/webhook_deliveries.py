"""A webhook's deliveries (``/api/v1/webhook-deliveries``): list, get, redeliver.

SOAT's operations. A delivery belongs to its webhook's project: another project's reads
as missing (404), like a missing one. The list names its webhook (``?webhook_id=``,
required) and is authorized as a list of the project's webhooks; one delivery, and its
redelivery, as the project itself (the path names no webhook, so its SRN is the project's,
as a trigger firing's is). A redelivery is a new delivery of the stored payload, queued:
``202`` with it, ``pending``.
"""

from __future__ import annotations

from typing import Any, Literal

from chalice import Blueprint

from chalicelib.api.access import on_collection, on_project
from chalicelib.api.routing import Call, ListQuery, endpoint, page
from chalicelib.api.webhooks import TAG
from chalicelib.domain.base import Page
from chalicelib.domain.webhooks import Delivery, PendingDelivery
from chalicelib.engine import webhooks as catalog
from chalicelib.errors import NotFound
from chalicelib.ids import WebhookId
from chalicelib.store import webhooks as store

bp = Blueprint(__name__)

ITEM = "/api/v1/webhook-deliveries/{delivery_id}"


class DeliveryListQuery(ListQuery):
    webhook_id: WebhookId
    #: A pawl addition: only the deliveries in this state.
    status: Literal["pending", "success", "failed"] | None = None


def visible_delivery(call: Call[Any, Any]) -> PendingDelivery:
    delivery_id = call.path["delivery_id"]
    found = store.get_delivery(delivery_id)
    if found is None:
        raise NotFound(
            f"delivery {delivery_id} not found", resource_type="delivery", id=delivery_id
        )
    call.caller.check_visible(found.project_id, "delivery", delivery_id)
    return found


@endpoint(
    bp,
    "/api/v1/webhook-deliveries",
    "GET",
    access=on_collection("webhooks:ListWebhookDeliveries", "webhook"),
    query=DeliveryListQuery,
    response=Page[Delivery],
    tag=TAG,
    operation_id="listWebhookDeliveries",
)
def list_webhook_deliveries(call: Call[Any, DeliveryListQuery]) -> dict[str, Any]:
    """List a webhook's deliveries, newest first, with their attempts and last outcome."""
    query = call.query
    webhook = store.get_webhook(query.webhook_id)
    call.caller.check_visible(webhook.project_id, "webhook", webhook.id)
    return page(store.list_deliveries(webhook.id, query.window(), query.status))


@endpoint(
    bp,
    ITEM,
    "GET",
    access=on_project("webhooks:GetWebhookDelivery", param="delivery_id"),
    response=Delivery,
    tag=TAG,
    operation_id="getWebhookDelivery",
)
def get_webhook_delivery(call: Call[Any, Any]) -> Delivery:
    """Get a delivery: its payload, status, attempts and the receiver's last answer."""
    return visible_delivery(call).delivery


@endpoint(
    bp,
    f"{ITEM}/redeliver",
    "POST",
    access=on_project("webhooks:RedeliverWebhookDelivery", param="delivery_id"),
    response=Delivery,
    status=202,
    tag=TAG,
    operation_id="redeliverWebhookDelivery",
)
def redeliver_webhook_delivery(call: Call[Any, Any]) -> Delivery:
    """Send a delivery's stored payload again, as a new delivery to the webhook's current
    URL (signed with its current secret); the answer is that delivery, ``pending``."""
    return catalog.redeliver(visible_delivery(call))
