"""Project secrets (``/api/v1/secrets``): SOAT's operations, a value nobody reads back, and
the references (``secret_id``, ``{{secret:sec_...}}``) that bind one into a resource."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib import aws, secretbox
from chalicelib.settings import get_settings
from tests.api.test_authorization import allow, key_with

VALUE = "sk-live-secret-value-0123456789"
ALL_SECRET_ACTIONS = [
    "secrets:ListSecrets",
    "secrets:CreateSecret",
    "secrets:GetSecret",
    "secrets:UpdateSecret",
    "secrets:DeleteSecret",
]


def create(api: Any, project_id: str | None, /, **fields: Any) -> Any:
    body: dict[str, Any] = {"name": "openai", "value": VALUE, **fields}
    if project_id is not None:
        body["project_id"] = project_id
    return api.post("/api/v1/secrets", body)


def patch(api: Any, path: str, body: dict[str, Any]) -> Any:
    return api.request("PATCH", path, body)


def raw_table(name: str) -> str:
    """Every item of a table as DynamoDB holds it (what a copied table reveals)."""
    client = aws.client("dynamodb")
    items = client.scan(TableName=get_settings().table_name(name))["Items"]
    return json.dumps(items)


def test_create_get_list_update_delete_never_show_the_value(
    api: Any, project: dict[str, Any]
) -> None:
    created = create(api, project["id"])
    assert created.status == 201, created
    secret = created.json
    assert set(secret) == {"id", "project_id", "name", "has_value", "created_at", "updated_at"}
    assert secret["id"].startswith("sec_") and secret["has_value"] is True
    path = f"/api/v1/secrets/{secret['id']}"
    assert api.get(path).json == secret
    listed = api.get(f"/api/v1/secrets?project_id={project['id']}")
    assert listed.status == 200 and listed.json["data"] == [secret]
    assert listed.json["total"] == 1 and listed.json["offset"] == 0

    renamed = patch(api, path, {"name": "openai-prod"})
    assert renamed.status == 200 and renamed.json["name"] == "openai-prod"
    rotated = patch(api, path, {"value": "sk-rotated-9999"})
    assert rotated.status == 200 and rotated.json["has_value"] is True
    assert patch(api, path, {"value": None}).status == 400
    assert patch(api, path, {"value": "x", "extra": 1}).status == 400

    seen = b"".join(r.raw for r in (created, listed, renamed, rotated))
    assert VALUE.encode() not in seen and b"sk-rotated-9999" not in seen
    assert api.request("DELETE", path).status == 200
    assert api.get(path).status == 404
    assert create(api, project["id"], name="openai-prod").status == 201  # name released


def test_the_value_is_sealed_at_rest(api: Any, project: dict[str, Any]) -> None:
    secret = create(api, project["id"]).json
    stored = raw_table("secrets")
    assert VALUE not in stored and secret["id"] in stored
    row = json.loads(stored)[0]
    sealed = row["sealed_value"]["S"]
    assert secretbox.is_sealed(sealed)
    assert secretbox.open_sealed(sealed, secretbox.PROJECT_SECRET) == VALUE
    # Bound to its purpose: it cannot be opened as another kind of sealed value.
    with pytest.raises(secretbox.SealedValueUnreadable):
        secretbox.open_sealed(sealed, secretbox.WEBHOOK_SECRET)


def test_names_are_unique_per_project_and_bodies_are_checked(
    api: Any, project: dict[str, Any]
) -> None:
    assert create(api, project["id"]).status == 201
    assert create(api, project["id"]).code == "NAME_CONFLICT"
    for bad in ({"value": ""}, {"name": ""}, {"unknown": 1}):
        assert create(api, project["id"], **bad).status == 400
    assert api.post("/api/v1/secrets", {"project_id": project["id"], "name": "n"}).status == 400


def test_another_projects_secret_is_not_found(api: Any, project: dict[str, Any]) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    theirs = create(api, other["id"]).json
    key = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "k"}).json["key"]
    mine = api.as_key(key)
    path = f"/api/v1/secrets/{theirs['id']}"
    assert mine.get(path).status == 404
    assert patch(mine, path, {"value": "stolen"}).status == 404
    assert mine.request("DELETE", path).status == 404
    assert mine.get(f"/api/v1/secrets?project_id={other['id']}").code == "API_KEY_PROJECT_SCOPE"


PROVIDER = {"name": "judge", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"}
TOOL_CONFIG = {"url": "http://127.0.0.1:9/t"}
AGENT_CONFIG = {"url": "http://127.0.0.1:9/a"}


def _bodies(project_id: str, secret_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """A create of each resource that can reference a secret, referencing ``secret_id``."""
    token = f"Bearer {{{{secret:{secret_id}}}}}"
    return {
        "ai_provider": (
            "/api/v1/ai-providers",
            {**PROVIDER, "project_id": project_id, "secret_id": secret_id},
        ),
        "model_agent": (
            "/api/v1/agents",
            {
                "project_id": project_id,
                "name": "m",
                "type": "model",
                "config": {
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "x",
                    "secret_id": secret_id,
                },
            },
        ),
        "http_agent": (
            "/api/v1/agents",
            {
                "project_id": project_id,
                "name": "h",
                "type": "http",
                "config": {**AGENT_CONFIG, "headers": {"Authorization": token}},
            },
        ),
        "http_tool": (
            "/api/v1/tools",
            {
                "project_id": project_id,
                "name": "t",
                "type": "http",
                "config": {**TOOL_CONFIG, "headers": {"X-Api-Key": token}},
            },
        ),
    }


def test_a_reference_to_a_missing_foreign_or_denied_secret_is_the_same_400(
    api: Any, project: dict[str, Any]
) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = create(api, other["id"]).json["id"]
    denied = create(api, project["id"], name="denied").json["id"]
    everything = allow(["*"], "*")
    deny_read = {"effect": "Deny", "action": ["secrets:GetSecret"], "resource": ["*"]}
    caller = key_with(api, project["id"], everything, deny_read)
    missing = "sec_0000000000000000"
    for kind in _bodies(project["id"], missing):
        answers = []
        for secret_id in (missing, foreign, denied):
            path, body = _bodies(project["id"], secret_id)[kind]
            response = caller.post(path, body)
            assert response.status == 400 and response.code == "SECRET_NOT_FOUND", (kind, response)
            answers.append(response.raw.replace(secret_id.encode(), b"<id>"))
        assert answers[0] == answers[1] == answers[2], kind
    # Tokens that name no secret id at all: an environment variable, a ${...} name.
    for name in ("PAWL_ADMIN_KEY", "${PAWL_ADMIN_KEY}", "AWS_SECRET_ACCESS_KEY"):
        path, body = _bodies(project["id"], name)["http_tool"]
        assert api.post(path, body).code == "SECRET_NOT_FOUND"
    assert api.get(f"/api/v1/tools?project_id={project['id']}").json["data"] == []
    assert api.get(f"/api/v1/agents?project_id={project['id']}").json["data"] == []


def test_a_reference_is_stored_and_echoed_as_the_token(api: Any, project: dict[str, Any]) -> None:
    secret_id = create(api, project["id"]).json["id"]
    shown = {}
    for kind, (path, body) in _bodies(project["id"], secret_id).items():
        created = api.post(path, body)
        assert created.status == 201, (kind, created)
        assert VALUE.encode() not in created.raw
        shown[kind] = created.json
    token = f"Bearer {{{{secret:{secret_id}}}}}"
    assert shown["ai_provider"]["secret_id"] == secret_id
    assert shown["model_agent"]["config"]["secret_id"] == secret_id
    assert shown["http_agent"]["config"]["headers"] == {"Authorization": token}
    assert shown["http_tool"]["config"]["headers"] == {"X-Api-Key": token}


def test_deleting_a_referenced_secret_is_409_and_force_deletes_only_providers(
    api: Any, project: dict[str, Any]
) -> None:
    secret_id = create(api, project["id"]).json["id"]
    path = f"/api/v1/secrets/{secret_id}"
    bodies = _bodies(project["id"], secret_id)
    provider = api.post(*bodies["ai_provider"]).json
    refused = api.request("DELETE", path)
    assert refused.status == 409 and refused.code == "SECRET_IN_USE"
    assert refused.json["error"]["meta"]["ai_providers"] == [
        {"id": provider["id"], "name": "judge"}
    ]
    tool = api.post(*bodies["http_tool"]).json
    assert api.request("DELETE", f"{path}?force=true").code == "SECRET_IN_USE"  # a tool uses it
    assert api.delete(f"/api/v1/tools/{tool['id']}").status == 204
    assert api.request("DELETE", f"{path}?force=true").status == 200
    assert api.get(path).status == 404
    assert api.get(f"/api/v1/ai-providers/{provider['id']}").status == 404


def test_a_key_allowed_only_on_secrets_reads_names_never_values(
    api: Any, project: dict[str, Any]
) -> None:
    secret = create(api, project["id"]).json
    reader = key_with(api, project["id"], allow(ALL_SECRET_ACTIONS, "*"))
    answers = [
        reader.get(f"/api/v1/secrets/{secret['id']}"),
        reader.get("/api/v1/secrets"),
        create(reader, None, name="second"),
    ]
    assert [a.status for a in answers] == [200, 200, 201]
    assert all(VALUE.encode() not in a.raw for a in answers)
    no_secrets = key_with(api, project["id"], allow(["agents:*"], "*"))
    assert no_secrets.get(f"/api/v1/secrets/{secret['id']}").status == 404
    assert no_secrets.get("/api/v1/secrets").json["data"] == []
    assert create(no_secrets, None, name="third").status == 403


def test_moving_a_provider_that_keeps_its_secret_needs_the_secret(
    api: Any, project: dict[str, Any]
) -> None:
    """Changing where a provider's secret is sent is binding it again: a key denied the
    secret may not re-point the provider (the audit sent the key to its own host so)."""
    secret_id = create(api, project["id"]).json["id"]
    provider = api.post(
        "/api/v1/ai-providers",
        {
            "project_id": project["id"],
            "name": "judge",
            "base_url": "https://api.example.com/v1",
            "default_model": "m",
            "secret_id": secret_id,
        },
    ).json
    path = f"/api/v1/ai-providers/{provider['id']}"
    deny_secrets = {"effect": "Deny", "action": ["secrets:*"], "resource": ["*"]}
    caller = key_with(api, project["id"], allow(["*"], "*"), deny_secrets)
    moved = caller.put(path, {"base_url": "https://attacker.example/v1"})
    assert moved.status == 400 and moved.code == "SECRET_NOT_FOUND", moved
    assert api.get(path).json["base_url"] == "https://api.example.com/v1"  # nothing changed
    # What does not move the secret stays allowed; unlinking it is allowed too.
    assert caller.put(path, {"name": "renamed"}).status == 200
    assert caller.put(path, {"base_url": "https://x.example/v1", "secret_id": None}).status == 200
    assert api.get(path).json["secret_id"] is None
    # The secret's own key may move it.
    api.put(path, {"secret_id": secret_id})
    assert api.put(path, {"base_url": "https://y.example/v1"}).status == 200
