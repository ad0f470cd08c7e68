"""Triggers and their firings.

A webhook trigger's secret is stored *sealed* (:mod:`chalicelib.secretbox`); only
:func:`read_secret` opens it (to verify an inbound signature, or for ``GET …/secret``).
Two sparse indexes serve the two starters that are not an HTTP call: ``due`` (active
schedule triggers by ``next_fire_at``: the scheduler) and ``listening`` (active event
triggers by project: the event bus). A firing's id is derived from what caused it, so
a repeated cause is the same conditional put, answered "already there". A webhook call's
firing is written with its *receipts* (``trigger-receipts``, keyed by its signature and its
delivery id) in one transaction, so a replayed request finds the firing it first started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from pynamodb.exceptions import PutError
from pynamodb.expressions.update import Action

from chalicelib import clock, ids, secretbox
from chalicelib.domain.triggers import (
    FAILED,
    PENDING,
    RUNNING,
    FiringError,
    FiringResult,
    Trigger,
    TriggerFiring,
    TriggerSpec,
)
from chalicelib.errors import ConcurrentUpdate, not_found
from chalicelib.jsonvalues.json_input import repaired
from chalicelib.store import names, project_scoped
from chalicelib.store.base import CONDITION_FAILED
from chalicelib.store.models import FiringModel, TriggerModel, TriggerReceiptModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "trigger"
DUE_MARK = "1"
_TRIGGER_INDEX_KEYS = frozenset({"id", "trigger_id", "created_key"})


# --- triggers -------------------------------------------------------------------------------


def _trigger(model: TriggerModel) -> Trigger:
    return Trigger(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        description=model.description,
        type=model.type,  # type: ignore[arg-type]  # only this module writes it
        target_type=model.target_type,  # type: ignore[arg-type]
        target_id=model.target_id,
        action=model.action,
        input=repaired(model.input),
        cron=model.cron,
        event_pattern=model.event_pattern,
        active=bool(model.active),
        policy_id=model.policy_id,
        require_timestamp=bool(model.require_timestamp),
        bound_by_key_id=model.bound_by_key_id,
        next_fire_at=model.next_fire_at,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _derived(spec: TriggerSpec, project_id: str, next_fire_at: str | None) -> dict[str, Any]:
    """The index attributes a spec implies (None: absent, so the row leaves the index)."""
    scheduled = spec.type == "schedule" and spec.active and next_fire_at is not None
    return {
        "next_fire_at": next_fire_at if scheduled else None,
        "due": DUE_MARK if scheduled else None,
        "listening": project_id if spec.type == "event" and spec.active else None,
    }


def create_trigger(
    project_id: str, spec: TriggerSpec, secret: str | None, next_fire_at: str | None
) -> Trigger:
    """Write a validated trigger (409 ``NAME_CONFLICT`` on a taken name; nothing written)."""
    trigger_id = ids.new_id("trigger")
    created_at, created_key = project_scoped.creation_stamp(trigger_id)
    row = TriggerModel(
        id=trigger_id,
        project_id=project_id,
        created_at=created_at,
        updated_at=created_at,
        created_key=created_key,
        secret=None if secret is None else secretbox.seal(secret, secretbox.TRIGGER_SECRET),
        **spec.model_dump(),
        **_derived(spec, project_id, next_fire_at),
    )
    project_scoped.create(KIND, row)
    return _trigger(row)


def find_trigger(trigger_id: str) -> Trigger | None:
    row = project_scoped.find(TriggerModel, trigger_id)
    return None if row is None else _trigger(row)


def get_trigger(trigger_id: str) -> Trigger:
    return _trigger(project_scoped.get_or_404(TriggerModel, KIND, trigger_id))


def list_triggers(project_id: str, window: Window) -> Listing[Trigger]:
    return project_scoped.list_by_project(TriggerModel, project_id, window, _trigger)


def update_trigger(
    current: Trigger, spec: TriggerSpec, next_fire_at: str | None, keep_schedule: bool = False
) -> Trigger:
    """Replace the writable fields; refused (409) if the trigger changed since it was read.

    ``keep_schedule`` leaves ``next_fire_at`` as stored: the scheduler moves it without
    touching ``updated_at``, so writing back the value read could rewind a claimed slot.
    """
    now = clock.now_iso()
    values = {**spec.model_dump(), **_derived(spec, current.project_id, next_fire_at)}
    if keep_schedule:
        del values["next_fire_at"], values["due"]
    actions: list[Action] = [TriggerModel.updated_at.set(now)]
    for name, value in values.items():
        attribute = getattr(TriggerModel, name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, spec.name, previous=current.name
        ) as txn:
            txn.update(
                KIND,
                TriggerModel(id=current.id),
                actions=actions,
                condition=TriggerModel.updated_at == current.updated_at,
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(TriggerModel, KIND, current.id) from exc
    shown = {k: v for k, v in values.items() if k in Trigger.model_fields}
    updated = current.model_copy(update={**shown, "updated_at": now})
    return get_trigger(current.id) if keep_schedule else updated


def delete_trigger(current: Trigger) -> None:
    """Delete the trigger and release its name. Its firings and runs stay (history)."""
    try:
        with labelled_transaction() as txn:
            txn.delete(KIND, TriggerModel(id=current.id), condition=TriggerModel.id.exists())
            txn.release_name(current.project_id, KIND, current.name)
    except TxnRefused as exc:
        raise not_found(KIND, current.id) from exc


def read_secret(trigger_id: str) -> str | None:
    """The webhook trigger's signing secret in clear (None: no such trigger, or no secret)."""
    row = project_scoped.find(TriggerModel, trigger_id)
    if row is None or row.secret is None:
        return None
    return secretbox.open_sealed(str(row.secret), secretbox.TRIGGER_SECRET)


