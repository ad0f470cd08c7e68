"""What a console page reads: the API's own routes, called as the signed-in key.

Each read goes through :func:`chalicelib.api.routing.dispatch`, the path every REST
request takes after authentication: the route's IAM action and denial shape, its query
model, the handler's tenancy checks. So a page shows exactly what the key's API calls
would answer, and a resource it may not read raises the API's 404 (``NotFound``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from chalicelib.api import routing
from chalicelib.api.auth import Caller

#: How many rows a console table shows per page (the API's own maximum is 100).
PAGE_SIZE = 50
#: An eval's runs list.
RUNS = "/api/v1/evals/{eval_id}/runs"


def as_json(result: Any) -> Any:
    if isinstance(result, routing.Reply):
        return as_json(result.body)
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    return result


def get(
    caller: Caller, path_template: str, query: dict[str, str] | None = None, /, **path: str
) -> Any:
    """The JSON the API answers ``GET path_template`` (with ``path`` filled in) as ``caller``."""
    spec = routing.route("GET", path_template)
    return as_json(routing.dispatch(spec, caller, dict(path), query or {}))


def listing_query(
    caller: Caller, project_id: str | None, cursor: str | None = None, limit: int | None = None
) -> dict[str, str]:
    """A list's query: the admin names the project it picked; a project key lists its own."""
    query = {"limit": str(PAGE_SIZE if limit is None else limit)}
    if caller.is_admin and project_id:
        query["project_id"] = project_id
    if cursor:
        query["cursor"] = cursor
    return query


def run_summaries(
    caller: Caller, eval_id: str, limit: int, cursor: str | None = None
) -> dict[str, Any]:
    """A page of the eval's runs, newest first, as ``list-eval-runs?view=summary`` answers
    it (each run whole but for ``aggregate_scores``: its headline figures, what a runs
    table, a chart and a progress row show)."""
    query = {"limit": str(limit), "view": "summary", **({"cursor": cursor} if cursor else {})}
    listed: dict[str, Any] = get(caller, RUNS, query, eval_id=eval_id)
    return listed
