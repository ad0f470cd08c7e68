"""A signed-in console request: the session cookie resolved to a caller, and the helpers
every page module shares (its blueprint, form and query reading, CSRF, error pages).

Every page resolves the session cookie to a :class:`~chalicelib.api.auth.Caller` with
:func:`~chalicelib.api.auth.authenticate` (as a bearer key would be) and reads with
:mod:`chalicelib.console.reads`. Every POST checks the session-bound CSRF token before
anything else happens.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from chalice import Blueprint, Response

from chalicelib import clock
from chalicelib.api.auth import Caller, authenticate
from chalicelib.console import render, responses, session
from chalicelib.errors import PawlError, Unauthorized

bp = Blueprint("chalicelib.console.routes")
log = logging.getLogger("pawl.console")

FORM = "application/x-www-form-urlencoded"
#: A sign-in form is a key and a token; anything much larger is not one.
MAX_FORM_BYTES = 4096
HOME = "/console"


@dataclass(frozen=True)
class Visit:
    """One signed-in request: who acts, the session to re-issue, how cookies are flagged."""

    caller: Caller
    session: session.Session
    secure: bool

    @property
    def project_id(self) -> str | None:
        return self.caller.project_id or self.session.project_id

    def cookie(self) -> str:
        touched = self.session.touched(clock.now().timestamp())
        return session.set_cookie(session.SESSION_COOKIE, session.seal(touched), secure=self.secure)

    def page(self, template: str, http_status: int = 200, **context: Any) -> Response:
        body = render.page(
            template,
            csrf=session.csrf_token(self.session.csrf_nonce),
            is_admin=self.caller.is_admin,
            project_id=self.project_id,
            **context,
        )
        return responses.html(body, http_status, [self.cookie()])


def request_headers() -> dict[str, str]:
    return {k.lower(): v for k, v in (bp.current_request.headers or {}).items()}


def is_https(headers: dict[str, str]) -> bool:
    """Over HTTPS: API Gateway says so in ``X-Forwarded-Proto``."""
    return headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() == "https"


def read_form() -> dict[str, str]:
    raw = bp.current_request.raw_body or b""
    if len(raw) > MAX_FORM_BYTES:
        return {}
    text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
    fields = parse_qs(text, keep_blank_values=True, max_num_fields=8)
    return {name: values[0] for name, values in fields.items() if len(values) == 1}


def visit_of(headers: dict[str, str]) -> Visit | None:
    """The signed-in visit, or None: no session, an idle, forged or signed-out one, or a
    revoked key."""
    cookies = session.request_cookies(headers)
    current = session.open_cookie(cookies.get(session.SESSION_COOKIE), clock.now().timestamp())
    if current is None or session.revoked(current):
        return None
    try:
        caller = authenticate({"authorization": f"Bearer {current.key}"})
    except Unauthorized:
        return None
    return Visit(caller, current, is_https(headers))


def error_page(visit: Visit, exc: PawlError) -> Response:
    return visit.page("error.html", exc.status, status=exc.status, message=exc.message)


def html_errors(view: Callable[..., Response]) -> Callable[..., Response]:
    """An unexpected failure as an HTML 500 with the console's headers (nothing internal)."""

    @functools.wraps(view)
    def answer(**path: str) -> Response:
        try:
            return view(**path)
        except Exception:
            log.exception("console page failed")
            body = render.page("error.html", status=500, message="An internal error occurred.")
            return responses.html(body, 500)

    return answer


def signed_in(view: Callable[..., Response]) -> Callable[..., Response]:
    """A page for a signed-in visit: signed out, to the sign-in page; a refusal, its status."""

    @functools.wraps(view)
    def page(**path: str) -> Response:
        headers = request_headers()
        visit = visit_of(headers)
        if visit is None:
            return signed_out(headers)
        try:
            return view(visit, **path)
        except PawlError as exc:
            return error_page(visit, exc)

    return page


def signed_out(headers: dict[str, str]) -> Response:
    secure = is_https(headers)
    cleared = session.clear_cookie(session.SESSION_COOKIE, secure=secure)
    return responses.redirect(HOME, [cleared])


def sign_in_page(headers: dict[str, str], status: int = 200, message: str = "") -> Response:
    nonce = session.new_nonce()
    body = render.page("sign_in.html", csrf=session.csrf_token(nonce), message=message)
    cookie = session.set_cookie(session.SIGN_IN_COOKIE, nonce, secure=is_https(headers))
    return responses.html(body, status, [cookie])


def checked_form(visit: Visit) -> dict[str, str] | None:
    form = read_form()
    return form if session.csrf_matches(visit.session.csrf_nonce, form.get("csrf")) else None


def csrf_refused(visit: Visit) -> Response:
    return visit.page("error.html", 403, status=403, message="The form expired; try again.")


def query_value(name: str) -> str | None:
    params = bp.current_request.query_params
    value = params.get(name) if params is not None else None
    return value if isinstance(value, str) and value else None


def cursor() -> str | None:
    return query_value("cursor")
