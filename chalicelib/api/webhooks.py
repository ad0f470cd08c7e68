"""Webhooks: subscribe a URL to a project's run lifecycle events; inspect its deliveries.

The signing secret is returned by the create call only. ``GET`` and lists never show it.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import Field, field_validator

from chalicelib.api.access import on, on_collection
from chalicelib.api.ai_providers import MAX_URL_LENGTH, UrlText
from chalicelib.api.routing import Call, ListQuery, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.webhooks import (
    CreatedWebhook,
    Delivery,
    EventPattern,
    Webhook,
    canonical_event,
)
from chalicelib.engine import webhooks as catalog
from chalicelib.ids import ProjectId
from chalicelib.store import webhooks as store

bp = Blueprint(__name__)

TAG = "webhooks"


class CreateWebhook(RequestBody):
    project_id: ProjectId
    url: UrlText = Field(min_length=1, max_length=MAX_URL_LENGTH)
    events: list[EventPattern] = Field(min_length=1, max_length=10)
    secret: str | None = Field(None, min_length=16, max_length=256)

    @field_validator("events")
    @classmethod
    def _unique_events(cls, events: list[EventPattern]) -> list[EventPattern]:
        # A repeated pattern adds nothing (``eval_runs.x`` repeats ``eval_run.x``): keep the
        # first of each, as the caller spelt it, in the caller's order.
        first = {canonical_event(e): e for e in reversed(events)}
        return list(dict.fromkeys(first[canonical_event(e)] for e in events))


@endpoint(
    bp,
    "/api/v1/webhooks",
    "POST",
    access=on_collection("webhooks:CreateWebhook", "webhook"),
    body=CreateWebhook,
    response=CreatedWebhook,
    status=201,
    tag=TAG,
    operation_id="createWebhook",
)
def create_webhook(call: Call[CreateWebhook, Any]) -> CreatedWebhook:
    """Subscribe a URL to run lifecycle events. The signing ``secret`` is shown only here."""
    body = call.body
    call.caller.check_target_project(body.project_id)
    return catalog.create_webhook(body.project_id, body.url, body.events, body.secret)


@endpoint(
    bp,
    "/api/v1/webhooks",
    "GET",
    access=on_collection("webhooks:ListWebhooks", "webhook"),
    query=ProjectListQuery,
    response=Page[Webhook],
    tag=TAG,
    operation_id="listWebhooks",
)
def list_webhooks(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's webhooks, oldest first (never their secrets)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_webhooks(project_id, call.query.window()))


def _visible_webhook(call: Call[Any, Any]) -> Webhook:
    webhook = store.get_webhook(call.path["webhook_id"])
    call.caller.check_visible(webhook.project_id, "webhook", webhook.id)
    return webhook


@endpoint(
    bp,
    "/api/v1/webhooks/{webhook_id}",
    "GET",
    access=on("webhooks:GetWebhook", "webhook_id"),
    response=Webhook,
    tag=TAG,
    operation_id="getWebhook",
)
def get_webhook(call: Call[Any, Any]) -> Webhook:
    """Get a webhook (never its secret)."""
    return _visible_webhook(call)


@endpoint(
    bp,
    "/api/v1/webhooks/{webhook_id}",
    "DELETE",
    access=on("webhooks:DeleteWebhook", "webhook_id"),
    status=204,
    tag=TAG,
    operation_id="deleteWebhook",
)
def delete_webhook(call: Call[Any, Any]) -> None:
    """Delete a webhook; deliveries not yet sent are then marked failed."""
    webhook = _visible_webhook(call)
    store.delete_webhook(webhook.id)


@endpoint(
    bp,
    "/api/v1/webhooks/{webhook_id}/deliveries",
    "GET",
    access=on("webhooks:ListWebhookDeliveries", "webhook_id"),
    query=ListQuery,
    response=Page[Delivery],
    tag=TAG,
    operation_id="listWebhookDeliveries",
)
def list_deliveries(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List a webhook's deliveries, newest first, with their attempts and last outcome."""
    webhook = _visible_webhook(call)
    return page(store.list_deliveries(webhook.id, call.query.window()))
