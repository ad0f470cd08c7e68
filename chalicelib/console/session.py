"""The console's session: a cookie holding the API key it acts with, sealed.

The cookie is the whole session (``docs/decisions.md``, "Console sessions"): its value is
:func:`chalicelib.secretbox.seal` of a small JSON document (the key, the project the admin
key picked, a CSRF nonce, a session id, when it started and was last used), so the
browser holds no readable credential. A session unused for :data:`IDLE_SECONDS` is over;
every page answered re-issues the cookie with a new "last used" time. Sign-out ends a
session server-side: :mod:`chalicelib.store.console_sessions` records its id (or, to sign
out everywhere, its key up to a moment), and :func:`revoked` refuses every copy of it.

CSRF tokens are session-bound: the token a form carries is a keyed hash of the session's
nonce (or, on the sign-in form, of a pre-session cookie's nonce), so a page of another
origin can neither read nor forge one.
"""

from __future__ import annotations

import hmac
import json
import secrets
from dataclasses import dataclass, replace
from http.cookies import CookieError, SimpleCookie

from chalicelib import clock, secretbox
from chalicelib.errors import PawlError
from chalicelib.store import console_sessions

SESSION_COOKIE = "pawl_console"
#: Before sign-in: the nonce the sign-in form's CSRF token is bound to.
SIGN_IN_COOKIE = "pawl_console_signin"
IDLE_SECONDS = 12 * 60 * 60
COOKIE_PATH = "/console"


@dataclass(frozen=True)
class Session:
    key: str
    csrf_nonce: str
    last_used: float
    #: Names the session in a revocation row (sign-out); a copy of the cookie carries it too.
    session_id: str
    #: When it was signed in: "sign out everywhere" ends the key's sessions started before.
    started: float
    #: The project the admin key chose to look at (a project key's own is implied).
    project_id: str | None = None

    def touched(self, now: float) -> Session:
        return replace(self, last_used=now)

    def with_project(self, project_id: str) -> Session:
        return replace(self, project_id=project_id)


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def start(key: str) -> Session:
    now = clock.now().timestamp()
    return Session(
        key=key, csrf_nonce=new_nonce(), last_used=now, session_id=new_nonce(), started=now
    )


def seal(session: Session) -> str:
    document = {
        "key": session.key,
        "csrf": session.csrf_nonce,
        "used": session.last_used,
        "project": session.project_id,
        "sid": session.session_id,
        "started": session.started,
    }
    return secretbox.seal(json.dumps(document), secretbox.CONSOLE_SESSION)


def open_cookie(value: str | None, now: float) -> Session | None:
    """The live session a cookie value holds; None: absent, forged, another secret's, or idle."""
    if not value:
        return None
    try:
        document = json.loads(secretbox.open_sealed(value, secretbox.CONSOLE_SESSION))
        session = Session(
            key=str(document["key"]),
            csrf_nonce=str(document["csrf"]),
            last_used=float(document["used"]),
            session_id=str(document["sid"]),
            started=float(document["started"]),
            project_id=document["project"] if isinstance(document["project"], str) else None,
        )
    except (PawlError, ValueError, KeyError, TypeError):
        return None
    if not 0 <= now - session.last_used <= IDLE_SECONDS:
        return None
    return session


def _ref(session: Session) -> console_sessions.SessionRef:
    key_hash = secretbox.keyed_hash(secretbox.CONSOLE_KEY, session.key)
    return console_sessions.SessionRef(session.session_id, key_hash, session.started)


def revoked(session: Session) -> bool:
    """Signed out (this session, or its key everywhere since it started): one read."""
    return console_sessions.is_revoked(_ref(session))


def end(session: Session) -> None:
    """Sign-out: this session and every copy of its cookie are over."""
    console_sessions.revoke_session(session.session_id, IDLE_SECONDS)


def end_everywhere(session: Session) -> None:
    """Sign out everywhere: every session of this key signed in until now is over."""
    console_sessions.revoke_key_sessions(_ref(session).key_hash, IDLE_SECONDS)


def csrf_token(nonce: str) -> str:
    return secretbox.keyed_hash(secretbox.CONSOLE_CSRF, nonce)


def csrf_matches(nonce: str | None, token: str | None) -> bool:
    if not nonce or not token:
        return False
    return hmac.compare_digest(csrf_token(nonce).encode(), token.encode())


def request_cookies(headers: dict[str, str]) -> dict[str, str]:
    """The request's cookies by name (a malformed header: none)."""
    raw = headers.get("cookie") or headers.get("Cookie") or ""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def set_cookie(name: str, value: str, *, secure: bool, max_age: int = IDLE_SECONDS) -> str:
    """A ``Set-Cookie`` value: HttpOnly, SameSite=Strict, path ``/console``, Secure over HTTPS."""
    parts = [
        f"{name}={value}",
        f"Path={COOKIE_PATH}",
        f"Max-Age={max_age}",
        "HttpOnly",
        "SameSite=Strict",
    ]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


def clear_cookie(name: str, *, secure: bool) -> str:
    return set_cookie(name, "", secure=secure, max_age=0)
