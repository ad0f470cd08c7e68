"""The inbound webhook's two signature forms, verified. Pure: the caller passes the clock.

- **body-only** (SOAT's form): ``sha256=<hex HMAC-SHA256(secret, raw body)>``. Nothing in it
  ages, so on its own it can be replayed forever; the replay guard (the firing's receipts)
  stops an exact repeat within its window.
- **timestamped** (the form pawl's own outbound webhooks use, :mod:`chalicelib.webhooks.signing`):
  ``t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>``, accepted while ``t`` is
  within :data:`TOLERANCE_S` of now, so a captured request is worthless after that.

Both are compared in constant time. :func:`verify` answers the HMAC that matched (the one
computed here, so a repeat of the same request always yields the same value): the replay
guard keys on it.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from chalicelib.errors import Unauthorized
from chalicelib.webhooks import signing

BODY_ONLY_PREFIX = "sha256="
TOLERANCE_S = signing.DEFAULT_TOLERANCE_S
_HOW = (
    'send X-Pawl-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> '
    "or sha256=<hex HMAC-SHA256 of the raw body>, under the trigger's secret"
)


@dataclass(frozen=True)
class VerifiedSignature:
    """A signature that matched: its HMAC (hex) and, for the timestamped form, its ``t``."""

    digest: str
    timestamp: int | None


def body_only(secret: str, body: bytes) -> str:
    """The body-only header value a sender puts on ``body``."""
    return BODY_ONLY_PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def timestamped(secret: str, body: bytes, timestamp: int) -> str:
    """The timestamped header value a sender puts on ``body`` sent at ``timestamp``."""
    return signing.sign(secret, body, timestamp)


def verify(
    secret: str, header: str | None, body: bytes, *, now: float, require_timestamp: bool
) -> VerifiedSignature:
    """The signature ``header`` carries, checked against ``body``; raises 401 otherwise.

    The reason of a refusal (stale, body-only where a timestamp is required) is told only
    for a signature that is otherwise valid: a caller without the secret learns nothing.
    """
    given = (header or "").strip()
    if given.startswith(BODY_ONLY_PREFIX):
        digest = body_only(secret, body).removeprefix(BODY_ONLY_PREFIX)
        if not hmac.compare_digest(given.removeprefix(BODY_ONLY_PREFIX).encode(), digest.encode()):
            raise _refused(f"missing or invalid signature: {_HOW}")
        if require_timestamp:
            raise _refused(
                "this trigger requires a timestamped signature: send X-Pawl-Signature: "
                't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">'
            )
        return VerifiedSignature(digest, None)
    parsed = signing.parse_header(given) if given else None
    if parsed is None:
        raise _refused(f"missing or invalid signature: {_HOW}")
    timestamp, candidates = parsed
    digest = signing.digest(secret, timestamp, body)
    if not any(hmac.compare_digest(c.encode(), digest.encode()) for c in candidates):
        raise _refused(f"missing or invalid signature: {_HOW}")
    if abs(now - timestamp) > TOLERANCE_S:
        raise _refused(
            f"the signature's timestamp t={timestamp} is more than {TOLERANCE_S} s from "
            "the server's clock: sign the request when you send it"
        )
    return VerifiedSignature(digest, timestamp)


def _refused(message: str) -> Unauthorized:
    return Unauthorized(message, code="INVALID_SIGNATURE")
