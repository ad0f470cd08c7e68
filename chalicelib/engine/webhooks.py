"""Webhooks: the rules a subscription's create follows beyond the body.

The URL must be one the outbound client would call (no private, metadata or pawl's own
address unless allow-listed), the project must exist, and a subscription without a
``secret`` gets a new signing secret (shown once, in the create's answer).
"""

from __future__ import annotations

from chalicelib import outbound
from chalicelib.domain.webhooks import CreatedWebhook, EventPattern
from chalicelib.errors import ValidationFailed
from chalicelib.store import tenancy
from chalicelib.store import webhooks as store
from chalicelib.webhooks import signing


def check_url(url: str) -> None:
    """Refuse a URL the outbound client would refuse (scheme, private or metadata address)."""
    try:
        outbound.check_url(url)
    except outbound.OutboundError as exc:
        raise ValidationFailed(f"url is not allowed: {exc}", field="url") from None


def create_webhook(
    project_id: str, url: str, events: list[EventPattern], secret: str | None
) -> CreatedWebhook:
    """Subscribe ``url`` to the project's lifecycle events matching ``events``."""
    check_url(url)
    tenancy.get_project(project_id)
    return store.create_webhook(project_id, url, events, secret or signing.new_secret())