def replace_secret(current: Trigger, secret: str) -> Trigger:
    """Seal and store a new signing secret (the old one stops verifying at once)."""
    now = clock.now_iso()
    sealed = secretbox.seal(secret, secretbox.TRIGGER_SECRET)
    updated = TriggerModel(id=current.id).update_if(
        [TriggerModel.secret.set(sealed), TriggerModel.updated_at.set(now)],
        TriggerModel.id.exists(),
    )
    if not updated:
        raise not_found(KIND, current.id)
    return current.model_copy(update={"updated_at": now})


def due_schedules(now: str) -> list[tuple[str, str]]:
    """``(trigger id, slot)`` of every active schedule whose ``next_fire_at`` is at or before
    ``now`` (the sparse ``due`` index, oldest slot first)."""
    index = TriggerModel.due_schedules
    found = index.query(DUE_MARK, range_key_condition=TriggerModel.next_fire_at <= now)
    return [(row.id, str(row.next_fire_at)) for row in found]


def event_listeners(project_id: str) -> list[Trigger]:
    """Every active event trigger of a project (the sparse ``listening`` index)."""
    rows = TriggerModel.event_listeners.query(project_id)
    return [_trigger(row) for row in rows]


def claim_slot(trigger_id: str, slot: str, next_fire_at: str, firing: FiringModel) -> bool:
    """Move the schedule past ``slot`` and record its firing, atomically; once per slot.

    Conditioned on the trigger still being due at exactly ``slot``: of two schedulers
    that read the same slot, one wins; the other (and a repeat) gets False, writing nothing.
    """
    try:
        with labelled_transaction() as txn:
            txn.update(
                KIND,
                TriggerModel(id=trigger_id),
                actions=[TriggerModel.next_fire_at.set(next_fire_at)],
                condition=(TriggerModel.next_fire_at == slot) & TriggerModel.due.exists(),
            )
            txn.save("firing", firing, condition=FiringModel.id.does_not_exist())
    except TxnRefused:
        return False
    return True


# --- firings --------------------------------------------------------------------------------


def _firing(model: FiringModel) -> TriggerFiring:
    # Repaired: the inbound webhook stored bodies unchecked before it applied the API's
    # JSON rules, and a lone surrogate in a row answered 500 on every read.
    result, error = repaired(model.result), repaired(model.error)
    return TriggerFiring(
        id=model.id,
        trigger_id=model.trigger_id,
        project_id=model.project_id,
        source=model.source,  # type: ignore[arg-type]  # only this module writes it
        status=model.status,  # type: ignore[arg-type]
        input=repaired(model.input),
        result=None if result is None else FiringResult.model_validate(result),
        error=None if error is None else FiringError.model_validate(error),
        started_at=model.started_at,
        completed_at=model.completed_at,
        created_at=model.created_at,
    )


def firing_row(
    firing_id: str,
    trigger: Trigger,
    source: str,
    effective_input: dict[str, Any],
    causation: list[str],
) -> FiringModel:
    """A new pending firing (not yet written)."""
    created_at, created_key = project_scoped.creation_stamp(firing_id)
    return FiringModel(
        id=firing_id,
        trigger_id=trigger.id,
        project_id=trigger.project_id,
        source=source,
        status=PENDING,
        input=effective_input,
        causation=causation or None,
        created_at=created_at,
        created_key=created_key,
        unfinished=DUE_MARK,
    )


