"""List windows: SOAT's ``limit``/``offset``, ``{data, total, limit, offset}``, and the cursor.

The refusals are swept over every list route of the route table, so a new list cannot
skip them; the semantics (what ``offset`` and ``total`` mean, what a cursor carries) are
checked on lists of each kind: a DynamoDB partition, a run's results (counted by the run's
counters) and a list held in memory.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from chalicelib import ids, wiring
from chalicelib.api import routing
from chalicelib.domain.base import Page
from chalicelib.store.pagination import MAX_OFFSET
from tests.support.runs import Plugins, make_item, make_suite

DATASETS = "/api/v1/datasets"
QUESTION = [{"role": "user", "content": "q"}]


def _list_routes() -> list[routing.RouteSpec]:
    wiring.blueprints()  # loading the blueprints declares every route
    return [r for r in routing.ROUTES if r.surface == "v1" and r.method == "GET" and _is_page(r)]


def _is_page(route: routing.RouteSpec) -> bool:
    return isinstance(route.response, type) and issubclass(route.response, Page)


#: Lists whose parent is named in the query, not the path: the parameter and its id kind.
PARENT_QUERIES = {"/api/v1/webhook-deliveries": ("webhook_id", "webhook")}


def _concrete(path: str) -> str:
    """The route's path with a well-formed (missing) id in each parameter, and in the
    query parameter naming its parent where the parent is not in the path; callers join
    their own query with ``&`` when the answer already holds a ``?``."""

    def fill(match: re.Match[str]) -> str:
        kind = ids.PATH_PARAMETER_KINDS.get(match.group(1))
        return ids.new_id(kind) if kind else "1"

    concrete = re.sub(r"{(\w+)}", fill, path)
    if path in PARENT_QUERIES:
        name, kind = PARENT_QUERIES[path]
        concrete += f"?{name}={ids.new_id(kind)}"
    return concrete


def _with(path: str, query: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}{query}"


def test_every_list_route_takes_a_list_query() -> None:
    routes = _list_routes()
    assert len(routes) >= 18
    for route in routes:
        assert issubclass(route.query, routing.ListQuery), route.path


REFUSED = [
    (f"offset={MAX_OFFSET + 1}", "offset", "cursor"),
    ("offset=1&cursor=abc", "offset", "cursor"),
    ("offset=0&cursor=abc", "offset", "cursor"),
    ("offset=-1", "offset", ""),
    ("offset=two", "offset", ""),
    ("limit=0", "limit", ""),
    ("page=2", "page", "unknown"),
]


@pytest.mark.parametrize(("query", "field", "says"), REFUSED)
def test_every_list_route_refuses_a_bad_window(api: Any, query: str, field: str, says: str) -> None:
    # The query is checked before the handler reads anything: the ids need not exist.
    routes = _list_routes()
    for route in routes:
        response = api.get(_with(_concrete(route.path), query))
        assert response.status == 400, (route.path, response)
        error = response.json["error"]
        assert error["meta"]["field"] == field, (route.path, error)
        assert says in error["message"], (route.path, error)
    print(f"{len(routes)} list routes refuse ?{query}")


def _items(api: Any, dataset_id: str, query: str) -> dict[str, Any]:
    response = api.get(f"{DATASETS}/{dataset_id}/items?{query}")
    assert response.status == 200, response
    return dict(response.json)


def test_offset_total_and_the_cursor_agree(api: Any, project: dict[str, Any]) -> None:
    dataset = api.post(DATASETS, {"project_id": project["id"], "name": "d"}).json
    created = [make_item(api, dataset["id"], f"q{n}")["id"] for n in range(7)]

    first = _items(api, dataset["id"], "limit=3")
    assert [i["id"] for i in first["data"]] == created[:3]
    assert (first["total"], first["limit"], first["offset"]) == (7, 3, 0)

    middle = _items(api, dataset["id"], "limit=3&offset=2")
    assert [i["id"] for i in middle["data"]] == created[2:5]
    assert (middle["total"], middle["offset"]) == (7, 2)

    # The cursor carries the position and the total counted when the listing began.
    make_item(api, dataset["id"], "late")
    after = _items(api, dataset["id"], f"limit=3&cursor={middle['next_cursor']}")
    assert [i["id"] for i in after["data"]] == [*created[5:7], after["data"][2]["id"]]
    assert (after["total"], after["offset"]) == (7, 5)
    recounted = _items(api, dataset["id"], "limit=1")
    assert recounted["total"] == 8

    past_the_end = _items(api, dataset["id"], "offset=40")
    assert past_the_end["data"] == [] and past_the_end["next_cursor"] is None
    assert (past_the_end["total"], past_the_end["offset"]) == (8, 40)
    last = _items(api, dataset["id"], "limit=3&offset=6")
    assert len(last["data"]) == 2 and last["next_cursor"] is None


def test_runs_and_results_windows(api: Any, project: dict[str, Any], plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b"), ("echo:c", "c")])
    runs = [api.post(suite.runs_path, {"wait": True}).json["id"] for _ in range(3)]
    newest_first = api.get(f"{suite.runs_path}?limit=1&offset=1").json
    assert [r["id"] for r in newest_first["data"]] == [runs[1]]
    assert (newest_first["total"], newest_first["offset"]) == (3, 1)

    results = api.get(f"{suite.run_path(runs[0])}/results?limit=1&offset=1").json
    # total is the run's completed + errored count: no COUNT query over the results.
    assert (results["total"], results["offset"], len(results["data"])) == (3, 1, 1)
    more = api.get(f"{suite.run_path(runs[0])}/results?cursor={results['next_cursor']}").json
    assert (more["total"], more["offset"], len(more["data"])) == (3, 2, 1)
    assert more["data"][0]["id"] != results["data"][0]["id"] and more["next_cursor"] is None


def test_a_list_held_in_memory_pages_the_same_way(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    own = api.as_key(project_key)
    mine = own.get("/api/v1/projects").json
    assert [p["id"] for p in mine["data"]] == [project["id"]]
    assert (mine["total"], mine["limit"], mine["offset"], mine["next_cursor"]) == (1, 50, 0, None)
    skipped = own.get("/api/v1/projects?offset=1").json
    assert skipped["data"] == [] and skipped["total"] == 1

    for name in ("a", "b", "c"):
        api.post("/api/v1/projects", {"name": name})
    first = api.get("/api/v1/projects?limit=2").json  # the admin's: a table scan
    rest = api.get(f"/api/v1/projects?limit=2&cursor={first['next_cursor']}").json
    assert first["total"] == rest["total"] == 4 and rest["offset"] == 2
    assert len({p["id"] for p in first["data"] + rest["data"]}) == 4
