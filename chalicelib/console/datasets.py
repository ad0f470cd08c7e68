"""The console's dataset page and an item's history across an eval's runs, each a view
of API reads (:mod:`chalicelib.console.reads`) made as the signed-in key."""

from __future__ import annotations

from typing import Any

from chalice import Response

from chalicelib.api.auth import Caller
from chalicelib.console import figures, reads
from chalicelib.console.visit import Visit, bp, cursor, html_errors, query_value, signed_in
from chalicelib.errors import PawlError

#: How many of an eval's runs an item's history reads (newest first): one keyed range of
#: each run's results (``list-eval-results?dataset_item_id=``) per run.
HISTORY_RUNS = 50


@bp.route("/console/datasets/{dataset_id}", methods=["GET"])
@html_errors
@signed_in
def console_dataset(visit: Visit, dataset_id: str) -> Response:
    """A dataset's items, paged on the server, searched by the API's ``?q=``; opened from
    an eval (``?eval_id=``), each item links to its history across that eval's runs."""
    caller = visit.caller
    dataset = reads.get(caller, "/api/v1/datasets/{dataset_id}", dataset_id=dataset_id)
    evaluation = _eval_of_dataset(caller, query_value("eval_id"), dataset_id)
    text = query_value("q")
    query = reads.listing_query(caller, None, cursor())
    if text is not None:
        query["q"] = text  # the API's own filter: an over-long text is its 400
    items = reads.get(caller, "/api/v1/datasets/{dataset_id}/items", query, dataset_id=dataset_id)
    readable = _readable_generations(caller, items["data"])
    return visit.page(
        "dataset.html",
        dataset=dataset,
        eval=evaluation,
        items=[item_row(item, readable) for item in items["data"]],
        total=items.get("total"),
        next_cursor=items.get("next_cursor"),
        q=text,
    )


def _eval_of_dataset(caller: Caller, eval_id: str | None, dataset_id: str) -> Any:
    """The eval the page was opened from, read as the key (its 404 if it may not), when it
    binds this dataset; else None (no history links)."""
    if eval_id is None:
        return None
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    return evaluation if evaluation.get("dataset_id") == dataset_id else None


def _readable_generations(caller: Caller, items: list[dict[str, Any]]) -> set[str]:
    """The source generations of ``items`` the key may read (only those are linked)."""
    readable = set()
    sources = {str(i["source_generation_id"]) for i in items if i.get("source_generation_id")}
    for generation_id in sources:
        try:
            reads.get(caller, "/api/v1/generations/{generation_id}", generation_id=generation_id)
        except PawlError:
            continue
        readable.add(generation_id)
    return readable


def item_row(item: dict[str, Any], readable: set[str]) -> dict[str, Any]:
    """One dataset item for the table: its last input message, expected output, metadata
    and source generation (linked only when readable), all as text."""
    inputs = [m for m in item.get("input") or [] if isinstance(m, dict)]
    source = item.get("source_generation_id")
    return {
        "id": item.get("id"),
        "input": figures.as_text(inputs[-1].get("content") if inputs else None),
        "messages": len(inputs),
        "expected": figures.as_text(item.get("expected_output")),
        "metadata": figures.metadata_text(item.get("metadata")),
        "source_generation_id": source,
        "source_readable": source in readable,
    }


@bp.route("/console/evals/{eval_id}/items/{item_id}", methods=["GET"])
@html_errors
@signed_in
def console_item_history(visit: Visit, eval_id: str, item_id: str) -> Response:
    """One dataset item across the eval's last :data:`HISTORY_RUNS` runs, newest first."""
    caller = visit.caller
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    runs = reads.run_summaries(caller, eval_id, HISTORY_RUNS)["data"]
    rows = [history_row(run, _trials(caller, eval_id, run["id"], item_id)) for run in runs]
    return visit.page(
        "history.html",
        eval=evaluation,
        item_id=item_id,
        rows=rows,
        summary=history_summary(rows),
        capped=len(runs) == HISTORY_RUNS,
        history_runs=HISTORY_RUNS,
    )


def _trials(caller: Caller, eval_id: str, run_id: str, item_id: str) -> list[dict[str, Any]]:
    query = {"dataset_item_id": item_id, "limit": "100"}
    path = "/api/v1/evals/{eval_id}/runs/{eval_run_id}/results"
    return list(reads.get(caller, path, query, eval_id=eval_id, eval_run_id=run_id)["data"])


def run_outcome(outcomes: list[str]) -> str:
    """One run's outcome for an item from its trials': every trial alike is that outcome,
    trials that differ are ``mixed``, no trial is ``absent`` (not in that run)."""
    if not outcomes:
        return "absent"
    distinct = set(outcomes)
    return outcomes[0] if len(distinct) == 1 else "mixed"


def history_row(run: dict[str, Any], trials: list[dict[str, Any]]) -> dict[str, Any]:
    outcomes = [figures.outcome(t) for t in trials]
    return {"run": figures.run_row(run), "outcome": run_outcome(outcomes), "trials": outcomes}


def history_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How the item fared: counts per outcome over the runs it was in, and ``flaky`` when
    it both passed and failed (or errored, or had mixed trials) across them."""
    seen = [row["outcome"] for row in rows if row["outcome"] != "absent"]
    counts = {name: seen.count(name) for name in ("passed", "failed", "errored", "mixed")}
    flaky = counts["mixed"] > 0 or (
        counts["passed"] > 0 and counts["failed"] + counts["errored"] > 0
    )
    return {"runs": len(seen), "counts": counts, "flaky": flaky}
