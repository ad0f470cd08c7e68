"""The inbound webhook: a signed ``POST /hooks/triggers/{trigger_id}`` fires a webhook trigger.

Checks, in the spec's order, each before anything is written: an unknown trigger, one of
another type, or a malformed id is 404 (the same answer: existence is not leaked); a
missing or wrong ``sha256=<hex HMAC-SHA256(secret, raw body)>`` signature is 401 (compared
in constant time); an inactive trigger is 409 ``TRIGGER_NOT_ACTIVE``; a body that is not
JSON is 400. The body (capped at :data:`MAX_BODY_BYTES`) is the fire-time input, a
non-object wrapped as ``{"payload": ...}``. A delivery id header makes the call
idempotent: the same id on the same trigger is one firing, answered again as it stands.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from typing import Any

from chalicelib import ids
from chalicelib.domain.triggers import HookAccepted
from chalicelib.engine.triggers import firing, targets
from chalicelib.errors import Conflict, PayloadTooLarge, Unauthorized, ValidationFailed, not_found
from chalicelib.store import triggers as store

MAX_BODY_BYTES = 1024 * 1024
#: pawl's header names first, the spec's accepted too (a sender written against it works).
SIGNATURE_HEADERS = ("x-pawl-signature", "x-soat-signature")
DELIVERY_HEADERS = ("x-pawl-delivery", "x-soat-delivery")
SIGNATURE_PREFIX = "sha256="
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


def signature(secret: str, body: bytes) -> str:
    """The signature header value a sender puts on ``body``."""
    return SIGNATURE_PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _header(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    return next((lowered[n] for n in names if n in lowered), None)


def _verify(secret: str, given: str | None, body: bytes) -> None:
    expected = signature(secret, body).encode()
    if given is None or not hmac.compare_digest(given.strip().encode(), expected):
        raise Unauthorized(
            "missing or invalid signature: send X-Pawl-Signature: sha256=<hex HMAC-SHA256 "
            "of the raw body under the trigger's secret>",
            code="INVALID_SIGNATURE",
        )


def _fire_input(body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ValidationFailed("the body is not valid JSON", field="body") from None
    return decoded if isinstance(decoded, dict) else {"payload": decoded}


def _delivery_id(headers: Mapping[str, str]) -> str | None:
    value = _header(headers, DELIVERY_HEADERS)
    if value is not None and not _DELIVERY_ID.match(value):
        raise ValidationFailed(
            "the delivery id header must be 1-200 characters of letters, digits and ._:-",
            field="X-Pawl-Delivery",
        )
    return value


def receive(trigger_id: str, headers: Mapping[str, str], body: bytes) -> HookAccepted:
    """Verify and fire; the answer for the 202."""
    if len(body) > MAX_BODY_BYTES:
        raise PayloadTooLarge(
            f"the body is larger than {MAX_BODY_BYTES} bytes", limit=MAX_BODY_BYTES
        )
    trigger = store.find_trigger(trigger_id) if ids.is_id("trigger", trigger_id) else None
    secret = store.read_secret(trigger_id) if trigger and trigger.type == "webhook" else None
    if trigger is None or secret is None:
        raise not_found("trigger", trigger_id)
    _verify(secret, _header(headers, SIGNATURE_HEADERS), body)
    if not trigger.active:
        raise Conflict(f"trigger {trigger.id} is not active", code="TRIGGER_NOT_ACTIVE")
    fire_input = _fire_input(body)
    targets.eval_input({**(trigger.input or {}), **fire_input})
    delivery = _delivery_id(headers)
    firing_id = None
    if delivery is not None:
        firing_id = ids.derived_id("trigger_firing", trigger.id, "webhook", delivery)
    fired = firing.fire(trigger, "webhook", fire_input, firing_id=firing_id)
    return HookAccepted(firing_id=fired.id, trigger_id=trigger.id, status=fired.status)
