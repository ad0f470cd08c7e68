"""The console's routes: sign-in and sign-out, and pages that read through the API.

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
from chalicelib.console import figures, reads, render, responses, session
from chalicelib.errors import NotFound, PawlError, Unauthorized
from chalicelib.store.results import OUTCOMES

bp = Blueprint(__name__)
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


def _headers() -> dict[str, str]:
    return {k.lower(): v for k, v in (bp.current_request.headers or {}).items()}


def _is_https(headers: dict[str, str]) -> bool:
    """Over HTTPS: API Gateway says so in ``X-Forwarded-Proto``."""
    return headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() == "https"


def _form() -> dict[str, str]:
    raw = bp.current_request.raw_body or b""
    if len(raw) > MAX_FORM_BYTES:
        return {}
    text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
    fields = parse_qs(text, keep_blank_values=True, max_num_fields=8)
    return {name: values[0] for name, values in fields.items() if len(values) == 1}


def _visit(headers: dict[str, str]) -> Visit | None:
    """The signed-in visit, or None: no session, an idle or forged one, or a revoked key."""
    cookies = session.request_cookies(headers)
    current = session.open_cookie(cookies.get(session.SESSION_COOKIE), clock.now().timestamp())
    if current is None:
        return None
    try:
        caller = authenticate({"authorization": f"Bearer {current.key}"})
    except Unauthorized:
        return None
    return Visit(caller, current, _is_https(headers))


def _error_page(visit: Visit, exc: PawlError) -> Response:
    return visit.page("error.html", exc.status, status=exc.status, message=exc.message)


def _html_errors(view: Callable[..., Response]) -> Callable[..., Response]:
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


def _signed_in(view: Callable[..., Response]) -> Callable[..., Response]:
    """A page for a signed-in visit: signed out, to the sign-in page; a refusal, its status."""

    @functools.wraps(view)
    def page(**path: str) -> Response:
        headers = _headers()
        visit = _visit(headers)
        if visit is None:
            return _signed_out(headers)
        try:
            return view(visit, **path)
        except PawlError as exc:
            return _error_page(visit, exc)

    return page


def _signed_out(headers: dict[str, str]) -> Response:
    secure = _is_https(headers)
    cleared = session.clear_cookie(session.SESSION_COOKIE, secure=secure)
    return responses.redirect(HOME, [cleared])


def _sign_in_page(headers: dict[str, str], status: int = 200, message: str = "") -> Response:
    nonce = session.new_nonce()
    body = render.page("sign_in.html", csrf=session.csrf_token(nonce), message=message)
    cookie = session.set_cookie(session.SIGN_IN_COOKIE, nonce, secure=_is_https(headers))
    return responses.html(body, status, [cookie])


@bp.route("/console", methods=["GET"])
@_html_errors
def console_home() -> Response:
    """Signed out: the sign-in form. The admin key without a project: pick one."""
    headers = _headers()
    visit = _visit(headers)
    if visit is None:
        return _sign_in_page(headers)
    try:
        if visit.project_id is None:
            return _project_picker(visit)
        return _project_page(visit)
    except PawlError as exc:
        return _error_page(visit, exc)


@bp.route("/console/sign-in", methods=["POST"], content_types=[FORM])
@_html_errors
def console_sign_in() -> Response:
    headers = _headers()
    form = _form()
    nonce = session.request_cookies(headers).get(session.SIGN_IN_COOKIE)
    if not session.csrf_matches(nonce, form.get("csrf")):
        return _sign_in_page(headers, 403, "The form expired; sign in again.")
    key = form.get("key", "").strip()
    try:
        authenticate({"authorization": f"Bearer {key}"})
    except Unauthorized:
        return _sign_in_page(headers, 401, "That key is not valid.")
    secure = _is_https(headers)
    cookies = [
        session.set_cookie(session.SESSION_COOKIE, session.seal(session.start(key)), secure=secure),
        session.clear_cookie(session.SIGN_IN_COOKIE, secure=secure),
    ]
    return responses.redirect(HOME, cookies)


def _checked_form(visit: Visit) -> dict[str, str] | None:
    form = _form()
    return form if session.csrf_matches(visit.session.csrf_nonce, form.get("csrf")) else None


def _csrf_refused(visit: Visit) -> Response:
    return visit.page("error.html", 403, status=403, message="The form expired; try again.")


@bp.route("/console/sign-out", methods=["POST"], content_types=[FORM])
@_html_errors
def console_sign_out() -> Response:
    headers = _headers()
    visit = _visit(headers)
    if visit is None:
        return _signed_out(headers)
    if _checked_form(visit) is None:
        return _csrf_refused(visit)
    return _signed_out(headers)


@bp.route("/console/project", methods=["POST"], content_types=[FORM])
@_html_errors
def console_pick_project() -> Response:
    """The admin key picks the project it looks at (it must exist)."""
    headers = _headers()
    visit = _visit(headers)
    if visit is None:
        return _signed_out(headers)
    form = _checked_form(visit)
    if form is None:
        return _csrf_refused(visit)
    if not visit.caller.is_admin:
        return visit.page(
            "error.html", 403, status=403, message="Only the admin key picks a project."
        )
    project_id = form.get("project_id", "")
    try:
        reads.get(visit.caller, "/api/v1/projects/{project_id}", project_id=project_id)
    except PawlError as exc:
        return _error_page(visit, exc)
    chosen = Visit(visit.caller, visit.session.with_project(project_id), visit.secure)
    return responses.redirect(HOME, [chosen.cookie()])


@bp.route("/console/static/{name}", methods=["GET"])
@_html_errors
def console_static(name: str) -> Response:
    found = responses.static(name)
    if found is None:
        return responses.html(render.page("not_found.html"), 404)
    return found


def _project_picker(visit: Visit) -> Response:
    listed = reads.get(visit.caller, "/api/v1/projects", {"limit": "100"})
    return visit.page("projects.html", projects=listed["data"])


def _project_page(visit: Visit) -> Response:
    caller, project_id = visit.caller, visit.project_id
    listed = reads.get(caller, "/api/v1/evals", reads.listing_query(caller, project_id))
    rows = []
    for evaluation in listed["data"]:
        latest = reads.get(
            caller, "/api/v1/evals/{eval_id}/runs", {"limit": "1"}, eval_id=evaluation["id"]
        )["data"]
        rows.append({"eval": evaluation, "run": figures.run_row(latest[0]) if latest else None})
    return visit.page("project.html", evals=rows, more=listed.get("next_cursor") is not None)


def _query_value(name: str) -> str | None:
    params = bp.current_request.query_params
    value = params.get(name) if params is not None else None
    return value if isinstance(value, str) and value else None


def _cursor() -> str | None:
    return _query_value("cursor")


@bp.route("/console/evals/{eval_id}", methods=["GET"])
@_html_errors
@_signed_in
def console_eval(visit: Visit, eval_id: str) -> Response:
    caller = visit.caller
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    runs = reads.get(
        caller,
        "/api/v1/evals/{eval_id}/runs",
        reads.listing_query(caller, None, _cursor()),
        eval_id=eval_id,
    )
    return visit.page(
        "eval.html",
        eval=evaluation,
        runs=[figures.run_row(run) for run in runs["data"]],
        next_cursor=runs.get("next_cursor"),
    )


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}", methods=["GET"])
@_html_errors
@_signed_in
def console_run(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    caller, path = visit.caller, {"eval_id": eval_id, "eval_run_id": eval_run_id}
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    run = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}", **path)
    outcome = _query_value("outcome")
    query = reads.listing_query(caller, None, _cursor())
    if outcome is not None:
        query["outcome"] = outcome  # the API's own filter: an unknown outcome is its 400
    results = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results", query, **path)
    return visit.page(
        "run.html",
        eval=evaluation,
        run=run,
        row=figures.run_row(run),
        scorers=figures.scorer_rows(run),
        reasons=[figures.reason_text(r) for r in run.get("verdict_reasons") or []],
        results=[figures.result_row(result) for result in results["data"]],
        total=results.get("total"),
        next_cursor=results.get("next_cursor"),
        outcome=outcome,
        outcomes=OUTCOMES,
    )


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}/items/{item_id}", methods=["GET"])
@_html_errors
@_signed_in
def console_item(visit: Visit, eval_id: str, eval_run_id: str, item_id: str) -> Response:
    """One dataset item of a run: every trial whole, through the API's results list."""
    caller, path = visit.caller, {"eval_id": eval_id, "eval_run_id": eval_run_id}
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    run = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}", **path)
    query = {"dataset_item_id": item_id, "limit": "100"}
    trials = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results", query, **path)[
        "data"
    ]
    if not trials:
        raise NotFound(
            f"dataset_item {item_id} not found", resource_type="dataset_item", id=item_id
        )
    latencies = {t["generation_id"]: _latency(caller, t["generation_id"]) for t in trials}
    return visit.page(
        "item.html",
        eval=evaluation,
        run=run,
        item_id=item_id,
        trials=[figures.trial_view(t) for t in trials],
        latencies=latencies,
    )


def _latency(caller: Caller, generation_id: str | None) -> int | None:
    """The generation's latency, when the key may read the generation (else not shown)."""
    if not generation_id:
        return None
    try:
        generation = reads.get(
            caller, "/api/v1/generations/{generation_id}", generation_id=generation_id
        )
    except PawlError:
        return None
    latency = generation.get("latency_ms")
    return latency if isinstance(latency, int) else None
