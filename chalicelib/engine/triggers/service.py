"""Writing triggers from a validated :class:`TriggerSpec`: the API and formations call this.

Every rule is checked before the write, so a refused create or update writes nothing:
the field combination of the type (``cron`` iff schedule, ``event_pattern`` iff event,
``require_timestamp`` on a webhook only),
the cron and pattern grammars, the target (an eval of the trigger's project) and the
shape of its input. A webhook trigger gets a fresh secret (32 random bytes, hex), shown
by :func:`create_trigger` and :func:`rotate_secret` only.
"""

from __future__ import annotations

import secrets

from chalicelib import clock
from chalicelib.domain.triggers import Trigger, TriggerSecret, TriggerSpec, TriggerWithSecret
from chalicelib.engine.triggers import cron, patterns, targets
from chalicelib.errors import Conflict, ValidationFailed
from chalicelib.store import triggers as store

SECRET_BYTES = 32


def new_secret() -> str:
    return secrets.token_hex(SECRET_BYTES)


def checked(project_id: str, spec: TriggerSpec) -> TriggerSpec:
    """``spec`` with its cron normalised, or the 400 that refuses it."""
    if spec.policy_id is not None:
        raise ValidationFailed(
            "policy_id is not supported: pawl has no policies (leave it null)", field="policy_id"
        )
    if spec.type == "schedule":
        if spec.cron is None:
            raise targets.not_allowed("a schedule trigger requires cron", "cron")
        spec = spec.model_copy(update={"cron": cron.check(spec.cron)})
    elif spec.cron is not None:
        raise targets.not_allowed("cron is allowed on schedule triggers only", "cron")
    if spec.type == "event":
        if spec.event_pattern is None:
            raise targets.not_allowed("an event trigger requires event_pattern", "event_pattern")
        patterns.check(spec.event_pattern)
    elif spec.event_pattern is not None:
        raise targets.not_allowed(
            "event_pattern is allowed on event triggers only", "event_pattern"
        )
    if spec.require_timestamp and spec.type != "webhook":
        raise targets.not_allowed(
            "require_timestamp is allowed on webhook triggers only", "require_timestamp"
        )
    targets.check_target(project_id, spec)
    return spec


def _next_fire_at(spec: TriggerSpec) -> str | None:
    if spec.type != "schedule" or not spec.active or spec.cron is None:
        return None
    return cron.next_after(spec.cron, clock.now())


def create_trigger(project_id: str, spec: TriggerSpec) -> TriggerWithSecret:
    """Create a trigger in an existing project; the answer carries a webhook's secret."""
    spec = checked(project_id, spec)
    secret = new_secret() if spec.type == "webhook" else None
    created = store.create_trigger(project_id, spec, secret, _next_fire_at(spec))
    return TriggerWithSecret(secret=secret, **created.model_dump())


def update_trigger(current: Trigger, spec: TriggerSpec) -> Trigger:
    """Replace ``current``'s writable fields with ``spec`` (its ``type`` is immutable).

    ``next_fire_at`` is left alone while ``cron`` and ``active`` are unchanged, else
    recomputed from now (a re-activated schedule does not fire for the slots it slept through).
    """
    if spec.type != current.type:
        raise ValidationFailed(
            f"type is immutable (this trigger is a {current.type} trigger)", field="type"
        )
    spec = checked(current.project_id, spec)
    unchanged = spec.cron == current.cron and spec.active == current.active
    if unchanged:  # the scheduler owns next_fire_at: leave it where it is
        return store.update_trigger(current, spec, current.next_fire_at, keep_schedule=True)
    return store.update_trigger(current, spec, _next_fire_at(spec))


def delete_trigger(current: Trigger) -> None:
    """Delete the trigger; its firings and the runs it started keep its id."""
    store.delete_trigger(current)


def _webhook_only(current: Trigger) -> None:
    if current.type != "webhook":
        raise Conflict(
            f"trigger {current.id} is a {current.type} trigger: only webhook triggers have "
            "a secret",
            code="TRIGGER_HAS_NO_SECRET",
        )


def rotate_secret(current: Trigger) -> TriggerWithSecret:
    """Replace a webhook trigger's secret; the answer is the only view of the new one."""
    _webhook_only(current)
    secret = new_secret()
    updated = store.replace_secret(current, secret)
    return TriggerWithSecret(secret=secret, **updated.model_dump())


def read_secret(current: Trigger) -> TriggerSecret:
    _webhook_only(current)
    secret = store.read_secret(current.id)
    if secret is None:
        raise Conflict(f"trigger {current.id} has no secret", code="TRIGGER_HAS_NO_SECRET")
    return TriggerSecret(trigger_id=current.id, secret=secret)
