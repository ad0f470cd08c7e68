"""The compare page: a run against its baseline (or another run of its eval), item by item.

A view of ``GET /api/v1/evals/{eval_id}/runs/{eval_run_id}/comparison`` (a pawl addition),
read through :mod:`.reads` as the signed-in key: the figures, the flipped items with both
outputs side by side and a word diff (:mod:`.diff`), the filters and the pager all are the
API's. ``?with=`` names the other run (the API's ``baseline_run_id``); ``changed``,
``group``, ``scorer`` and ``cursor`` pass through as the API's own query fields, so a bad
one is the API's 400. ``?runs_cursor=`` pages the picker through the eval's runs (the
API's ``list-eval-runs`` cursor), so any run of the eval can be chosen. An item run several
times shows each side's reduced outcome (the one compared) and every trial's output.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from chalice import Response

from chalicelib.console import figures, reads
from chalicelib.console.diff import word_diff
from chalicelib.console.visit import Visit, bp, html_errors, query_value, signed_in

#: Items a compare page shows (each holds two outputs whole).
PAGE_SIZE = 20
#: The fewest a page shows when an item runs several times (see :func:`page_size`).
MIN_PAGE_SIZE = 5
#: Runs the picker lists a page (the API's ``list-eval-runs`` page, followed by cursor).
PICKER_SIZE = 50
#: The page's query fields and the API's names for them.
FILTERS = {"with": "baseline_run_id", "changed": "changed", "group": "group", "scorer": "scorer"}
RUN = "/api/v1/evals/{eval_id}/runs/{eval_run_id}"
COMPARISON = RUN + "/comparison"
KIND_WORDS = {
    "regressed": "regression",
    "improved": "improvement",
    "unchanged": "unchanged",
    "added": "only in this run",
    "removed": "only in the other run",
}


def filters_given() -> dict[str, str]:
    """The page's own filters as given (``with``, ``changed``, ``group``, ``scorer``)."""
    given = {name: query_value(name) for name in FILTERS}
    return {name: value for name, value in given.items() if value is not None}


