"""Webhooks and their deliveries.

A webhook row holds its signing secret *sealed* (:mod:`chalicelib.secretbox`); only
:func:`create_webhook` and :func:`replace_secret` (the value they were given),
:func:`read_secret` (the get-secret route) and the delivery path (:func:`get_target`,
:func:`project_targets`) ever see it in clear. A row written before
secrets were sealed (an old local state dir) still holds it in clear: it is used as is and
sealed in place the first time the delivery path reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlsplit

from pynamodb.exceptions import DoesNotExist, PutError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chalicelib import clock, ids, secretbox
from chalicelib.domain.webhooks import (
    AttemptAnswer,
    CreatedWebhook,
    Delivery,
    PendingDelivery,
    Webhook,
    WebhookTarget,
)
from chalicelib.store import project_scoped
from chalicelib.store.base import CONDITION_FAILED
from chalicelib.store.models import DeliveryModel, WebhookModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.transactions import conflict_on_lost_race

_WEBHOOK_INDEX_KEYS = frozenset({"id", "webhook_id", "created_key"})
#: The value of ``pending`` (the sparse index's key) on every pending delivery.
PENDING_MARK = "1"


def _webhook(model: WebhookModel) -> Webhook:
    return Webhook(
        id=model.id,
        project_id=model.project_id,
        name=model.name or default_name(model.url),
        description=model.description,
        url=model.url,
        events=[str(e) for e in model.events],
        active=model.active is not False,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def default_name(url: str) -> str:
    """The name of a webhook created without one: its URL's host."""
    return urlsplit(url).hostname or url


