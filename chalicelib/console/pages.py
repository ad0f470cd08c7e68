"""The console's read pages: project, eval and item, each a view of API reads (the run
page is :mod:`.run_page`)."""

from __future__ import annotations

from typing import Any

from chalice import Response

from chalicelib.api.auth import Caller
from chalicelib.console import charts, figures, reads, run_page
from chalicelib.console.visit import Visit, bp, html_errors, signed_in
from chalicelib.errors import NotFound, PawlError


def project_picker(visit: Visit) -> Response:
    listed = reads.get(visit.caller, "/api/v1/projects", {"limit": "100"})
    return visit.page("projects.html", projects=listed["data"])


def project_page(visit: Visit) -> Response:
    caller, project_id = visit.caller, visit.project_id
    listed = reads.get(caller, "/api/v1/evals", reads.listing_query(caller, project_id))
    rows = []
    for evaluation in listed["data"]:
        latest = reads.run_summaries(caller, evaluation["id"], charts.SPARK_RUNS)["data"]
        rows.append(
            {
                "eval": evaluation,
                "run": figures.run_row(latest[0]) if latest else None,
                "trend": charts.sparkline(latest),
            }
        )
    return visit.page(
        "project.html",
        evals=rows,
        more=listed.get("next_cursor") is not None,
        in_progress=run_page.runs_in_progress(caller, listed["data"]),
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
    generations = {t["generation_id"]: _generation(caller, t["generation_id"]) for t in trials}
    latencies = {gid: _latency(g) for gid, g in generations.items()}
    return visit.page(
        "item.html",
        eval=evaluation,
        run=run,
        item_id=item_id,
        trials=[figures.trial_view(t) for t in trials],
        latencies=latencies,
        readable={gid for gid, g in generations.items() if g is not None},
    )


def _generation(caller: Caller, generation_id: str | None) -> dict[str, Any] | None:
    """The generation, when the key may read it (else its latency and link are not shown)."""
    if not generation_id:
        return None
    try:
        generation = reads.get(
            caller, "/api/v1/generations/{generation_id}", generation_id=generation_id
        )
    except PawlError:
        return None
    return generation if isinstance(generation, dict) else None


def _latency(generation: dict[str, Any] | None) -> int | None:
    latency = (generation or {}).get("latency_ms")
    return latency if isinstance(latency, int) else None
