"""Datasets and dataset items: routes, refusals, tenancy, pagination, repository functions."""

from __future__ import annotations

from typing import Any

import pytest

DATASETS = "/api/v1/datasets"
QUESTION = [{"role": "user", "content": "When is my invoice issued?"}]


def _dataset(api: Any, project: dict[str, Any], name: str = "billing", **extra: Any) -> Any:
    response = api.post(DATASETS, {"project_id": project["id"], "name": name, **extra})
    assert response.status == 201, response
    return response.json


def _item(api: Any, dataset_id: str, **body: Any) -> Any:
    response = api.post(f"{DATASETS}/{dataset_id}/items", {"input": QUESTION, **body})
    assert response.status == 201, response
    return response.json


def _field(response: Any) -> str:
    return str(response.json["error"]["meta"]["field"])


def test_dataset_crud(api: Any, project: dict[str, Any]) -> None:
    created = _dataset(api, project, description="Q2 regressions")
    assert created["id"].startswith("dset_") and created["project_id"] == project["id"]
    assert created["description"] == "Q2 regressions" and created["created_at"].endswith("Z")
    assert api.get(f"{DATASETS}/{created['id']}").json == created
    listed = api.get(f"{DATASETS}?project_id={project['id']}")
    assert [d["id"] for d in listed.json["data"]] == [created["id"]]

    renamed = api.put(f"{DATASETS}/{created['id']}", {"name": "billing-v2"})
    assert renamed.status == 200 and renamed.json["name"] == "billing-v2"
    assert renamed.json["description"] == "Q2 regressions"
    cleared = api.put(f"{DATASETS}/{created['id']}", {"description": None})
    assert cleared.json["description"] is None and cleared.json["name"] == "billing-v2"
    # The old name was released by the rename.
    _dataset(api, project, name="billing")

    assert api.delete(f"{DATASETS}/{created['id']}").status == 204
    assert api.get(f"{DATASETS}/{created['id']}").code == "RESOURCE_NOT_FOUND"
    assert api.delete(f"{DATASETS}/{created['id']}").status == 404
    _dataset(api, project, name="billing-v2")  # the deleted dataset's name is free again


def test_dataset_name_conflicts_write_nothing(api: Any, project: dict[str, Any]) -> None:
    first = _dataset(api, project, name="a")
    second = _dataset(api, project, name="b")
    again = api.post(DATASETS, {"project_id": project["id"], "name": "a"})
    assert again.status == 409 and again.code == "NAME_CONFLICT"
    rename = api.put(f"{DATASETS}/{second['id']}", {"name": "a"})
    assert rename.status == 409 and rename.code == "NAME_CONFLICT"
    names = [d["name"] for d in api.get(f"{DATASETS}?project_id={project['id']}").json["data"]]
    assert names == ["a", "b"]
    assert api.get(f"{DATASETS}/{first['id']}").json["name"] == "a"


def test_same_name_allowed_in_another_project(api: Any, project: dict[str, Any]) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    _dataset(api, project, name="shared")
    _dataset(api, other, name="shared")


REFUSED_DATASETS = [
    ({"name": ""}, "name"),
    ({"name": "x", "colour": "red"}, "colour"),
    ({"name": 5}, "name"),
    ({"name": "x", "description": 7}, "description"),
]


def test_dataset_body_refusals(api: Any, project: dict[str, Any]) -> None:
    for body, field in REFUSED_DATASETS:
        response = api.post(DATASETS, {"project_id": project["id"], **body})
        assert response.status == 400 and response.code == "VALIDATION_FAILED", body
        assert _field(response) == field, body
    assert api.get(f"{DATASETS}?project_id={project['id']}").json["data"] == []


