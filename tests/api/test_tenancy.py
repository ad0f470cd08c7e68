"""Projects, API keys, authentication and tenant isolation."""

from __future__ import annotations

from typing import Any


def test_project_create_get_list(api: Any) -> None:
    created = api.post("/api/v1/projects", {"name": "acme"})
    assert created.status == 201
    assert created.json["id"].startswith("proj_") and len(created.json["id"]) == 21
    assert created.json["name"] == "acme" and created.json["created_at"].endswith("Z")
    assert api.get(f"/api/v1/projects/{created.json['id']}").json == created.json
    listed = api.get("/api/v1/projects")
    assert listed.status == 200 and [p["id"] for p in listed.json["data"]] == [created.json["id"]]
    assert listed.json["next_cursor"] is None


def test_duplicate_project_name_conflicts(api: Any) -> None:
    assert api.post("/api/v1/projects", {"name": "acme"}).status == 201
    again = api.post("/api/v1/projects", {"name": "acme"})
    assert again.status == 409 and again.code == "NAME_CONFLICT"


def test_missing_and_invalid_keys_are_401(api: Any) -> None:
    assert api.as_key(None).get("/api/v1/projects").code == "UNAUTHORIZED"
    bad = api.as_key("pawl.key_nope.secret").get("/api/v1/projects")
    assert bad.status == 401 and bad.code == "UNAUTHORIZED"


def test_api_key_secret_shown_once_and_scoped(api: Any, project: dict[str, Any]) -> None:
    created = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "ci"})
    assert created.status == 201 and created.json["key"].startswith("pawl.")
    key_id = created.json["id"]
    shown = api.get(f"/api/v1/api-keys/{key_id}")
    assert shown.status == 200 and "key" not in shown.json
    listed = api.get(f"/api/v1/api-keys?project_id={project['id']}")
    assert [k["id"] for k in listed.json["data"]] == [key_id]
    assert all("key" not in k and "key_hash" not in k for k in listed.json["data"])
    scoped = api.as_key(created.json["key"])
    assert scoped.get(f"/api/v1/projects/{project['id']}").status == 200
    assert scoped.post("/api/v1/projects", {"name": "x"}).status == 403
    # Admin-only creates refuse a project key before its body is read (iam.md's order).
    for path in ("/api/v1/projects", "/api/v1/api-keys"):
        refused = scoped.post(path, {"colour": "red"})
        assert refused.status == 403 and refused.code == "FORBIDDEN", refused
    assert api.delete(f"/api/v1/api-keys/{key_id}").status == 204
    assert scoped.get(f"/api/v1/projects/{project['id']}").status == 401


def test_scoped_key_cannot_see_other_project(api: Any, project_key: str) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    scoped = api.as_key(project_key)
    hidden = scoped.get(f"/api/v1/projects/{other['id']}")
    missing = scoped.get("/api/v1/projects/proj_doesnotexist0000")
    assert hidden.status == missing.status == 404
    assert hidden.code == missing.code == "RESOURCE_NOT_FOUND"
    listed = scoped.get(f"/api/v1/api-keys?project_id={other['id']}")
    assert listed.status == 403 and listed.code == "API_KEY_PROJECT_SCOPE"


def test_admin_listing_needs_project_id(api: Any) -> None:
    response = api.get("/api/v1/api-keys")
    assert response.status == 400 and response.json["error"]["meta"]["field"] == "project_id"


def test_api_key_for_missing_project_is_404_and_writes_nothing(api: Any) -> None:
    response = api.post("/api/v1/api-keys", {"project_id": "proj_missing", "name": "x"})
    assert response.status == 404


def test_envelope_for_bad_json_unknown_fields_and_methods(api: Any) -> None:
    bad_json = api.post("/api/v1/projects", raw=b"{not json")
    assert bad_json.status == 400 and bad_json.code == "VALIDATION_FAILED"
    unknown = api.post("/api/v1/projects", {"name": "a", "colour": "red"})
    assert unknown.status == 400 and unknown.json["error"]["meta"]["field"] == "colour"
    wrong_type = api.post("/api/v1/projects", {"name": 7})
    assert wrong_type.status == 400 and wrong_type.json["error"]["meta"]["field"] == "name"
    method = api.request("PATCH", "/api/v1/projects")
    assert method.status == 405 and method.code == "METHOD_NOT_ALLOWED"
    assert api.get("/api/v1/projects").json["data"] == []


def test_pagination_and_bad_cursor(api: Any) -> None:
    for i in range(5):
        api.post("/api/v1/projects", {"name": f"p{i}"})
    seen: list[str] = []
    cursor = None
    while True:
        url = "/api/v1/projects?limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.get(url).json
        assert len(page["data"]) <= 2
        seen += [p["id"] for p in page["data"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 5
    assert api.get("/api/v1/projects?cursor=zzz").code == "VALIDATION_FAILED"
    assert api.get("/api/v1/projects?limit=0").status == 400
    assert api.get("/api/v1/projects?limit=101").status == 400
    assert api.get("/api/v1/projects?bogus=1").status == 400


def test_openapi_and_health(api: Any) -> None:
    doc = api.as_key(None).get("/api/v1/openapi.json")
    assert doc.status == 200 and doc.json["openapi"] == "3.1.0"
    assert "post" in doc.json["paths"]["/api/v1/projects"]
    assert api.as_key(None).get("/health").json == {"status": "ok"}
