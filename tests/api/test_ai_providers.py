"""AI provider routes, the project's default provider, and the judge rules that use them."""

from __future__ import annotations

from typing import Any

import pytest

BASE_URL = "http://127.0.0.1:9/v1"


def create(api: Any, project_id: str | None, /, **fields: Any) -> Any:
    body = {"name": "judge", "base_url": BASE_URL, "default_model": "judge-1", **fields}
    if project_id is not None:
        body["project_id"] = project_id
    return api.post("/api/v1/ai-providers", body)


def listed_ids(api: Any, project_id: str) -> list[str]:
    response = api.get(f"/api/v1/ai-providers?project_id={project_id}")
    assert response.status == 200, response
    return [p["id"] for p in response.json["data"]]


def other_project(api: Any) -> dict[str, Any]:
    response = api.post("/api/v1/projects", {"name": "globex"})
    assert response.status == 201, response
    return response.json


def test_create_get_list_update_delete(
    api: Any, project: dict[str, Any], credential_env: Any
) -> None:
    credential_env("JUDGE_KEY")
    created = create(api, project["id"], api_key_env="JUDGE_KEY")
    assert created.status == 201, created
    provider = created.json
    assert provider["id"].startswith("aip_")
    assert {k: provider[k] for k in ("project_id", "name", "base_url", "default_model")} == {
        "project_id": project["id"],
        "name": "judge",
        "base_url": BASE_URL,
        "default_model": "judge-1",
    }
    assert provider["api_key_env"] == "JUDGE_KEY"
    assert api.get(f"/api/v1/ai-providers/{provider['id']}").json == provider
    second = create(api, project["id"], name="backup").json
    assert listed_ids(api, project["id"]) == [provider["id"], second["id"]]

    path = f"/api/v1/ai-providers/{provider['id']}"
    updated = api.put(path, {"name": "primary", "default_model": "judge-2", "api_key_env": None})
    assert updated.status == 200, updated
    assert updated.json["name"] == "primary" and updated.json["default_model"] == "judge-2"
    assert updated.json["api_key_env"] is None and updated.json["base_url"] == BASE_URL
    assert api.get(path).json == updated.json
    # The old name was released by the rename; the new one is taken.
    assert create(api, project["id"], name="judge").status == 201
    assert api.put(path, {"name": "backup"}).code == "NAME_CONFLICT"

    assert api.delete(path).status == 204
    assert api.get(path).status == 404
    assert api.delete(path).status == 404
    assert create(api, project["id"], name="primary").status == 201  # name released


def test_names_are_unique_per_project_only(api: Any, project: dict[str, Any]) -> None:
    assert create(api, project["id"]).status == 201
    again = create(api, project["id"])
    assert again.status == 409 and again.code == "NAME_CONFLICT"
    assert again.json["error"]["meta"]["field"] == "name"
    assert create(api, other_project(api)["id"]).status == 201


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"base_url": "ftp://127.0.0.1/v1"}, "base_url"),
        ({"base_url": "not a url"}, "base_url"),
        ({"base_url": "http://169.254.169.254/latest"}, "base_url"),
        ({"base_url": "http://10.0.0.8/v1"}, "base_url"),
        ({"api_key_env": "sk-live-1234 secret"}, "api_key_env"),
        ({"default_model": ""}, "default_model"),
        ({"name": ""}, "name"),
        ({"api_key": "sk-123"}, "api_key"),
    ],
)
def test_create_refusals_name_the_field_and_write_nothing(
    api: Any, project: dict[str, Any], fields: dict[str, Any], field: str
) -> None:
    refused = create(api, project["id"], **fields)
    assert refused.status == 400, refused
    assert refused.code == "VALIDATION_FAILED"
    assert refused.json["error"]["meta"]["field"] == field
    assert listed_ids(api, project["id"]) == []


def test_default_model_is_required(api: Any, project: dict[str, Any]) -> None:
    body = {"project_id": project["id"], "name": "judge", "base_url": BASE_URL}
    refused = api.post("/api/v1/ai-providers", body)
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "default_model"


def test_update_refusals(api: Any, project: dict[str, Any]) -> None:
    provider = create(api, project["id"]).json
    path = f"/api/v1/ai-providers/{provider['id']}"
    for body, field in [
        ({"name": None}, "name"),
        ({"default_model": None}, "default_model"),
        ({"base_url": "http://169.254.169.254/"}, "base_url"),
        ({"project_id": "proj_x"}, "project_id"),
    ]:
        refused = api.put(path, body)
        assert refused.status == 400 and refused.json["error"]["meta"]["field"] == field, body
    assert api.get(path).json == provider


