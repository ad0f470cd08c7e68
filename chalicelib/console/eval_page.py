"""The eval page: its pass-rate chart, its runs table, and the forms that start and cancel
a run, each a call of the API's own route as the signed-in key.

Every runs read is the API's ``view=summary`` list (each run's headline figures for its
aggregate, ~1 KB a run where a whole run is ~6 KB) and its ``total`` is the eval row's run
counter, so a page costs what it shows, not the eval's history. The table shows a page of
:data:`~chalicelib.console.reads.PAGE_SIZE` runs (newest first, the API's cursor); the
chart plots that page and the runs before it, up to :data:`CHART_RUNS`, by following the
table's own ``next_cursor``, so no run is read twice and an older page charts from there.
It is the table's page for now: 100 runs missed the 300 ms target (figures:
``docs/scaling.md``, "The console at size").
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
#: How many runs the chart plots: the table's page and, past it, the older runs after it.
#: The table's page (no further read): 100 added ~140 ms to a 500-run eval page on the
#: embedded runtime, past the 300 ms p95 target (bench/console_size.py, docs/scaling.md).
CHART_RUNS = reads.PAGE_SIZE
RUNS = reads.RUNS


def runs_after(
    caller: Caller, eval_id: str, most: int, next_cursor: str | None = None
) -> list[dict[str, Any]]:
    """Up to ``most`` run summaries of the eval, newest first, from ``next_cursor`` on:
    the API's pages, followed."""
    found: list[dict[str, Any]] = []
    while len(found) < most:
        listed = reads.run_summaries(
            caller, eval_id, min(CHART_PAGE, most - len(found)), next_cursor
        )
        found += listed["data"]
        next_cursor = listed.get("next_cursor")
        if not next_cursor:
            break
    return found[:most]


def recent_runs(caller: Caller, eval_id: str) -> list[dict[str, Any]]:
    """Up to :data:`RECENT_RUNS` of the eval's runs, newest first."""
    return runs_after(caller, eval_id, RECENT_RUNS)


def eval_view(
    visit: Visit,
    eval_id: str,
    http_status: int = 200,
    form_error: str = "",
    form: dict[str, str] | None = None,
) -> Response:
    caller = visit.caller
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    table = reads.run_summaries(caller, eval_id, reads.PAGE_SIZE, cursor())
    history = table["data"]
    next_cursor = table.get("next_cursor")
    if next_cursor and len(history) < CHART_RUNS:
        history = history + runs_after(caller, eval_id, CHART_RUNS - len(history), next_cursor)
    return visit.page(
        "eval.html",
        http_status,
        eval=evaluation,
        chart=charts.pass_rate_chart(history),
        charted=len(history),
        table_size=len(table["data"]),
        runs=[figures.run_row(run) for run in table["data"]],
        next_cursor=next_cursor,
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
