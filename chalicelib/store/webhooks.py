"""Webhooks and their deliveries.

A webhook row holds its signing secret *sealed* (:mod:`chalicelib.secretbox`); only
:func:`create_webhook` (once, the value the caller gave) and the delivery path
(:func:`get_target`, :func:`project_targets`) ever see it in clear. A row written before
secrets were sealed (an old local state dir) still holds it in clear: it is used as is and
sealed in place the first time the delivery path reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from pynamodb.exceptions import DoesNotExist, PutError, UpdateError
from pynamodb.expressions.update import Action

from chalicelib import clock, ids, secretbox
from chalicelib.errors import not_found
from chalicelib.store.models import DeliveryModel, WebhookModel
from chalicelib.store.pagination import page_of
from chalicelib.store.tenancy import save_in_project
from chalicelib.store.transactions import conflict_on_lost_race
from chalicelib.webhooks.types import (
    CreatedWebhook,
    Delivery,
    PendingDelivery,
    Webhook,
    WebhookTarget,
)

_PROJECT_INDEX_KEYS = {"id", "project_id", "created_key"}
_WEBHOOK_INDEX_KEYS = {"id", "webhook_id", "created_key"}
_CONDITION_FAILED = "ConditionalCheckFailedException"


def _webhook(model: WebhookModel) -> Webhook:
    return Webhook(
        id=model.id,
        project_id=model.project_id,
        url=model.url,
        events=[str(e) for e in model.events],
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _target(model: WebhookModel) -> WebhookTarget:
    return WebhookTarget(
        id=model.id,
        project_id=model.project_id,
        url=model.url,
        events=tuple(str(e) for e in model.events),
        secret=_signing_secret(model),
    )


def _signing_secret(model: WebhookModel) -> str:
    stored = str(model.secret)
    if secretbox.is_sealed(stored):
        return secretbox.open_sealed(stored, secretbox.WEBHOOK_SECRET)
    _seal_legacy_secret(model.id, stored)
    return stored


def _seal_legacy_secret(webhook_id: str, clear: str) -> None:
    """Replace a clear secret by its sealed form, unless the row changed meanwhile."""
    sealed = secretbox.seal(clear, secretbox.WEBHOOK_SECRET)
    try:
        WebhookModel(id=webhook_id).update(
            actions=[WebhookModel.secret.set(sealed)], condition=WebhookModel.secret == clear
        )
    except UpdateError as exc:
        if exc.cause_response_code != _CONDITION_FAILED:
            raise


def create_webhook(project_id: str, url: str, events: Sequence[str], secret: str) -> CreatedWebhook:
    """Create a webhook in an existing project (404 when the project is gone, 409
    ``CONCURRENT_UPDATE`` when the write lost a race; nothing is written either way)."""
    sealed = secretbox.seal(secret, secretbox.WEBHOOK_SECRET)
    now = clock.now_iso()
    webhook_id = ids.new_id("webhook")
    row = WebhookModel(
        id=webhook_id,
        project_id=project_id,
        url=url,
        events=list(events),
        secret=sealed,
        created_at=now,
        updated_at=now,
        created_key=f"{now}#{webhook_id}",
    )
    save_in_project(row, project_id)
    return CreatedWebhook(secret=secret, **_webhook(row).model_dump())


def get_webhook(webhook_id: str) -> Webhook:
    try:
        return _webhook(WebhookModel.get(webhook_id, consistent_read=True))
    except DoesNotExist:
        raise not_found("webhook", webhook_id) from None


def get_target(webhook_id: str) -> WebhookTarget | None:
    """The webhook with its secret, for signing; None once it was deleted."""
    try:
        return _target(WebhookModel.get(webhook_id, consistent_read=True))
    except DoesNotExist:
        return None


def list_webhooks(
    project_id: str, limit: int, cursor: str | None
) -> tuple[list[Webhook], str | None]:
    return page_of(
        lambda last, n: WebhookModel.by_project.query(project_id, limit=n, last_evaluated_key=last),
        cursor,
        _PROJECT_INDEX_KEYS,
        _webhook,
        limit,
    )


def project_targets(project_id: str) -> list[WebhookTarget]:
    """Every webhook of a project (a project has a handful; the query pages through all)."""
    models = WebhookModel.by_project.query(project_id)
    return [_target(cast(WebhookModel, model)) for model in models]


def delete_webhook(webhook_id: str) -> None:
    """Delete the subscription. Its delivery rows stay (history); pending ones then fail."""
    with conflict_on_lost_race():
        WebhookModel(id=webhook_id).delete()


# --- deliveries -----------------------------------------------------------------------------


def _delivery(model: DeliveryModel) -> Delivery:
    return Delivery(
        id=model.id,
        webhook_id=model.webhook_id,
        event=model.event,
        status=model.status,  # type: ignore[arg-type]  # only this module writes it
        attempts=int(model.attempts),
        last_status_code=None if model.last_status_code is None else int(model.last_status_code),
        last_error=model.last_error,
        next_attempt_at=model.next_attempt_at,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_delivery(
    delivery_id: str, target: WebhookTarget, event_id: str, event: str, payload: str
) -> bool:
    """Record a pending delivery. False when this delivery id already exists (a repeat)."""
    now = clock.now_iso()
    row = DeliveryModel(
        id=delivery_id,
        webhook_id=target.id,
        project_id=target.project_id,
        event_id=event_id,
        event=event,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        payload=payload,
        created_at=now,
        updated_at=now,
        created_key=f"{now}#{delivery_id}",
    )
    try:
        row.save(condition=DeliveryModel.id.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == _CONDITION_FAILED:
            return False
        raise
    return True


def get_delivery(delivery_id: str) -> PendingDelivery | None:
    try:
        model = DeliveryModel.get(delivery_id, consistent_read=True)
    except DoesNotExist:
        return None
    return PendingDelivery(
        delivery=_delivery(model), project_id=model.project_id, payload=model.payload
    )


def record_attempt(
    delivery_id: str,
    attempt: int,
    status: str,
    status_code: int | None,
    error: str | None,
    next_attempt_at: str | None,
) -> bool:
    """Record attempt number ``attempt`` and its outcome.

    Conditional on the row still being pending with ``attempt - 1`` attempts, so a
    duplicate SQS message can never count an attempt twice. False when it lost that race.
    """
    actions: list[Action] = [
        DeliveryModel.attempts.set(attempt),
        DeliveryModel.status.set(status),
        DeliveryModel.updated_at.set(clock.now_iso()),
        DeliveryModel.last_status_code.set(status_code)
        if status_code is not None
        else DeliveryModel.last_status_code.remove(),
        DeliveryModel.last_error.set(error) if error else DeliveryModel.last_error.remove(),
        DeliveryModel.next_attempt_at.set(next_attempt_at)
        if next_attempt_at
        else DeliveryModel.next_attempt_at.remove(),
    ]
    condition = (DeliveryModel.status == "pending") & (DeliveryModel.attempts == attempt - 1)
    try:
        DeliveryModel(id=delivery_id).update(actions=actions, condition=condition)
    except UpdateError as exc:
        if exc.cause_response_code == _CONDITION_FAILED:
            return False
        raise
    return True


def abandon_delivery(delivery_id: str, reason: str) -> bool:
    """Fail a pending delivery without an attempt (its webhook is gone). False if not pending."""
    actions: list[Action] = [
        DeliveryModel.status.set("failed"),
        DeliveryModel.last_error.set(reason),
        DeliveryModel.next_attempt_at.remove(),
        DeliveryModel.updated_at.set(clock.now_iso()),
    ]
    try:
        DeliveryModel(id=delivery_id).update(
            actions=actions, condition=DeliveryModel.status == "pending"
        )
    except UpdateError as exc:
        if exc.cause_response_code == _CONDITION_FAILED:
            return False
        raise
    return True


def list_deliveries(
    webhook_id: str, limit: int, cursor: str | None
) -> tuple[list[Delivery], str | None]:
    """A webhook's deliveries, newest first."""
    return page_of(
        lambda last, n: DeliveryModel.by_webhook.query(
            webhook_id, limit=n, last_evaluated_key=last, scan_index_forward=False
        ),
        cursor,
        _WEBHOOK_INDEX_KEYS,
        _delivery,
        limit,
    )