def create_firing(row: FiringModel) -> bool:
    """Record a pending firing. False when a firing with this id exists (a repeat)."""
    try:
        row.save(condition=FiringModel.id.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == CONDITION_FAILED:
            return False
        raise
    return True


def find_firing(firing_id: str) -> TriggerFiring | None:
    row = project_scoped.find(FiringModel, firing_id)
    return None if row is None else _firing(row)


def get_firing(firing_id: str) -> TriggerFiring:
    return _firing(project_scoped.get_or_404(FiringModel, "trigger_firing", firing_id))


def firing_causation(firing_id: str) -> list[str]:
    row = project_scoped.find(FiringModel, firing_id)
    return [] if row is None else [str(t) for t in row.causation or []]


def _claim_actions() -> list[Action]:
    return [FiringModel.status.set(RUNNING), FiringModel.started_at.set(clock.now_iso())]


def claim_firing(firing_id: str) -> bool:
    """pending -> running, once: only the claimant executes the firing."""
    return FiringModel(id=firing_id).update_if(_claim_actions(), FiringModel.status == PENDING)


def take_over_firing(firing_id: str, stale_before: str) -> bool:
    """Claim a firing whose executor died: pending since, or running since, before
    ``stale_before``. Of several callers, one wins (the claim moves ``started_at``)."""
    abandoned = ((FiringModel.status == PENDING) & (FiringModel.created_at < stale_before)) | (
        (FiringModel.status == RUNNING) & (FiringModel.started_at < stale_before)
    )
    return FiringModel(id=firing_id).update_if(_claim_actions(), abandoned)


def unfinished_firing_ids(created_before: str) -> list[str]:
    """Firings still pending or running that were created before ``created_before``."""
    index = FiringModel.unfinished_firings
    found = index.query(DUE_MARK, range_key_condition=FiringModel.created_at < created_before)
    return [row.id for row in found]


def finish_firing(
    firing_id: str, result: FiringResult | None, error: FiringError | None
) -> TriggerFiring:
    """running -> succeeded (a result) or failed (an error), once."""
    status = FAILED if error is not None else "succeeded"
    actions: list[Action] = [
        FiringModel.status.set(status),
        FiringModel.completed_at.set(clock.now_iso()),
        FiringModel.unfinished.remove(),
    ]
    if result is not None:
        actions.append(FiringModel.result.set(result.model_dump(mode="json")))
    if error is not None:
        actions.append(FiringModel.error.set(error.model_dump(mode="json")))
    FiringModel(id=firing_id).update_if(actions, FiringModel.status == RUNNING)
    return get_firing(firing_id)


def list_firings(project_id: str, trigger_id: str | None, window: Window) -> Listing[TriggerFiring]:
    """A project's firings (or one trigger's), newest first."""
    firings = Partition(FiringModel.by_project, project_id, project_scoped.PROJECT_INDEX_KEYS)
    if trigger_id is not None:
        # The trigger may be deleted (its firings stay): the project is checked on the row.
        only = FiringModel.project_id == project_id
        firings = Partition(FiringModel.by_trigger, trigger_id, _TRIGGER_INDEX_KEYS, only=only)
    return page_of(replace(firings, forward=False), window, _firing)


# --- receipts: the inbound webhook's replay guard ----------------------------------------------


def receipt_key(trigger_id: str, kind: str, value: str) -> str:
    """The receipt of one accepted request's ``kind`` (``signature``, ``delivery``)."""
    return f"{trigger_id}#{kind}#{value}"


def receipted_firing(keys: Sequence[str], since: str) -> str | None:
    """The firing of the first receipt among ``keys`` accepted at or after ``since``."""
    for key in keys:
        try:
            row = TriggerReceiptModel.get(key, consistent_read=True)
        except TriggerReceiptModel.DoesNotExist:
            continue
        if row.accepted_at >= since:
            return str(row.firing_id)
    return None


def create_receipted_firing(
    row: FiringModel, keys: Sequence[str], since: str, expires_at: datetime
) -> bool:
    """Record a pending firing and its receipts at once; False, writing nothing, when one of
    ``keys`` holds a receipt accepted at or after ``since`` (or a concurrent writer raced).

    An older receipt is overwritten: the window is this comparison, not the TTL.
    """
    free = TriggerReceiptModel.key.does_not_exist() | (TriggerReceiptModel.accepted_at < since)
    try:
        with labelled_transaction() as txn:
            for key in keys:
                receipt = TriggerReceiptModel(
                    key=key, firing_id=row.id, accepted_at=row.created_at, expires_at=expires_at
                )
                txn.save("receipt", receipt, condition=free)
            txn.save("firing", row, condition=FiringModel.id.does_not_exist())
    except (TxnRefused, ConcurrentUpdate):
        return False
    return True
