"""The run page (filters, sort, per-group plot, flaky items, usage by source) and its live
progress: ``progress.json``, which the console's own script polls while the run is queued
or running, and the project page's runs in progress.

Everything is read through :mod:`chalicelib.console.reads` as the signed-in key, so the
page and its JSON authorize exactly as the API's get-eval-run and list-eval-results do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from chalice import Response

from chalicelib.api.auth import Caller
from chalicelib.console import figures, reads, responses, run_charts
from chalicelib.console.trial_figures import trial_figures
from chalicelib.console.v2runs import v2_view
from chalicelib.console.visit import (
    Visit,
    bp,
    cursor,
    html_errors,
    query_value,
    request_headers,
    signed_in,
    visit_of,
)
from chalicelib.errors import PawlError, ValidationFailed
from chalicelib.store.result_refine import REFINED_OUTCOMES

#: The query fields the page passes through to list-eval-results (each a pawl addition).
FILTER_FIELDS = ("outcome", "group", "scorer", "min_score", "max_score", "text", "sort")
SORTS = {"score_desc": "score, high to low", "score_asc": "score, low to high"}
RUN_PATH = "/api/v1/evals/{eval_id}/runs/{eval_run_id}"
RESULTS_PATH = RUN_PATH + "/results"
#: The most recorded results a poll counts the passed ones of, for a run without its
#: ``passed_count`` counter (see :func:`passed_so_far`).
PASS_RATE_SO_FAR_MAX_RESULTS = 2000
#: The most flaky items the page lists (one page of the API's flaky filter).
FLAKY_LIMIT = 100
#: The biggest run whose flaky items the page lists itself: ``outcome=flaky`` reads the
#: whole run, so a bigger run's page shows the count and links to the filter instead.
FLAKY_LIST_MAX_RESULTS = 5000


def progress_url(eval_id: str, run_id: str) -> str:
    return f"/console/evals/{eval_id}/runs/{run_id}/progress.json"


def passed_so_far(caller: Caller, run: dict[str, Any]) -> int | None:
    """While a run is in progress: how many results passed. The run's own ``passed_count``
    (a counter on its row, kept by the transaction that records the results: free at any
    size). A run recorded before the counters has none (null): then the API's
    ``outcome=passed`` total, one COUNT query billed on every row of the run, read only up
    to :data:`PASS_RATE_SO_FAR_MAX_RESULTS` recorded results (None past it): a poll every
    2 s must not read a big run whole."""
    if run.get("status") not in figures.IN_PROGRESS:
        return None
    counted = run.get("passed_count")
    if isinstance(counted, int):
        return counted
    recorded = int(run.get("completed_count") or 0) + int(run.get("errored_count") or 0)
    if recorded > PASS_RATE_SO_FAR_MAX_RESULTS:
        return None
    path = {"eval_id": run["eval_id"], "eval_run_id": run["id"]}
    listed = reads.get(caller, RESULTS_PATH, {"outcome": "passed", "limit": "1"}, **path)
    total = listed.get("total")
    return total if isinstance(total, int) else None


def _filters() -> dict[str, str]:
    return {name: value for name in FILTER_FIELDS if (value := query_value(name)) is not None}


def _results(caller: Caller, path: dict[str, str], chosen: dict[str, str]) -> dict[str, Any]:
    query = {**reads.listing_query(caller, None, cursor()), **chosen}
    return reads.get(caller, RESULTS_PATH, query, **path)  # a bad filter: the API's 400


def _flaky_items(caller: Caller, run: dict[str, Any], path: dict[str, str]) -> list[dict[str, Any]]:
    """The items whose trials disagree, each with its trials' outcomes in order; none read
    past :data:`FLAKY_LIST_MAX_RESULTS` results (the page links to ``?outcome=flaky``)."""
    if not (run.get("aggregate_scores") or {}).get("flaky_item_count"):
        return []
    if int(run.get("completed_count") or 0) > FLAKY_LIST_MAX_RESULTS:
        return []
    query = {"outcome": "flaky", "limit": str(FLAKY_LIMIT)}
    trials = reads.get(caller, RESULTS_PATH, query, **path)["data"]
    items: dict[str, list[str]] = {}
    for trial in trials:
        if trial.get("dataset_item_id"):
            items.setdefault(trial["dataset_item_id"], []).append(figures.outcome(trial))
    return [{"id": item_id, "trials": ", ".join(seen)} for item_id, seen in items.items()]


def _usage_by_source(visit: Visit, run_id: str) -> list[dict[str, str]] | None:
    """The run's usage by source from the usage API; None when the key may not read usage."""
    query = {"group_by": "source", "eval_run_id": run_id}
    if visit.caller.is_admin and visit.project_id:
        query["project_id"] = visit.project_id
    try:
        return figures.usage_rows(reads.get(visit.caller, "/api/v1/usage/aggregate", query))
    except PawlError:
        return None