def _target(model: WebhookModel) -> WebhookTarget:
    return WebhookTarget(
        id=model.id,
        project_id=model.project_id,
        url=model.url,
        events=tuple(str(e) for e in model.events),
        secret=_signing_secret(model),
        active=model.active is not False,
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
    WebhookModel(id=webhook_id).update_if(
        [WebhookModel.secret.set(sealed)], WebhookModel.secret == clear
    )


def create_webhook(
    project_id: str,
    url: str,
    events: Sequence[str],
    secret: str,
    *,
    name: str | None = None,
    description: str | None = None,
    active: bool = True,
) -> CreatedWebhook:
    """Create a webhook in an existing project (404 when the project is gone, 409
    ``CONCURRENT_UPDATE`` when the write lost a race; nothing is written either way)."""
    sealed = secretbox.seal(secret, secretbox.WEBHOOK_SECRET)
    webhook_id = ids.new_id("webhook")
    now, created_key = project_scoped.creation_stamp(webhook_id)
    row = WebhookModel(
        id=webhook_id,
        project_id=project_id,
        name=name or default_name(url),
        description=description,
        url=url,
        events=list(events),
        active=active,
        secret=sealed,
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    project_scoped.save_in_project(row, project_id)
    return CreatedWebhook(secret=secret, **_webhook(row).model_dump())


def update_webhook(current: Webhook, changes: dict[str, Any]) -> Webhook:
    """Set ``changes`` (fields of :class:`Webhook`; a ``description`` of None clears it),
    conditioned on ``updated_at``: 409 ``CONCURRENT_UPDATE`` when the webhook changed since
    it was read, 404 when it was deleted meanwhile. Nothing is written on a refusal."""
    now = clock.now_iso()
    actions: list[Action] = [WebhookModel.updated_at.set(now)]
    for field, value in changes.items():
        attribute = getattr(WebhookModel, field)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    row = WebhookModel(id=current.id)
    if not row.update_if(actions, WebhookModel.updated_at == current.updated_at):
        raise project_scoped.lost_race(WebhookModel, "webhook", current.id)
    return current.model_copy(update={**changes, "updated_at": now})


def replace_secret(current: Webhook, secret: str) -> CreatedWebhook:
    """Seal and store a new signing secret; every attempt from now on is signed with it."""
    now = clock.now_iso()
    actions: list[Action] = [
        WebhookModel.secret.set(secretbox.seal(secret, secretbox.WEBHOOK_SECRET)),
        WebhookModel.updated_at.set(now),
    ]
    if not WebhookModel(id=current.id).update_if(actions, WebhookModel.id.exists()):
        raise project_scoped.lost_race(WebhookModel, "webhook", current.id)
    return CreatedWebhook(
        secret=secret, **current.model_dump(exclude={"updated_at"}), updated_at=now
    )


def read_secret(webhook_id: str) -> str:
    """The signing secret in clear (500 ``SECRET_UNREADABLE`` when it cannot be opened)."""
    return _signing_secret(project_scoped.get_or_404(WebhookModel, "webhook", webhook_id))


def get_webhook(webhook_id: str) -> Webhook:
    return _webhook(project_scoped.get_or_404(WebhookModel, "webhook", webhook_id))


def get_target(webhook_id: str) -> WebhookTarget | None:
    """The webhook with its secret, for signing; None once it was deleted."""
    row = project_scoped.find(WebhookModel, webhook_id)
    return None if row is None else _target(row)


def list_webhooks(project_id: str, window: Window) -> Listing[Webhook]:
    return project_scoped.list_by_project(WebhookModel, project_id, window, _webhook)


def project_targets(project_id: str) -> list[WebhookTarget]:
    """Every webhook of a project (a project has a handful; the query pages through all)."""
    models = WebhookModel.by_project.query(project_id)
    return [_target(cast(WebhookModel, model)) for model in models]


def delete_webhook(webhook_id: str) -> None:
    """Delete the subscription. Its delivery rows stay (history); pending ones then fail."""
    with conflict_on_lost_race():
        WebhookModel(id=webhook_id).delete()


# --- deliveries -----------------------------------------------------------------------------


#: A delivery row's status -> SOAT's on the wire (rows keep pawl's older ``succeeded``).
_WIRE_STATUS = {"pending": "pending", "succeeded": "success", "failed": "failed"}
#: SOAT's status -> the rows' spelling (a list's ``?status=`` filter).
ROW_STATUS = {wire: row for row, wire in _WIRE_STATUS.items()}


def _delivery(model: DeliveryModel) -> Delivery:
    return Delivery(
        id=model.id,
        webhook_id=model.webhook_id,
        event_type=model.event,
        payload=json.loads(model.payload),
        status=_WIRE_STATUS[model.status],  # type: ignore[arg-type]  # only this module writes it
        status_code=None if model.last_status_code is None else int(model.last_status_code),
        attempts=int(model.attempts),
        last_attempt_at=model.last_attempt_at,
        next_attempt_at=model.next_attempt_at,
        response_body=model.response_body,
        last_error=model.last_error,
        redelivery_of=model.redelivery_of,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_delivery(
    delivery_id: str,
    target: WebhookTarget | Webhook,
    event_id: str,
    event: str,
    payload: str,
    redelivery_of: str | None = None,
) -> bool:
    """Record a pending delivery, due now. False when this delivery id already exists (a
    repeat). ``redelivery_of``: the delivery whose stored payload this one sends again."""
    now, created_key = project_scoped.creation_stamp(delivery_id)
    row = DeliveryModel(
        id=delivery_id,
        webhook_id=target.id,
        project_id=target.project_id,
        event_id=event_id,
        event=event,
        status="pending",
        attempts=0,
        next_attempt_at=now,
        pending=PENDING_MARK,
        payload=payload,
        redelivery_of=redelivery_of,
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    try:
        row.save(condition=DeliveryModel.id.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == CONDITION_FAILED:
            return False
        raise
    return True


def get_delivery(delivery_id: str) -> PendingDelivery | None:
    try:
        model = DeliveryModel.get(delivery_id, consistent_read=True)
    except DoesNotExist:
        return None
    return PendingDelivery(
        delivery=_delivery(model),
        project_id=model.project_id,
        payload=model.payload,
        event_id=model.event_id,
    )


def record_attempt(
    delivery_id: str,
    attempt: int,
    status: str,
    answer: AttemptAnswer,
    next_attempt_at: str | None,
) -> bool:
    """Record attempt number ``attempt`` and its outcome, releasing the attempt's claim.

    Conditional on the row still being pending with ``attempt - 1`` attempts, so a
    duplicate SQS message can never count an attempt twice. False when it lost that race.
    """
    now = clock.now_iso()
    actions: list[Action] = [
        DeliveryModel.attempts.set(attempt),
        DeliveryModel.status.set(status),
        DeliveryModel.updated_at.set(now),
        DeliveryModel.last_attempt_at.set(now),
        _set_or_remove(DeliveryModel.last_status_code, answer.status_code),
        _set_or_remove(DeliveryModel.last_error, answer.error or None),
        _set_or_remove(DeliveryModel.response_body, answer.body),
        _set_or_remove(DeliveryModel.next_attempt_at, next_attempt_at or None),
        DeliveryModel.pending.set(PENDING_MARK)
        if status == "pending"
        else DeliveryModel.pending.remove(),
        DeliveryModel.claimed_attempt.remove(),
        DeliveryModel.claim_expires_at.remove(),
    ]
    return _update_if(delivery_id, actions, _awaiting(attempt))


def _set_or_remove(attribute: Any, value: Any) -> Action:
    return attribute.remove() if value is None else attribute.set(value)


def _awaiting(attempt: int) -> Condition:
    """The row is pending and attempt ``attempt`` is the next one to make."""
    return (DeliveryModel.status == "pending") & (DeliveryModel.attempts == attempt - 1)


def _update_if(delivery_id: str, actions: list[Action], condition: Condition) -> bool:
    return DeliveryModel(id=delivery_id).update_if(actions, condition)


def claim_attempt(delivery_id: str, attempt: int, lease_s: float) -> bool:
    """Claim the right to make attempt ``attempt`` for ``lease_s`` seconds.

    Exactly one of two messages for the same attempt (a stale one and one re-enqueued
    after a restart, say) gets True and POSTs; a claim whose holder died may be taken
    over once its lease expired.
    """
    now = clock.now()
    free = DeliveryModel.claim_expires_at.does_not_exist() | (
        DeliveryModel.claim_expires_at < clock.iso(now)
    )
    actions: list[Action] = [
        DeliveryModel.claimed_attempt.set(attempt),
        DeliveryModel.claim_expires_at.set(clock.iso(now + timedelta(seconds=lease_s))),
    ]
    return _update_if(delivery_id, actions, _awaiting(attempt) & free)


def release_claim(delivery_id: str, attempt: int) -> bool:
    """Drop the claim on attempt ``attempt`` (its holder is known dead: a restart)."""
    actions: list[Action] = [
        DeliveryModel.claimed_attempt.remove(),
        DeliveryModel.claim_expires_at.remove(),
    ]
    return _update_if(delivery_id, actions, _awaiting(attempt))


def iter_pending_delivery_ids(due_before: str | None = None) -> Iterator[str]:
    """Ids of pending deliveries, optionally only those whose next attempt was due before
    ``due_before`` (the sparse ``pending`` index, oldest due first)."""
    condition = None if due_before is None else DeliveryModel.next_attempt_at < due_before
    index = DeliveryModel.pending_deliveries
    for model in index.query(PENDING_MARK, range_key_condition=condition):
        yield model.id


def abandon_delivery(delivery_id: str, reason: str) -> bool:
    """Fail a pending delivery without an attempt (its webhook is gone). False if not pending."""
    actions: list[Action] = [
        DeliveryModel.status.set("failed"),
        DeliveryModel.last_error.set(reason),
        DeliveryModel.next_attempt_at.remove(),
        DeliveryModel.pending.remove(),
        DeliveryModel.updated_at.set(clock.now_iso()),
    ]
    return _update_if(delivery_id, actions, DeliveryModel.status == "pending")


def list_deliveries(
    webhook_id: str, window: Window, status: str | None = None
) -> Listing[Delivery]:
    """A webhook's deliveries, newest first; ``status`` (SOAT's spelling) keeps only those."""
    only = None if status is None else DeliveryModel.status == ROW_STATUS[status]
    newest_first = Partition(
        DeliveryModel.by_webhook, webhook_id, _WEBHOOK_INDEX_KEYS, False, only=only
    )
    return page_of(newest_first, window, _delivery)