def test_dataset_update_refusals(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    null_name = api.put(f"{DATASETS}/{dataset['id']}", {"name": None})
    assert null_name.status == 400 and _field(null_name) == "name"
    unknown = api.put(f"{DATASETS}/{dataset['id']}", {"project_id": "proj_x"})
    assert unknown.status == 400 and _field(unknown) == "project_id"
    assert api.get(f"{DATASETS}/{dataset['id']}").json == dataset


def test_admin_must_name_an_existing_project(api: Any, project: dict[str, Any]) -> None:
    missing = api.post(DATASETS, {"name": "x"})
    assert missing.status == 400 and _field(missing) == "project_id"
    unknown = api.post(DATASETS, {"project_id": "proj_doesnotexist0000", "name": "x"})
    assert unknown.status == 404


def test_tenancy_of_datasets(api: Any, project: dict[str, Any], project_key: str) -> None:
    scoped = api.as_key(project_key)
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = _dataset(api, other, name="foreign")
    foreign_item = _item(api, foreign["id"])
    # A scoped key creates in its own project without naming it.
    own = scoped.post(DATASETS, {"name": "mine"})
    assert own.status == 201 and own.json["project_id"] == project["id"]
    assert [d["id"] for d in scoped.get(DATASETS).json["data"]] == [own.json["id"]]

    named_other = scoped.post(DATASETS, {"project_id": other["id"], "name": "x"})
    assert named_other.status == 403 and named_other.code == "API_KEY_PROJECT_SCOPE"
    listing = scoped.get(f"{DATASETS}?project_id={other['id']}")
    assert listing.status == 403 and listing.code == "API_KEY_PROJECT_SCOPE"

    paths = [
        f"{DATASETS}/{foreign['id']}",
        f"{DATASETS}/{foreign['id']}/items",
        f"{DATASETS}/{foreign['id']}/items/{foreign_item['id']}",
    ]
    for path in paths:
        hidden = scoped.get(path)
        assert hidden.status == 404 and hidden.code == "RESOURCE_NOT_FOUND", path
    assert scoped.put(paths[0], {"name": "stolen"}).status == 404
    assert scoped.post(paths[1], {"input": QUESTION}).status == 404
    assert scoped.put(paths[2], {"expected_output": "x"}).status == 404
    assert scoped.delete(paths[2]).status == 404
    assert scoped.delete(paths[0]).status == 404
    assert api.get(paths[0]).json == foreign
    assert api.get(paths[2]).json == foreign_item
    assert len(api.get(paths[1]).json["data"]) == 1

    assert api.as_key(None).get(f"{DATASETS}/{foreign['id']}").status == 401
    assert api.as_key("pawl.key_nope.secret").post(DATASETS, {"name": "x"}).status == 401


def test_item_crud(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    base = f"{DATASETS}/{dataset['id']}/items"
    item = _item(api, dataset["id"])
    assert item["id"].startswith("dsit_") and item["dataset_id"] == dataset["id"]
    assert item["input"] == QUESTION and item["expected_output"] is None
    assert item["metadata"] == {} and item["source_generation_id"] is None
    assert api.get(f"{base}/{item['id']}").json == item

    updated = api.put(
        f"{base}/{item['id']}", {"expected_output": "On the 1st.", "metadata": {"topic": "b"}}
    )
    assert updated.status == 200
    assert updated.json["expected_output"] == "On the 1st."
    assert updated.json["metadata"] == {"topic": "b"} and updated.json["input"] == QUESTION
    new_input = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    replaced = api.put(f"{base}/{item['id']}", {"input": new_input, "expected_output": None})
    assert replaced.json["input"] == new_input and replaced.json["expected_output"] is None
    assert replaced.json["metadata"] == {"topic": "b"}
    reset = api.put(f"{base}/{item['id']}", {"metadata": None})
    assert reset.json["metadata"] == {}
    assert api.get(f"{base}/{item['id']}").json == reset.json

    assert api.delete(f"{base}/{item['id']}").status == 204
    assert api.get(f"{base}/{item['id']}").status == 404
    assert api.delete(f"{base}/{item['id']}").status == 404
    assert api.put(f"{base}/{item['id']}", {"metadata": {}}).status == 404
    assert api.get(base).json["data"] == []


REFUSED_ITEMS = [
    ({"input": []}, "input"),
    ({}, "input"),
    ({"input": "hello"}, "input"),
    (
        {"input": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]},
        "input.1.role",
    ),
    ({"input": [{"role": "user"}]}, "input.0.content"),
    ({"input": [{"role": "user", "content": 3}]}, "input.0.content"),
    ({"input": [{"role": "user", "content": "a", "name": "x"}]}, "input.0.name"),
    ({"input": QUESTION, "expected_output": 4}, "expected_output"),
    ({"input": QUESTION, "metadata": [1]}, "metadata"),
    ({"input": QUESTION, "source_generation_id": "gen_x"}, "source_generation_id"),
]


def test_item_refusals_name_the_field(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    for body, field in REFUSED_ITEMS:
        response = api.post(f"{DATASETS}/{dataset['id']}/items", body)
        assert response.status == 400 and response.code == "VALIDATION_FAILED", body
        assert _field(response) == field, body
    assert api.get(f"{DATASETS}/{dataset['id']}/items").json["data"] == []


def test_item_update_refusals_write_nothing(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    item = _item(api, dataset["id"], expected_output="x")
    path = f"{DATASETS}/{dataset['id']}/items/{item['id']}"
    for body, field in [
        ({"input": None}, "input"),
        ({"input": []}, "input"),
        (
            {"input": [{"role": "user", "content": "a"}, {"role": "x", "content": "b"}]},
            "input.1.role",
        ),
        ({"dataset_id": "dset_other"}, "dataset_id"),
    ]:
        response = api.put(path, body)
        assert response.status == 400 and _field(response) == field, body
    assert api.get(path).json == item


def test_item_too_large_is_refused(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    big = [{"role": "user", "content": "x" * 360_000}]
    response = api.post(f"{DATASETS}/{dataset['id']}/items", {"input": big})
    assert response.status == 400 and response.json["error"]["meta"]["field"] == "input.0.content"
    assert response.json["error"]["meta"]["size_bytes"] > 350_000
    assert api.get(f"{DATASETS}/{dataset['id']}/items").json["data"] == []


def test_item_of_another_dataset_is_missing(api: Any, project: dict[str, Any]) -> None:
    first = _dataset(api, project, name="one")
    second = _dataset(api, project, name="two")
    item = _item(api, first["id"])
    wrong = f"{DATASETS}/{second['id']}/items/{item['id']}"
    assert api.get(wrong).status == 404
    assert api.put(wrong, {"expected_output": "x"}).status == 404
    assert api.delete(wrong).status == 404
    assert api.get(f"{DATASETS}/{first['id']}/items/{item['id']}").json == item
    assert api.post(f"{DATASETS}/dset_doesnotexist0000/items", {"input": QUESTION}).status == 404


def test_items_paginate_oldest_first(api: Any, project: dict[str, Any]) -> None:
    dataset = _dataset(api, project)
    created = [_item(api, dataset["id"], metadata={"n": n})["id"] for n in range(7)]
    # An update does not move an item in the order.
    items = f"{DATASETS}/{dataset['id']}/items"
    assert api.put(f"{items}/{created[0]}", {"expected_output": "x"}).status == 200
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = f"?limit=3&cursor={cursor}" if cursor else "?limit=3"
        response = api.get(f"{DATASETS}/{dataset['id']}/items{query}")
        assert response.status == 200
        seen += [i["id"] for i in response.json["data"]]
        pages += 1
        cursor = response.json["next_cursor"]
        if cursor is None:
            break
    assert seen == created and pages == 3
    bad = api.get(f"{DATASETS}/{dataset['id']}/items?cursor=garbage")
    assert bad.status == 400 and _field(bad) == "cursor"
    too_many = api.get(f"{DATASETS}/{dataset['id']}/items?limit=101")
    assert too_many.status == 400 and _field(too_many) == "limit"


def test_datasets_paginate(api: Any, project: dict[str, Any]) -> None:
    created = [_dataset(api, project, name=f"d{n}")["id"] for n in range(3)]
    assert api.put(f"{DATASETS}/{created[0]}", {"name": "renamed"}).status == 200
    first = api.get(f"{DATASETS}?project_id={project['id']}&limit=2").json
    second = api.get(
        f"{DATASETS}?project_id={project['id']}&limit=2&cursor={first['next_cursor']}"
    ).json
    assert [d["id"] for d in first["data"] + second["data"]] == created
    assert second["next_cursor"] is None


def test_delete_dataset_deletes_its_items(api: Any, project: dict[str, Any]) -> None:
    from chalicelib.store import datasets

    doomed = _dataset(api, project, name="doomed")
    kept = _dataset(api, project, name="kept")
    doomed_items = [_item(api, doomed["id"])["id"] for _ in range(3)]
    kept_item = _item(api, kept["id"])
    assert api.delete(f"{DATASETS}/{doomed['id']}").status == 204
    assert datasets.batch_get_items([*doomed_items, kept_item["id"]]).keys() == {kept_item["id"]}
    assert api.get(f"{DATASETS}/{kept['id']}/items").json["data"] == [kept_item]


def test_repository_functions(api: Any, project: dict[str, Any]) -> None:
    from chalicelib.errors import NotFound
    from chalicelib.store import datasets

    dataset = _dataset(api, project)
    ids = [
        datasets.create_item(dataset["id"], project["id"], QUESTION, f"a{n}", {"n": n}).id
        for n in range(5)
    ]
    curated = datasets.create_item(
        dataset["id"], project["id"], QUESTION, None, {}, source_generation_id="gen_abc"
    )
    assert (
        api.get(f"{DATASETS}/{dataset['id']}/items/{curated.id}").json["source_generation_id"]
        == "gen_abc"
    )
    pages = list(datasets.iter_item_pages(dataset["id"], page_size=2))
    assert [len(p) for p in pages] == [2, 2, 2]
    assert [i.id for p in pages for i in p] == [*ids, curated.id]
    assert datasets.count_items(dataset["id"], up_to=100) == 6
    assert datasets.count_items(dataset["id"], up_to=4) == 4
    assert datasets.count_items(dataset["id"], up_to=0) == 0
    got = datasets.batch_get_items([ids[0], ids[3], "dsit_missing", ids[0]])
    assert set(got) == {ids[0], ids[3]} and got[ids[3]].expected_output == "a3"
    assert datasets.get_dataset(dataset["id"]).name == "billing"
    assert datasets.get_item(dataset["id"], ids[1]).metadata == {"n": 1}
    with pytest.raises(NotFound):
        datasets.get_item("dset_other", ids[1])
    with pytest.raises(NotFound):
        datasets.create_item("dset_doesnotexist0000", project["id"], QUESTION, None, {})
    assert list(datasets.iter_item_pages("dset_empty")) == []
