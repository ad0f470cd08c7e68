"""A cursor a client made, changed or carried over from another list is a 400 before
anything is read, on every list route; ``total`` is always pawl's own count."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.api.test_list_windows import _concrete, _list_routes
from tests.support.runs import make_item

DATASETS = "/api/v1/datasets"


def _payload(cursor: str) -> dict[str, Any]:
    raw = cursor.partition(".")[0]
    return dict(json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))))


def _pack(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _refused(response: Any) -> None:
    assert response.status == 400, response
    error = response.json["error"]
    assert (error["code"], error["meta"]["field"]) == ("VALIDATION_FAILED", "cursor"), error


def _datasets(api: Any, project_id: str, n: int) -> None:
    for k in range(n):
        assert api.post(DATASETS, {"project_id": project_id, "name": f"d{k}"}).status == 201


def test_a_changed_or_forged_cursor_is_400(api: Any, project: dict[str, Any]) -> None:
    _datasets(api, project["id"], 3)
    listed = f"{DATASETS}?limit=1&project_id={project['id']}"
    first = api.get(listed).json
    cursor = first["next_cursor"]
    payload, _, mac = cursor.partition(".")
    value = _payload(cursor)
    key_name = next(iter(value["k"]))
    numeric_key = {**value, "k": {**value["k"], key_name: {"S": 12345}}}
    forged = [
        _pack(numeric_key),  # the finding: a key of the wrong type, which answered 500
        f"{_pack(numeric_key)}.{mac}",
        f"{_pack({**value, 't': 10**30})}.{mac}",  # a total of the client's choosing
        _pack({**value, "t": 10**30}),
        f"{_pack({**value, 'o': 5000})}.{mac}",
        f"{payload}.{mac[::-1]}",
        payload,
        f"{payload}.",
        f"{payload}x.{mac}",
        "e30",  # {} unsigned
    ]
    for bad in forged:
        _refused(api.get(f"{listed}&cursor={bad}"))
    second = api.get(f"{listed}&cursor={cursor}").json
    assert (second["total"], second["offset"]) == (3, 1)


def test_a_cursor_of_another_list_or_project_is_400(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    _datasets(api, project["id"], 2)
    _datasets(api, other["id"], 2)
    one = api.get(f"{DATASETS}?limit=1&project_id={project['id']}").json["next_cursor"]
    # The same list shape (a project's datasets), another project: refused for the admin too.
    _refused(api.get(f"{DATASETS}?limit=1&project_id={other['id']}&cursor={one}"))
    # Another project's key carrying this project's cursor.
    foreign = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "o"}).json["key"]
    _refused(api.as_key(foreign).get(f"{DATASETS}?limit=1&cursor={one}"))
    assert api.as_key(project_key).get(f"{DATASETS}?limit=1&cursor={one}").status == 200
    # Another list altogether: a dataset's items.
    dataset_id = api.get(f"{DATASETS}?limit=1&project_id={project['id']}").json["data"][0]["id"]
    for n in range(2):
        make_item(api, dataset_id, f"q{n}")
    items = api.get(f"{DATASETS}/{dataset_id}/items?limit=1").json["next_cursor"]
    _refused(api.get(f"{DATASETS}?limit=1&project_id={project['id']}&cursor={items}"))
    _refused(api.get(f"/api/v1/agents?project_id={project['id']}&cursor={one}"))


def test_every_list_route_refuses_a_forged_cursor(api: Any, project: dict[str, Any]) -> None:
    # The finding's cursor: a project list's key with a number where created_key's text goes.
    key = {"id": {"S": "dset_x"}, "project_id": {"S": project["id"]}, "created_key": {"S": 5}}
    forged = _pack({"k": key, "o": 0, "t": 10**30})
    routes = _list_routes()
    for route in routes:
        path = _concrete(route.path)
        joiner = "&" if "?" in path else "?"
        response = api.get(f"{path}{joiner}project_id={project['id']}&cursor={forged}")
        # A route whose parent is missing may answer 404 first; it never reads the cursor's key.
        assert response.status in (400, 404), (route.path, response)
        if response.status == 400:
            assert response.json["error"]["meta"].get("field") in ("cursor", "project_id"), (
                route.path,
                response,
            )
    print(f"{len(routes)} list routes refuse a forged cursor")
