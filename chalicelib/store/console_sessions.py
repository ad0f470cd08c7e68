"""Console session revocations: sign-out ends a session server-side (``docs/dynamodb.md``).

The session cookie stays the whole session (a sealed document, ``console/session.py``);
this table only lists what was ended before its idle expiry: one session (sign-out) or
every session of a key up to a moment (sign out everywhere). Every console request reads
both of its possible rows in one consistent ``BatchGetItem``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from chalicelib import clock
from chalicelib.store.base import serialized_writes
from chalicelib.store.models import ConsoleRevocationModel


@dataclass(frozen=True)
class SessionRef:
    """What a revocation may name of a session: its id, its key's hash, when it started."""

    session_id: str
    key_hash: str
    started: float


def _session_row(session_id: str) -> str:
    return f"session#{session_id}"


def _key_row(key_hash: str) -> str:
    return f"key#{key_hash}"


#: Added to a row's lifetime: the TTL attribute keeps whole seconds, and a row must outlive
#: every cookie it refuses.
_TTL_MARGIN_S = 60


def _write(row_key: str, lifetime_s: int, revoked_before: float | None) -> None:
    now = clock.now()
    row = ConsoleRevocationModel(
        key=row_key,
        revoked_at=now.isoformat(),
        revoked_before=revoked_before,
        expires_at=now + timedelta(seconds=lifetime_s + _TTL_MARGIN_S),
    )
    with serialized_writes():
        row.save()


def revoke_session(session_id: str, lifetime_s: int) -> None:
    """End one session: its cookie (and every copy of it) is refused from now on."""
    _write(_session_row(session_id), lifetime_s, None)


def revoke_key_sessions(key_hash: str, lifetime_s: int) -> None:
    """End every session of a key started until now (a later sign-in is not affected)."""
    _write(_key_row(key_hash), lifetime_s, clock.now().timestamp())


def is_revoked(ref: SessionRef) -> bool:
    """Whether the session was signed out, or its key signed out everywhere since it began."""
    wanted = [_session_row(ref.session_id), _key_row(ref.key_hash)]
    for row in ConsoleRevocationModel.batch_get(wanted, consistent_read=True):
        if row.revoked_before is None or ref.started <= float(row.revoked_before):
            return True
    return False
