"""The eval page: its pass-rate chart, its runs table, and the forms that start and cancel
a run, each a call of the API's own route as the signed-in key.

The chart plots the runs of the table's page (the API's own page of
:data:`~chalicelib.console.reads.PAGE_SIZE` runs, newest first, with its cursor): one read
of the runs serves both, and an older page charts its own runs. Each run row is ~6 KB
(its aggregate scores); on the embedded runtime reading 500 of them cost the page over a
second and 100 about 300 ms, where one page of 50 keeps it near 200 ms
(bench/console_size.py).
"""

from __future__ import annotations

from typing import Any

from chalice import Response

from chalicelib.api.auth import Caller
from chalicelib.console import charts, figures, reads, responses, writes
from chalicelib.console.visit import (
    FORM,
    Visit,
    bp,
    checked_form,
    csrf_refused,
    cursor,
    html_errors,
    signed_in,
)
from chalicelib.errors import ValidationFailed

#: How many of the newest runs "latest completed" looks through (one of the API's pages).
RECENT_RUNS = 100
#: How many runs the start form offers as a specific baseline.
BASELINE_CHOICES = 20
#: The statuses a baseline may have (the API refuses any other).
BASELINE_STATUSES = ("completed", "failed")
#: The statuses a run can be cancelled in.
ACTIVE_STATUSES = ("queued", "running")
#: The API's largest page of runs.
CHART_PAGE = 100
RUNS = "/api/v1/evals/{eval_id}/runs"


def recent_runs(caller: Caller, eval_id: str) -> list[dict[str, Any]]:
    """Up to :data:`RECENT_RUNS` of the eval's runs, newest first: the API's pages, followed."""
    most = RECENT_RUNS
    found: list[dict[str, Any]] = []
    next_cursor: str | None = None
    while len(found) < most:
        wanted = min(CHART_PAGE, most - len(found))
        query = {"limit": str(wanted), **({"cursor": next_cursor} if next_cursor else {})}
        listed = reads.get(caller, RUNS, query, eval_id=eval_id)
        found += listed["data"]
        next_cursor = listed.get("next_cursor")
        if not next_cursor:
            break
    return found[:most]


def eval_view(
    visit: Visit,
    eval_id: str,
    http_status: int = 200,
    form_error: str = "",
    form: dict[str, str] | None = None,
) -> Response:
    caller = visit.caller
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    table = reads.get(caller, RUNS, reads.listing_query(caller, None, cursor()), eval_id=eval_id)
    history = table["data"]
    return visit.page(
        "eval.html",
        http_status,
        eval=evaluation,
        chart=charts.pass_rate_chart(history),
        charted=len(history),
        runs=[figures.run_row(run) for run in table["data"]],
        next_cursor=table.get("next_cursor"),
        baselines=[r["id"] for r in history if r["status"] in BASELINE_STATUSES][:BASELINE_CHOICES],
        active=ACTIVE_STATUSES,
        form_error=form_error,
        form=form or {},
    )


@bp.route("/console/evals/{eval_id}", methods=["GET"])
@html_errors
@signed_in
def console_eval(visit: Visit, eval_id: str) -> Response:
    return eval_view(visit, eval_id)


def latest_completed(caller: Caller, eval_id: str) -> str:
    """The newest completed run's id (the API's pages, newest first)."""
    for run in recent_runs(caller, eval_id):
        if run["status"] == "completed":
            return str(run["id"])
    raise ValidationFailed("this eval has no completed run to compare with", field="baseline")


def concurrency_value(text: str) -> Any:
    """The form's max concurrency as the API's body takes it: a whole number as a number,
    anything else as typed (so the API's own validation answers it)."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return text


def start_body(caller: Caller, eval_id: str, form: dict[str, str]) -> dict[str, Any]:
    """The API's start-run body the form describes."""
    body: dict[str, Any] = {}
    baseline = form.get("baseline", "none").strip()
    if baseline == "latest":
        body["baseline_run_id"] = latest_completed(caller, eval_id)
    elif baseline not in ("", "none"):
        body["baseline_run_id"] = baseline  # a run id: the API decides whether it is usable
    if form.get("max_concurrency", "").strip():
        body["max_concurrency"] = concurrency_value(form["max_concurrency"])
    return body


@bp.route("/console/evals/{eval_id}/runs", methods=["POST"], content_types=[FORM])
@html_errors
@signed_in
def console_start_run(visit: Visit, eval_id: str) -> Response:
    """Start a run through the API's start route; its 400 re-renders the form."""
    form = checked_form(visit)
    if form is None:
        return csrf_refused(visit)
    try:
        body = start_body(visit.caller, eval_id, form)
        started = writes.post(visit.caller, RUNS, body, eval_id=eval_id)
    except ValidationFailed as refused:
        return eval_view(visit, eval_id, refused.status, refused.message, form)
    location = f"/console/evals/{eval_id}/runs/{started['id']}"
    return responses.redirect(location, [visit.cookie()])


@bp.route(
    "/console/evals/{eval_id}/runs/{eval_run_id}/cancel", methods=["POST"], content_types=[FORM]
)
@html_errors
@signed_in
def console_cancel_run(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    """Cancel a run through the API's cancel route, then back to the eval page."""
    if checked_form(visit) is None:
        return csrf_refused(visit)
    writes.post(
        visit.caller, RUNS + "/{eval_run_id}/cancel", eval_id=eval_id, eval_run_id=eval_run_id
    )
    return responses.redirect(f"/console/evals/{eval_id}", [visit.cookie()])
