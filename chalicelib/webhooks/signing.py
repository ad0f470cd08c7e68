"""Delivery signatures: ``X-Pawl-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``.

Pure functions, shared by the sender and by receivers (``verify``). Signing the
timestamp with the body bounds replays: a receiver refuses a ``t`` outside its tolerance.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "X-Pawl-Signature"
EVENT_HEADER = "X-Pawl-Event"
DELIVERY_HEADER = "X-Pawl-Delivery"
SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_S = 300


def new_secret() -> str:
    """A fresh signing secret (``whsec_`` and 32 url-safe random bytes)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str, timestamp: int, body: bytes) -> str:
    """Hex HMAC-SHA256 of ``"<timestamp>.<body>"`` under ``secret``."""
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The ``X-Pawl-Signature`` header value for ``body`` sent at ``timestamp``."""
    return f"t={timestamp},v1={digest(secret, timestamp, body)}"


def parse_header(header: str) -> tuple[int, list[str]] | None:
    """``(t, [v1 digests])`` from a header, or None when it is malformed."""
    timestamp: int | None = None
    digests: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            return None
        if key == "t":
            if not value.isdigit():
                return None
            timestamp = int(value)
        elif key == "v1":
            digests.append(value)
    if timestamp is None or not digests:
        return None
    return timestamp, digests


def verify(
    secret: str,
    header: str,
    body: bytes,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> bool:
    """True when ``header`` signs the raw ``body`` under ``secret`` within ``tolerance_s``.

    For receivers: pass the body exactly as received (re-serialized JSON will not match).
    Several ``v1`` entries are accepted (one matching is enough); comparison is
    constant-time.
    """
    parsed = parse_header(header)
    if parsed is None:
        return False
    timestamp, digests = parsed
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        return False
    expected = digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in digests)
