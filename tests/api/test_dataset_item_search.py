"""``?q=`` on list-dataset-items (a pawl addition to SOAT's list): only the items whose
input messages or expected output contain the text in any case, paged on the server, with
a cursor bound to the text; an item without the search field (written before it, or too
big) matched case-sensitively; a foreign key and a bad query are refused."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

DATASETS = "/api/v1/datasets"


def _items(api: Any, path: str) -> Any:
    response = api.get(path)
    assert response.status == 200, response
    return response.json


def _dataset_with(api: Any, project: dict[str, Any], cases: list[tuple[str, str | None]]) -> Any:
    dataset = api.post(DATASETS, {"project_id": project["id"], "name": "search"}).json
    ids = []
    for text, expected in cases:
        body = {"input": [{"role": "user", "content": text}], "expected_output": expected}
        created = api.post(f"{DATASETS}/{dataset['id']}/items", body)
        assert created.status == 201, created
        ids.append(created.json["id"])
    return dataset, ids


def test_q_matches_input_or_expected_output_and_pages(api: Any, project: dict[str, Any]) -> None:
    cases: list[tuple[str, str | None]] = [
        ("refund my invoice", "ok"),
        ("weather today", "the invoice is late"),
        ("nothing here", None),
        ('a "quoted" invoice in Zürich', "x"),
        ("Invoice capitalised", "y"),
    ]
    dataset, ids = _dataset_with(api, project, cases)
    path = f"{DATASETS}/{dataset['id']}/items"
    first = _items(api, f"{path}?q=invoice&limit=2")
    assert first["total"] == 4
    seen, cursor = [i["id"] for i in first["data"]], first["next_cursor"]
    while cursor:
        following = _items(api, f"{path}?q=invoice&limit=2&cursor={cursor}")
        seen += [i["id"] for i in following["data"]]
        cursor = following["next_cursor"]
    assert seen == [ids[0], ids[1], ids[3], ids[4]]  # any case: "Invoice" too
    quoted = _items(api, f"{path}?q={quote(chr(34) + 'quoted' + chr(34))}")["data"]
    assert [i["id"] for i in quoted] == [ids[3]]
    for accented in ("Zürich", "ZÜRICH", "zürich"):
        found = _items(api, f"{path}?q={quote(accented)}")["data"]
        assert [i["id"] for i in found] == [ids[3]], accented
    assert [i["id"] for i in _items(api, f"{path}?q=INVOICE%20CAP")["data"]] == [ids[4]]
    assert _items(api, f"{path}?q=role")["data"] == []  # the stored JSON's names match nothing
    assert _items(api, f"{path}?q=absent")["data"] == []
    assert len(_items(api, path)["data"]) == 5


def test_a_cursor_is_bound_to_its_text_and_a_bad_q_is_400(
    api: Any, project: dict[str, Any]
) -> None:
    dataset, _ = _dataset_with(api, project, [("alpha one", None), ("alpha two", None)])
    path = f"{DATASETS}/{dataset['id']}/items"
    cursor = _items(api, f"{path}?q=alpha&limit=1")["next_cursor"]
    assert api.get(f"{path}?q=two&limit=1&cursor={cursor}").status == 400
    assert api.get(f"{path}?limit=1&cursor={cursor}").status == 400
    for bad in ("q=", f"q={'x' * 201}", "q=a&query=b"):
        refused = api.get(f"{path}?{bad}")
        assert refused.status == 400 and refused.code == "VALIDATION_FAILED", bad


def test_a_foreign_key_searching_another_projects_dataset_is_404(
    api: Any, project: dict[str, Any]
) -> None:
    dataset, _ = _dataset_with(api, project, [("secret text", None)])
    other = api.post("/api/v1/projects", {"name": "other"}).json
    key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}).json["key"]
    foreign = api.as_key(key).get(f"{DATASETS}/{dataset['id']}/items?q=secret")
    assert foreign.status == 404


def test_an_update_refreshes_the_search_and_an_old_or_big_item_is_matched_case_sensitively(
    api: Any, project: dict[str, Any]
) -> None:
    from chalicelib.store import datasets
    from chalicelib.store.models import DatasetItemModel

    big = "Needle " + "x" * datasets.SEARCH_TEXT_MAX_BYTES
    dataset, (fresh, old, large) = _dataset_with(
        api, project, [("plain", "Ticket"), ("Ticket from before", None), (big, None)]
    )
    path = f"{DATASETS}/{dataset['id']}/items"
    # An item written before the search field: its row has none (as such rows are).
    DatasetItemModel(id=old).update(actions=[DatasetItemModel.search_text.remove()])
    assert DatasetItemModel.get(large).search_text is None  # too big to keep one
    assert [i["id"] for i in _items(api, f"{path}?q=ticket")["data"]] == [fresh]
    assert [i["id"] for i in _items(api, f"{path}?q=Ticket")["data"]] == [fresh, old]
    assert [i["id"] for i in _items(api, f"{path}?q=Needle")["data"]] == [large]
    assert _items(api, f"{path}?q=needle")["data"] == []
    assert _items(api, f"{path}?q=role")["total"] == 2  # the old rule's JSON quirk
    # An update writes the field again: the old item is found in any case from now on.
    assert api.put(f"{path}/{old}", {"expected_output": "BILLING"}).status == 200
    assert [i["id"] for i in _items(api, f"{path}?q=ticket")["data"]] == [fresh, old]
    assert [i["id"] for i in _items(api, f"{path}?q=billing")["data"]] == [old]
    assert api.put(f"{path}/{fresh}", {"expected_output": "done"}).status == 200
    assert [i["id"] for i in _items(api, f"{path}?q=ticket")["data"]] == [old]
    shrunk = [{"role": "user", "content": "Needle, small now"}]
    assert api.put(f"{path}/{large}", {"input": shrunk}).status == 200
    assert [i["id"] for i in _items(api, f"{path}?q=needle")["data"]] == [large]
