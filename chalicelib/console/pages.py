"""The console's read pages: project, eval, run and item, each a view of API reads."""

from __future__ import annotations

from chalice import Response

from chalicelib.api.auth import Caller
from chalicelib.console import charts, figures, reads
from chalicelib.console.visit import Visit, bp, cursor, html_errors, query_value, signed_in
from chalicelib.errors import NotFound, PawlError
from chalicelib.store.results import OUTCOMES


def project_picker(visit: Visit) -> Response:
    listed = reads.get(visit.caller, "/api/v1/projects", {"limit": "100"})
    return visit.page("projects.html", projects=listed["data"])


def project_page(visit: Visit) -> Response:
    caller, project_id = visit.caller, visit.project_id
    listed = reads.get(caller, "/api/v1/evals", reads.listing_query(caller, project_id))
    rows = []
    for evaluation in listed["data"]:
        latest = reads.get(
            caller,
            "/api/v1/evals/{eval_id}/runs",
            {"limit": str(charts.SPARK_RUNS)},
            eval_id=evaluation["id"],
        )["data"]
        rows.append(
            {
                "eval": evaluation,
                "run": figures.run_row(latest[0]) if latest else None,
                "trend": charts.sparkline(latest),
            }
        )
    return visit.page("project.html", evals=rows, more=listed.get("next_cursor") is not None)


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}", methods=["GET"])
@html_errors
@signed_in
def console_run(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    caller, path = visit.caller, {"eval_id": eval_id, "eval_run_id": eval_run_id}
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    run = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}", **path)
    outcome = query_value("outcome")
    query = reads.listing_query(caller, None, cursor())
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
@html_errors
@signed_in
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
