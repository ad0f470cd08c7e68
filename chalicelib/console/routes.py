"""The console's routes: sign-in, sign-out (here or everywhere), the project pick, static files.

The pages themselves live in their own modules (:mod:`.pages`, ...), each registering on
the one blueprint of :mod:`.visit`; importing this module registers them all.
"""

from __future__ import annotations

from collections.abc import Callable

from chalice import Response

from chalicelib.api.auth import authenticate
from chalicelib.console import (
    compare,
    compare_pick,
    datasets,
    eval_page,
    pages,
    reads,
    render,
    responses,
    run_page,
    session,
)
from chalicelib.console.visit import (
    FORM,
    HOME,
    Visit,
    bp,
    checked_form,
    csrf_refused,
    error_page,
    html_errors,
    is_https,
    read_form,
    request_headers,
    sign_in_page,
    signed_out,
    visit_of,
)
from chalicelib.errors import PawlError, Unauthorized

__all__ = ["bp", "compare", "compare_pick", "datasets", "eval_page", "pages", "run_page"]


@bp.route("/console", methods=["GET"])
@html_errors
def console_home() -> Response:
    """Signed out: the sign-in form. The admin key without a project: pick one."""
    headers = request_headers()
    visit = visit_of(headers)
    if visit is None:
        return sign_in_page(headers)
    try:
        if visit.project_id is None:
            return pages.project_picker(visit)
        return pages.project_page(visit)
    except PawlError as exc:
        return error_page(visit, exc)


@bp.route("/console/sign-in", methods=["POST"], content_types=[FORM])
@html_errors
def console_sign_in() -> Response:
    headers = request_headers()
    form = read_form()
    nonce = session.request_cookies(headers).get(session.SIGN_IN_COOKIE)
    if not session.csrf_matches(nonce, form.get("csrf")):
        return sign_in_page(headers, 403, "The form expired; sign in again.")
    key = form.get("key", "").strip()
    try:
        authenticate({"authorization": f"Bearer {key}"})
    except Unauthorized:
        return sign_in_page(headers, 401, "That key is not valid.")
    secure = is_https(headers)
    cookies = [
        session.set_cookie(session.SESSION_COOKIE, session.seal(session.start(key)), secure=secure),
        session.clear_cookie(session.SIGN_IN_COOKIE, secure=secure),
    ]
    return responses.redirect(HOME, cookies)


@bp.route("/console/sign-out", methods=["POST"], content_types=[FORM])
@html_errors
def console_sign_out() -> Response:
    return _sign_out(session.end)


@bp.route("/console/sign-out-everywhere", methods=["POST"], content_types=[FORM])
@html_errors
def console_sign_out_everywhere() -> Response:
    """Every session of this key ends, in every browser (a later sign-in is a new one)."""
    return _sign_out(session.end_everywhere)


def _sign_out(end: Callable[[session.Session], None]) -> Response:
    """A signed-in form with its CSRF token: ``end`` the session(s), then clear the cookie."""
    headers = request_headers()
    visit = visit_of(headers)
    if visit is None:
        return signed_out(headers)
    if checked_form(visit) is None:
        return csrf_refused(visit)
    end(visit.session)
    return signed_out(headers)


@bp.route("/console/project", methods=["POST"], content_types=[FORM])
@html_errors
def console_pick_project() -> Response:
    """The admin key picks the project it looks at (it must exist)."""
    headers = request_headers()
    visit = visit_of(headers)
    if visit is None:
        return signed_out(headers)
    form = checked_form(visit)
    if form is None:
        return csrf_refused(visit)
    if not visit.caller.is_admin:
        return visit.page(
            "error.html", 403, status=403, message="Only the admin key picks a project."
        )
    project_id = form.get("project_id", "")
    try:
        reads.get(visit.caller, "/api/v1/projects/{project_id}", project_id=project_id)
    except PawlError as exc:
        return error_page(visit, exc)
    chosen = Visit(visit.caller, visit.session.with_project(project_id), visit.secure)
    return responses.redirect(HOME, [chosen.cookie()])


@bp.route("/console/static/{name}", methods=["GET"])
@html_errors
def console_static(name: str) -> Response:
    found = responses.static(name)
    if found is None:
        return responses.html(render.page("not_found.html"), 404)
    return found