def _choices(evaluation: dict[str, Any], run: dict[str, Any]) -> dict[str, list[str]]:
    aggregate = run.get("aggregate_scores") or {}
    scorers = sorted((aggregate.get("scorers") or {}).keys()) or sorted(
        {str(s.get("name") or s.get("type")) for s in evaluation.get("scorers") or []}
    )
    groups = sorted(((aggregate.get("grouping") or {}).get("groups") or {}).keys())
    return {"scorers": scorers, "groups": groups}


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}", methods=["GET"])
@html_errors
@signed_in
def console_run(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    caller, path = visit.caller, {"eval_id": eval_id, "eval_run_id": eval_run_id}
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    run = reads.get(caller, RUN_PATH, **path)
    chosen, refusal, status = _filters(), None, 200
    try:
        results = _results(caller, path, chosen)
    except ValidationFailed as exc:
        results, refusal, status = {"data": [], "total": None}, exc.message, 400
    return visit.page(
        "run.html",
        status,
        eval=evaluation,
        run=run,
        row=figures.run_row(run),
        progress=figures.progress(run, passed_so_far(caller, run)),
        live=run["status"] in figures.IN_PROGRESS,
        progress_url=progress_url(eval_id, eval_run_id),
        scorers=figures.scorer_rows(run),
        trials=trial_figures(run),
        reasons=[figures.reason_text(r) for r in run.get("verdict_reasons") or []],
        detectable=figures.detectable_text(run),
        stopped=figures.early_stop_text(run),
        plot=run_charts.group_plot(run.get("aggregate_scores")),
        flaky=_flaky_items(caller, run, path),
        flaky_count=(run.get("aggregate_scores") or {}).get("flaky_item_count") or 0,
        usage=_usage_by_source(visit, eval_run_id),
        results=[figures.result_row(result) for result in results["data"]],
        total=results.get("total"),
        next_cursor=results.get("next_cursor"),
        refusal=refusal,
        chosen=chosen,
        form={name: chosen.get(name, "") for name in FILTER_FIELDS},
        filter_query=urlencode(chosen),
        outcome=chosen.get("outcome"),
        outcomes=REFINED_OUTCOMES,
        sorts=SORTS,
        choices=_choices(evaluation, run),
        v2=v2_view(caller, eval_run_id),
    )


def json_errors(view: Callable[..., Response]) -> Callable[..., Response]:
    """A console JSON answer: signed out 401, a refusal the API's status and envelope."""

    @functools.wraps(view)
    def answer(**path: str) -> Response:
        visit = visit_of(request_headers())
        if visit is None:
            body = {"error": {"code": "UNAUTHORIZED", "message": "sign in to the console"}}
            return responses.json_answer(body, 401)
        try:
            return view(visit, **path)
        except PawlError as exc:
            error = {"code": exc.code, "message": exc.message, "meta": exc.meta}
            return responses.json_answer({"error": error}, exc.status)

    return answer


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}/progress.json", methods=["GET"])
@html_errors
@json_errors
def console_run_progress(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    """The run's progress as JSON, for the page's script. It does not re-issue the session
    cookie: a tab left polling is not a user using the console (idle expiry still holds)."""
    run = reads.get(visit.caller, RUN_PATH, eval_id=eval_id, eval_run_id=eval_run_id)
    return responses.json_answer(figures.progress(run, passed_so_far(visit.caller, run)))


def runs_in_progress(caller: Caller, evaluations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queued or running runs of these evals (the newest 10 runs of each are looked at),
    each with its progress and the URL its row polls."""
    rows = []
    for evaluation in evaluations:
        listed = reads.run_summaries(caller, evaluation["id"], 10)["data"]
        for run in listed:
            if run.get("status") in figures.IN_PROGRESS:
                rows.append(
                    {
                        "eval": evaluation,
                        "run": run,
                        "progress": figures.progress(run, passed_so_far(caller, run)),
                        "url": progress_url(evaluation["id"], run["id"]),
                    }
                )
    return rows
