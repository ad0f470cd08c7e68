"""The inbound webhook: a signed ``POST /hooks/triggers/{trigger_id}`` fires a webhook trigger.

Checks, in the spec's order, each before anything is written: an unknown trigger, one of
another type, or a malformed id is 404 (the same answer: existence is not leaked); a
missing or wrong signature is 401 (either form of :mod:`.hook_signature`, compared in
constant time; a trigger with ``require_timestamp`` takes the timestamped form only); an
inactive trigger is 409 ``TRIGGER_NOT_ACTIVE``; a body the API's JSON rules refuse
(:mod:`chalicelib.jsonvalues.json_input`: not JSON, too deep, ``NaN``, a lone surrogate, …)
is the same 400 the API answers. The body (capped at :data:`MAX_BODY_BYTES`) is the
fire-time input, a non-object wrapped as ``{"payload": ...}``.

A request is accepted once: its signature's HMAC and its delivery id header are receipts of
the firing it started (:func:`firing.fire_once`), and a request that repeats either within
the replay window is answered with that firing and starts nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from chalicelib import clock, ids
from chalicelib.domain.triggers import HookAccepted
from chalicelib.engine.triggers import firing, hook_signature, targets
from chalicelib.errors import Conflict, PayloadTooLarge, ValidationFailed, not_found
from chalicelib.jsonvalues import json_input
from chalicelib.store import triggers as store

MAX_BODY_BYTES = 1024 * 1024
#: pawl's header names first, the spec's accepted too (a sender written against it works).
SIGNATURE_HEADERS = ("x-pawl-signature", "x-soat-signature")
DELIVERY_HEADERS = ("x-pawl-delivery", "x-soat-delivery")
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


def signature(secret: str, body: bytes) -> str:
    """The body-only signature header value a sender puts on ``body``."""
    return hook_signature.body_only(secret, body)


def _header(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    return next((lowered[n] for n in names if n in lowered), None)


def _fire_input(body: bytes) -> dict[str, Any]:
    """The body as the fire-time input, held to the API's JSON rules."""
    if not body.strip():
        return {}
    decoded = json_input.parse_body(body)
    if isinstance(decoded, dict):
        return decoded
    try:  # the wrapper is one more level: the stored input keeps to the limit too
        json_input.check_depth("[" + body.decode() + "]")
    except ValidationFailed:
        raise ValidationFailed(
            f"body is nested deeper than {json_input.MAX_DEPTH - 1} levels: a body that is "
            'not an object is stored as {"payload": ...}, one level deeper',
            field="body",
            limit=json_input.MAX_DEPTH - 1,
        ) from None
    return {"payload": decoded}


def _delivery_id(headers: Mapping[str, str]) -> str | None:
    value = _header(headers, DELIVERY_HEADERS)
    if value is not None and not _DELIVERY_ID.match(value):
        raise ValidationFailed(
            "the delivery id header must be 1-200 characters of letters, digits and ._:-",
            field="X-Pawl-Delivery",
        )
    return value


def receipts(
    trigger_id: str, verified: hook_signature.VerifiedSignature, delivery: str | None
) -> list[str]:
    """The receipt keys of an accepted request: its signature (a digest of its HMAC, so the
    stored key cannot be replayed as a signature) and its delivery id, when it has one."""
    fingerprint = hashlib.sha256(verified.digest.encode()).hexdigest()
    keys = [store.receipt_key(trigger_id, "signature", fingerprint)]
    if delivery is not None:
        keys.append(store.receipt_key(trigger_id, "delivery", delivery))
    return keys


def receive(trigger_id: str, headers: Mapping[str, str], body: bytes) -> HookAccepted:
    """Verify and fire (or answer the firing this request already started); the 202's body."""
    if len(body) > MAX_BODY_BYTES:
        raise PayloadTooLarge(
            f"the body is larger than {MAX_BODY_BYTES} bytes", limit=MAX_BODY_BYTES
        )
    trigger = store.find_trigger(trigger_id) if ids.is_id("trigger", trigger_id) else None
    secret = store.read_secret(trigger_id) if trigger and trigger.type == "webhook" else None
    if trigger is None or secret is None:
        raise not_found("trigger", trigger_id)
    verified = hook_signature.verify(
        secret,
        _header(headers, SIGNATURE_HEADERS),
        body,
        now=clock.now().timestamp(),
        require_timestamp=trigger.require_timestamp,
    )
    if not trigger.active:
        raise Conflict(f"trigger {trigger.id} is not active", code="TRIGGER_NOT_ACTIVE")
    fire_input = _fire_input(body)
    targets.eval_input({**(trigger.input or {}), **fire_input})
    keys = receipts(trigger.id, verified, _delivery_id(headers))
    fired = firing.fire_once(trigger, "webhook", fire_input, keys)
    return HookAccepted(firing_id=fired.id, trigger_id=trigger.id, status=fired.status)
