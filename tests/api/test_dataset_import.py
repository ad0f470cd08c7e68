"""``POST /api/v1/datasets/{id}/items:import``: JSON Lines, all or nothing, bounded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.api.dataset_import import MAX_LINES


def _dataset(api: Any, project: Any, name: str = "golden") -> dict[str, Any]:
    response = api.post("/api/v1/datasets", {"project_id": project["id"], "name": name})
    assert response.status == 201, response
    dataset: dict[str, Any] = response.json
    return dataset


def _path(dataset: dict[str, Any]) -> str:
    return f"/api/v1/datasets/{dataset['id']}/items:import"


def _jsonl(*lines: Any) -> bytes:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines).encode()


def _item(text: str, **extra: Any) -> dict[str, Any]:
    return {"input": [{"role": "user", "content": text}], **extra}


def _items(api: Any, dataset: dict[str, Any]) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = api.get(f"/api/v1/datasets/{dataset['id']}/items?limit=100").json[
        "data"
    ]
    return data


def test_an_import_adds_every_line_in_order(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    body = _jsonl(
        _item("one", expected_output="1"),
        "",
        _item("two", metadata={"topic": "math", "level": 2}),
        _item("three", metadata=None),
        "",
    )
    response = api.post(_path(dataset), raw=body)
    assert response.status == 201, response
    assert response.json["imported"] == 3 and len(response.json["item_ids"]) == 3
    listed = _items(api, dataset)
    assert [i["id"] for i in listed] == response.json["item_ids"]
    assert [i["input"][0]["content"] for i in listed] == ["one", "two", "three"]
    assert listed[0]["expected_output"] == "1" and listed[1]["metadata"]["level"] == 2
    assert listed[2]["metadata"] == {}


def test_json_lines_media_types_are_accepted(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    for media_type in ("application/x-ndjson", "application/jsonl"):
        response = api.client.http.post(
            _path(dataset),
            headers={"Content-Type": media_type, "Authorization": f"Bearer {api.key}"},
            body=_jsonl(_item(media_type)),
        )
        assert response.status_code == 201, response.body
    assert len(_items(api, dataset)) == 2


def test_a_bad_line_refuses_the_whole_import_naming_each_bad_line(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    body = _jsonl(
        _item("fine"),
        {"input": [{"role": "wizard", "content": "x"}]},
        _item("fine too"),
        {"input": [{"role": "user", "content": "x"}], "colour": "red"},
        "{not json",
        "[1, 2]",
        {"input": [{"role": "user", "content": "x"}], "metadata": {"n": float("1e300")}},
    )
    response = api.post(_path(dataset), raw=body)
    assert response.status == 400 and response.code == "VALIDATION_FAILED", response
    error = response.json["error"]
    assert error["message"].startswith("5 of 7 lines are invalid, so nothing was imported")
    assert "line 2: input.0.role" in error["message"]
    lines = {p["line"]: p for p in error["meta"]["lines"]}
    assert sorted(lines) == [2, 4, 5, 6, 7] and error["meta"]["invalid_line_count"] == 5
    assert lines[2]["field"] == "input.0.role"
    assert lines[4]["field"] == "colour" and lines[4]["message"] == "colour: unknown field"
    assert lines[5]["message"] == (
        "not valid JSON: Expecting property name enclosed in double quotes at column 2"
    )
    assert lines[5]["column"] == 2 and "column" not in lines[2]
    assert lines[6]["message"] == "a line must be a JSON object"
    assert lines[7]["field"].startswith("metadata")
    assert _items(api, dataset) == []


def test_a_line_over_the_item_content_limit_is_refused_like_a_single_create(
    api: Any, project: Any
) -> None:
    dataset = _dataset(api, project)
    big = _item("x" * 360_000)
    single = api.post(f"/api/v1/datasets/{dataset['id']}/items", big)
    response = api.post(_path(dataset), raw=_jsonl(_item("ok"), big))
    assert single.status == response.status == 400, (single, response)
    problem = response.json["error"]["meta"]["lines"][0]
    assert problem["line"] == 2
    assert problem["message"] == single.json["error"]["message"]
    assert _items(api, dataset) == []


def test_an_empty_body_is_refused(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    response = api.post(_path(dataset), raw=b"\n \n")
    assert response.status == 400 and "no items" in response.json["error"]["message"]


def test_more_lines_than_one_transaction_holds_is_413_with_nothing_written(
    api: Any, project: Any
) -> None:
    dataset = _dataset(api, project)
    response = api.post(_path(dataset), raw=_jsonl(*[_item(str(i)) for i in range(MAX_LINES + 1)]))
    assert response.status == 413 and response.code == "PAYLOAD_TOO_LARGE", response
    assert response.json["error"]["meta"]["limit"] == MAX_LINES
    assert f"at most {MAX_LINES} items" in response.json["error"]["message"]
    assert _items(api, dataset) == []
    exactly = api.post(_path(dataset), raw=_jsonl(*[_item(str(i)) for i in range(MAX_LINES)]))
    assert exactly.status == 201 and exactly.json["imported"] == MAX_LINES


def test_a_body_over_the_byte_limit_is_413(
    api: Any, project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = _dataset(api, project)
    monkeypatch.setenv("PAWL_MAX_BODY_BYTES", "2000")
    wiring.reload_settings()
    response = api.post(_path(dataset), raw=_jsonl(*[_item("y" * 100) for _ in range(20)]))
    assert response.status == 413 and response.json["error"]["meta"]["limit"] == 2000
    assert _items(api, dataset) == []


def test_a_foreign_project_key_cannot_import_into_a_dataset(
    api: Any, project: Any, project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    theirs = _dataset(api, other, name="theirs")
    response = api.as_key(project_key).post(_path(theirs), raw=_jsonl(_item("sneaky")))
    assert response.status == 404, response
    missing = api.post("/api/v1/datasets/dset_0000000000000000/items:import", raw=b"{}")
    assert missing.status == 404, missing
    assert _items(api, theirs) == []
    unauthenticated = api.as_key(None).post(_path(theirs), raw=_jsonl(_item("x")))
    assert unauthenticated.status == 401


def test_a_string_input_is_one_user_message_as_in_csv(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    body = _jsonl({"input": "How do refunds work?", "expected_output": "30 days"}, _item("two"))
    response = api.post(_path(dataset), raw=body)
    assert response.status == 201, response
    first, second = _items(api, dataset)
    assert first["input"] == [{"role": "user", "content": "How do refunds work?"}]
    assert first["expected_output"] == "30 days"
    assert second["input"] == [{"role": "user", "content": "two"}]


def test_each_bad_line_is_reported_once_with_what_is_wrong_with_it(api: Any, project: Any) -> None:
    dataset = _dataset(api, project)
    body = b"\n".join(
        [
            b'{"input": "fine"}',
            b'{"input": "caf\xe9"}',  # Latin-1, not UTF-8
            b'{"input": 7}',
            b'{"input": "x", "expected_output": "y",}',
            b'{"input": ""}',
        ]
    )
    response = api.post(_path(dataset), raw=body)
    assert response.status == 400, response
    problems = response.json["error"]["meta"]["lines"]
    assert [p["line"] for p in problems] == [2, 3, 4]
    assert problems[0]["message"].startswith("not valid UTF-8 at column 15")
    assert problems[0]["column"] == 15
    assert problems[1]["field"] == "input" and problems[1]["message"].startswith("input: ")
    assert problems[2]["column"] == 39 and "column 39" in problems[2]["message"]
    assert _items(api, dataset) == []


@pytest.mark.parametrize("media_type", ["text/csv", "text/plain"])
def test_another_media_type_is_415_naming_the_ones_taken(
    api: Any, project: Any, media_type: str
) -> None:
    dataset = _dataset(api, project)
    response = api.client.http.post(
        _path(dataset),
        headers={"Content-Type": media_type, "Authorization": f"Bearer {api.key}"},
        body=b"input\nhello\n",
    )
    assert response.status_code == 415, response.body
    error = json.loads(response.body)["error"]
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert error["meta"]["accepted"] == [
        "application/x-ndjson",
        "application/jsonl",
        "application/json",
    ]
    assert error["message"].endswith(
        "send the body as application/x-ndjson, application/jsonl or application/json"
    )
    assert _items(api, dataset) == []
