"""Webhooks: subscribe a URL to a project's run lifecycle events (``/api/v1/webhooks``).

SOAT's operations and fields (``docs/webhooks.md`` records where pawl differs). The signing
secret is in the answers of create and rotate-secret, and readable through get-secret
(its own action, ``webhooks:GetWebhookSecret``); ``GET``, lists and deliveries never show
it. The deliveries are :mod:`chalicelib.api.webhook_deliveries`.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import Field, field_validator

from chalicelib.api.access import on, on_collection
from chalicelib.api.ai_providers import MAX_URL_LENGTH, UrlText
from chalicelib.api.common import refuse_nulls
from chalicelib.api.routing import Call, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.webhooks import (
    CreatedWebhook,
    EventPattern,
    Webhook,
    WebhookSecret,
    canonical_event,
)
from chalicelib.engine import webhooks as catalog
from chalicelib.ids import ProjectId
from chalicelib.store import webhooks as store

bp = Blueprint(__name__)

TAG = "webhooks"
ITEM = "/api/v1/webhooks/{webhook_id}"
MAX_NAME = 200
MAX_DESCRIPTION = 2000
MAX_EVENTS = 10
POLICY_NOT_BUILT = "policy gating of webhook deliveries is not built in pawl: omit policy_id"


def unique_events(events: list[EventPattern]) -> list[EventPattern]:
    """A repeated pattern adds nothing (``eval_runs.x`` repeats ``eval_run.x``): keep the
    first of each, as the caller spelt it, in the caller's order."""
    first = {canonical_event(e): e for e in reversed(events)}
    return list(dict.fromkeys(first[canonical_event(e)] for e in events))


class _WebhookFields(RequestBody):
    """What create and update share: the checks on ``events`` and ``policy_id``."""

    description: str | None = Field(None, max_length=MAX_DESCRIPTION)
    # Typed ``None`` so the published schema says what is accepted (SOAT's is a string).
    policy_id: None = Field(None, description="Not built: only null is accepted")

    @field_validator("events", check_fields=False)
    @classmethod
    def _unique_events(cls, events: list[EventPattern] | None) -> list[EventPattern] | None:
        return None if events is None else unique_events(events)

    @field_validator("policy_id", mode="before")
    @classmethod
    def _no_policy(cls, policy_id: object) -> None:
        if policy_id is not None:
            raise ValueError(POLICY_NOT_BUILT)
        return None


class CreateWebhook(_WebhookFields):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str | None = Field(None, min_length=1, max_length=MAX_NAME, description="Default: host")
    url: UrlText = Field(min_length=1, max_length=MAX_URL_LENGTH)
    events: list[EventPattern] = Field(min_length=1, max_length=MAX_EVENTS)
    active: bool = True
    secret: str | None = Field(None, min_length=16, max_length=256)


class UpdateWebhook(_WebhookFields):
    """A partial update: what is omitted stays; ``description: null`` clears it."""

    name: str | None = Field(None, min_length=1, max_length=MAX_NAME)
    url: UrlText | None = Field(None, min_length=1, max_length=MAX_URL_LENGTH)
    events: list[EventPattern] | None = Field(None, min_length=1, max_length=MAX_EVENTS)
    active: bool | None = None


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
    """Subscribe a URL to run lifecycle events; the answer holds the signing ``secret``."""
    body = call.body
    project_id = call.caller.listing_project(body.project_id)
    described = {"name": body.name, "description": body.description, "active": body.active}
    return catalog.create_webhook(project_id, body.url, body.events, body.secret, **described)


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


def visible_webhook(call: Call[Any, Any]) -> Webhook:
    webhook = store.get_webhook(call.path["webhook_id"])
    call.caller.check_visible(webhook.project_id, "webhook", webhook.id)
    return webhook


@endpoint(
    bp,
    ITEM,
    "GET",
    access=on("webhooks:GetWebhook", "webhook_id"),
    response=Webhook,
    tag=TAG,
    operation_id="getWebhook",
)
def get_webhook(call: Call[Any, Any]) -> Webhook:
    """Get a webhook (never its secret)."""
    return visible_webhook(call)


@endpoint(
    bp,
    ITEM,
    "PUT",
    access=on("webhooks:UpdateWebhook", "webhook_id"),
    body=UpdateWebhook,
    response=Webhook,
    tag=TAG,
    operation_id="updateWebhook",
)
def update_webhook(call: Call[UpdateWebhook, Any]) -> Webhook:
    """Change a webhook's name, description, URL, events or ``active``; omitted fields stay."""
    body = call.body
    refuse_nulls(body, "name", "url", "events", "active")
    changes = body.model_dump(include=body.model_fields_set - {"policy_id"})
    return catalog.update_webhook(visible_webhook(call), changes)


@endpoint(
    bp,
    ITEM,
    "DELETE",
    access=on("webhooks:DeleteWebhook", "webhook_id"),
    status=204,
    tag=TAG,
    operation_id="deleteWebhook",
)
def delete_webhook(call: Call[Any, Any]) -> None:
    """Delete a webhook; deliveries not yet sent are then marked failed."""
    webhook = visible_webhook(call)
    store.delete_webhook(webhook.id)


@endpoint(
    bp,
    f"{ITEM}/secret",
    "GET",
    access=on("webhooks:GetWebhookSecret", "webhook_id"),
    response=WebhookSecret,
    tag=TAG,
    operation_id="getWebhookSecret",
)
def get_webhook_secret(call: Call[Any, Any]) -> WebhookSecret:
    """A webhook's signing secret (its own action: ``webhooks:GetWebhookSecret``)."""
    webhook = visible_webhook(call)
    return WebhookSecret(webhook_id=webhook.id, secret=store.read_secret(webhook.id))


@endpoint(
    bp,
    f"{ITEM}/rotate-secret",
    "POST",
    access=on("webhooks:RotateWebhookSecret", "webhook_id"),
    response=CreatedWebhook,
    tag=TAG,
    operation_id="rotateWebhookSecret",
)
def rotate_webhook_secret(call: Call[Any, Any]) -> CreatedWebhook:
    """Replace the signing secret; every attempt from now on (retries too) is signed with
    the new one, and the old one signs nothing."""
    return catalog.rotate_secret(visible_webhook(call))