def test_tenancy(api: Any, project: dict[str, Any], project_key: str) -> None:
    scoped = api.as_key(project_key)
    own = create(scoped, None)  # a scoped key's create defaults to its own project
    assert own.status == 201 and own.json["project_id"] == project["id"]
    globex = other_project(api)
    theirs = create(api, globex["id"]).json
    refused = create(scoped, globex["id"])
    assert refused.status == 403 and refused.code == "API_KEY_PROJECT_SCOPE"
    path = f"/api/v1/ai-providers/{theirs['id']}"
    for response in (
        scoped.get(path),
        scoped.put(path, {"name": "mine"}),
        scoped.delete(path),
    ):
        assert response.status == 404 and response.code == "RESOURCE_NOT_FOUND"
    assert scoped.get(f"/api/v1/ai-providers?project_id={globex['id']}").status == 403
    assert [p["id"] for p in scoped.get("/api/v1/ai-providers").json["data"]] == [own.json["id"]]
    assert api.get(path).json["name"] == "judge"  # untouched
    assert create(api, None).status == 400  # the admin key must name the project


# --- the project's default provider ---------------------------------------------------------


def set_default(api: Any, project_id: str, provider_id: str | None) -> Any:
    return api.put(f"/api/v1/projects/{project_id}", {"default_ai_provider_id": provider_id})


def test_set_and_clear_the_default(api: Any, project: dict[str, Any], project_key: str) -> None:
    provider = create(api, project["id"]).json
    scoped = api.as_key(project_key)
    response = set_default(scoped, project["id"], provider["id"])
    assert response.status == 200, response
    assert response.json["default_ai_provider_id"] == provider["id"]
    assert (
        api.get(f"/api/v1/projects/{project['id']}").json["default_ai_provider_id"]
        == (provider["id"])
    )
    cleared = set_default(scoped, project["id"], None)
    assert cleared.status == 200 and cleared.json.get("default_ai_provider_id") is None


def test_default_must_be_a_provider_of_the_project(api: Any, project: dict[str, Any]) -> None:
    theirs = create(api, other_project(api)["id"]).json
    for provider_id in (theirs["id"], "aip_missing000000000"):
        refused = set_default(api, project["id"], provider_id)
        assert refused.status == 400 and refused.code == "VALIDATION_FAILED"
        assert refused.json["error"]["meta"]["field"] == "default_ai_provider_id"
    assert api.get(f"/api/v1/projects/{project['id']}").json.get("default_ai_provider_id") is None


def test_rename_project(api: Any, project: dict[str, Any]) -> None:
    path = f"/api/v1/projects/{project['id']}"
    renamed = api.put(path, {"name": "acme-2"})
    assert renamed.status == 200 and renamed.json["name"] == "acme-2"
    assert api.post("/api/v1/projects", {"name": "acme"}).status == 201  # old name released
    taken = api.put(path, {"name": "acme"})
    assert taken.status == 409 and taken.code == "NAME_CONFLICT"
    for body, field in [({"name": None}, "name"), ({"colour": "red"}, "colour")]:
        refused = api.put(path, body)
        assert refused.status == 400 and refused.json["error"]["meta"]["field"] == field
    assert api.get(path).json["name"] == "acme-2"


def test_project_update_tenancy(api: Any, project: dict[str, Any], project_key: str) -> None:
    globex = other_project(api)
    refused = api.as_key(project_key).put(f"/api/v1/projects/{globex['id']}", {"name": "mine"})
    assert refused.status == 404
    assert api.put("/api/v1/projects/proj_missing00000000", {"name": "x"}).status == 404
    assert api.get(f"/api/v1/projects/{globex['id']}").json["name"] == "globex"


def test_the_default_cannot_be_deleted(api: Any, project: dict[str, Any]) -> None:
    provider = create(api, project["id"]).json
    assert set_default(api, project["id"], provider["id"]).status == 200
    path = f"/api/v1/ai-providers/{provider['id']}"
    refused = api.delete(path)
    assert refused.status == 409 and refused.code == "AI_PROVIDER_IN_USE"
    assert "default_ai_provider_id" in refused.json["error"]["message"]
    assert api.get(path).status == 200
    assert set_default(api, project["id"], None).status == 200
    assert api.delete(path).status == 204