def page_size(evaluation: dict[str, Any]) -> int:
    """Items a page lists: :data:`PAGE_SIZE`, fewer when the eval runs each item several
    times (every trial's output is shown and read: about ``PAGE_SIZE`` outputs a side)."""
    trials = evaluation.get("trials")
    trials = trials if isinstance(trials, int) and trials > 1 else 1
    return max(MIN_PAGE_SIZE, PAGE_SIZE // trials)


def api_query(
    filters: dict[str, str], cursor: str | None = None, limit: int = PAGE_SIZE
) -> dict[str, str]:
    query = {FILTERS[name]: value for name, value in filters.items()}
    query["limit"] = str(limit)
    if cursor:
        query["cursor"] = cursor
    return query


def last_text(messages: Any) -> str:
    """The last input message's content, cut for a heading line."""
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return ""
    return figures.as_text(messages[-1].get("content"))


def _verdict(score: dict[str, Any]) -> str:
    return "pass" if score.get("passed") else "fail"


def _error_text(error: Any) -> str:
    return figures.as_text(error.get("message")) if isinstance(error, dict) else ""


def _scores_text(scores: Any) -> str:
    return ", ".join(
        f"{key}: {figures.p_value(value.get('score'))} {_verdict(value)}"
        for key, value in sorted((scores or {}).items())
    )


def trial_view(trial: dict[str, Any]) -> dict[str, Any]:
    """One trial of one side: its outcome, output, error and scores, as text."""
    return {
        "trial": trial.get("trial"),
        "outcome": trial.get("outcome") or "unscored",
        "output": trial.get("output") or "",
        "error": _error_text(trial.get("error")),
        "scores": _scores_text(trial.get("scores")),
    }


def side_view(side: dict[str, Any] | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "outcome": side.get("outcome"),
        "output": side.get("output") or "",
        "error": _error_text(side.get("error")),
        "scores": _scores_text(side.get("scores")),
        "trial_count": side.get("trial_count") or 1,
        "reducer": side.get("trial_reducer") or "",
        "flaky": bool(side.get("flaky")),
        "trials": [trial_view(trial) for trial in side.get("trials") or []],
    }


def item_view(item: dict[str, Any]) -> dict[str, Any]:
    """One compared item: both sides and, when both have an output, the word diff."""
    current, baseline = side_view(item.get("current")), side_view(item.get("baseline"))
    segments = None
    if current is not None and baseline is not None:
        segments = word_diff(baseline["output"], current["output"])
    same = segments is not None and all(op == "same" for op, _ in segments)
    return {
        "id": item.get("dataset_item_id"),
        "kind": item.get("kind"),
        "kind_word": KIND_WORDS.get(str(item.get("kind")), str(item.get("kind"))),
        "group": item.get("group"),
        "input": last_text(item.get("input")),
        "expected": figures.as_text(item.get("expected_output")),
        "current": current,
        "baseline": baseline,
        "diff": None if same else segments,
        "same_output": same,
        "several_trials": any(side and side["trial_count"] > 1 for side in (current, baseline)),
    }


def _signed_rank_cell(scorer: dict[str, Any]) -> str:
    """A continuous scorer's mean delta interval and Wilcoxon p; "—" for a 0/1 scorer."""
    test = scorer.get("wilcoxon")
    if not isinstance(test, dict):
        return "—"
    interval = scorer.get("mean_delta_interval") or {}
    low, high = interval.get("low"), interval.get("high")
    bounded = isinstance(low, float) and isinstance(high, float)
    span = f"[{low:+.3f}, {high:+.3f}] " if bounded else ""
    return f"{span}p = {figures.p_value(test.get('p_value'))}"


def figure_rows(comparison: dict[str, Any]) -> dict[str, Any]:
    flipped = comparison.get("flipped") or {}
    groups = (comparison.get("grouping") or {}).get("groups") or {}
    return {
        "delta": figures.signed_percent(comparison.get("pass_rate_delta")),
        "p_value": figures.p_value(comparison.get("p_value")),
        "compared": comparison.get("compared_item_count", 0),
        "regressed": flipped.get("regressed", 0),
        "improved": flipped.get("improved", 0),
        "added": comparison.get("added_item_count", 0),
        "removed": comparison.get("removed_item_count", 0),
        "scorers": [
            {
                "name": name,
                "mean_delta": figures.p_value(scorer.get("mean_delta")),
                "pass_rate_delta": figures.signed_percent(scorer.get("pass_rate_delta")),
                "test": _signed_rank_cell(scorer),
            }
            for name, scorer in sorted((comparison.get("scorers") or {}).items())
            if isinstance(scorer, dict)
        ],
        "groups": [
            {
                "name": name,
                "delta": figures.signed_percent(group.get("pass_rate_delta")),
                "compared": group.get("compared_item_count", 0),
                "regressed": (group.get("flipped") or {}).get("regressed", 0),
                "improved": (group.get("flipped") or {}).get("improved", 0),
                "p_value": figures.p_value(group.get("p_value")),
                "p_adjusted": figures.p_value(group.get("p_value_adjusted")),
            }
            for name, group in sorted(groups.items())
        ],
    }


def picker_runs(visit: Visit, eval_id: str, runs_cursor: str | None) -> dict[str, Any]:
    """A page of the eval's runs for the picker (newest first; ``runs_cursor`` the API's
    cursor of a later page; a forged one is the API's 400) and the next page's cursor."""
    listed = reads.run_summaries(visit.caller, eval_id, PICKER_SIZE, runs_cursor)
    return {
        "rows": [figures.run_row(run) for run in listed["data"]],
        "next_cursor": listed.get("next_cursor"),
    }


def picker_options(
    page: dict[str, Any], run_id: str, chosen: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The picker's runs: the page's but this run, and the chosen one even when it is on
    another page (so the select shows what is compared)."""
    options = [row for row in page["rows"] if row["id"] != run_id]
    if chosen is not None and all(row["id"] != chosen["id"] for row in options):
        options.insert(0, figures.run_row(chosen))
    return options


def picker_links(filters: dict[str, str], runs_cursor: str | None, page: dict[str, Any]) -> Any:
    """The picker's paging links (query strings): older runs (the API's next cursor), and
    back to the newest when the picker shows a later page."""
    older = page["next_cursor"]
    return {
        "older": "?" + urlencode({**filters, "runs_cursor": older}) if older else None,
        "newest": "?" + urlencode(filters) if runs_cursor else None,
    }


@bp.route("/console/evals/{eval_id}/runs/{eval_run_id}/compare", methods=["GET"])
@html_errors
@signed_in
def console_compare(visit: Visit, eval_id: str, eval_run_id: str) -> Response:
    caller, path = visit.caller, {"eval_id": eval_id, "eval_run_id": eval_run_id}
    evaluation = reads.get(caller, "/api/v1/evals/{eval_id}", eval_id=eval_id)
    run = reads.get(caller, "/api/v1/evals/{eval_id}/runs/{eval_run_id}", **path)
    filters, runs_cursor = filters_given(), query_value("runs_cursor")
    picker = picker_runs(visit, eval_id, runs_cursor)
    kept = {**filters, **({"runs_cursor": runs_cursor} if runs_cursor else {})}
    context: dict[str, Any] = {
        "eval": evaluation,
        "run": run,
        "filters": filters,
        "runs_cursor": runs_cursor,
        "picker": picker_links(filters, runs_cursor, picker),
    }
    if (filters.get("with") or run.get("baseline_run_id")) is None:
        runs = picker_options(picker, run["id"], None)
        return visit.page("compare.html", answer=None, runs=runs, **context)
    query = api_query(filters, query_value("cursor"), page_size(evaluation))
    answer = reads.get(caller, COMPARISON, query, **path)
    other = reads.get(caller, RUN, eval_id=eval_id, eval_run_id=answer["baseline_run_id"])
    next_cursor = answer["items"].get("next_cursor")
    return visit.page(
        "compare.html",
        answer=answer,
        other=other,
        runs=picker_options(picker, run["id"], other),
        with_id=answer["baseline_run_id"],
        figures=figure_rows(answer["comparison"]),
        items=[item_view(item) for item in answer["items"]["data"]],
        added=[item_view(item) for item in answer["added"]["data"]],
        removed=[item_view(item) for item in answer["removed"]["data"]],
        json_query=urlencode(query),
        next_query=urlencode({**kept, "cursor": next_cursor}) if next_cursor else None,
        pass_rates=(figures.run_row(run)["pass_rate"], figures.run_row(other)["pass_rate"]),
        **context,
    )
