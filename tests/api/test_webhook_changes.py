"""Webhook update (PUT), the secret read back and rotated, and create's project from the key.

Every refusal is checked to leave the webhook as it was (no partial state), and every
route of another project's webhook to answer the 404 a missing one gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.outbound.policy import OWN_ENDPOINT_MESSAGE
from chalicelib.store.models import WebhookModel

HOOK_URL = "http://127.0.0.1:9/hook"
#: A loopback port the tests declare to be pawl's own API (PAWL_RESERVED_ENDPOINTS), and
#: allow-list too: the reservation must win over the operator's allow-list.
OWN_PORT = 9


def create(api: Any, project_id: str | None, /, **fields: Any) -> Any:
    body = {"url": HOOK_URL, "events": ["eval_run.*"], **fields}
    if project_id is not None:
        body["project_id"] = project_id
    return api.post("/api/v1/webhooks", body)


@pytest.fixture
def hook(api: Any, project: dict[str, Any]) -> dict[str, Any]:
    created = create(api, project["id"], name="ci", description="nightly gate")
    assert created.status == 201, created
    return dict(created.json)


@pytest.fixture
def foreign(api: Any) -> dict[str, Any]:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    return dict(create(api, other["id"]).json)


@pytest.fixture
def pawl_own_port(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``OWN_PORT`` on loopback is pawl's own endpoint (as ``pawl serve`` declares its port)."""
    monkeypatch.setenv("PAWL_RESERVED_ENDPOINTS", f"127.0.0.1:{OWN_PORT}")
    wiring.reload_settings()
    yield f"http://127.0.0.1:{OWN_PORT}/api/v1/api-keys"
    monkeypatch.delenv("PAWL_RESERVED_ENDPOINTS")
    wiring.reload_settings()


def test_create_shows_soats_fields_and_defaults_the_name_to_the_host(
    api: Any, project: dict[str, Any], hook: dict[str, Any]
) -> None:
    assert (hook["name"], hook["description"], hook["active"]) == ("ci", "nightly gate", True)
    assert hook["policy_id"] is None
    plain = create(api, project["id"]).json
    assert (plain["name"], plain["description"], plain["active"]) == ("127.0.0.1", None, True)
    paused = create(api, project["id"], active=False).json
    assert api.get(f"/api/v1/webhooks/{paused['id']}").json["active"] is False


def test_a_project_key_creates_without_project_id_the_admin_key_must_name_it(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    made = create(api.as_key(project_key), None)
    assert made.status == 201 and made.json["project_id"] == project["id"], made
    refused = create(api, None)
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "project_id"


def test_create_refuses_a_policy_it_cannot_gate_with(api: Any, project: dict[str, Any]) -> None:
    refused = create(api, project["id"], policy_id="pol_0000000000000000")
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "policy_id"
    assert create(api, project["id"], policy_id=None).status == 201


def test_update_changes_what_it_names_and_keeps_the_rest(api: Any, hook: dict[str, Any]) -> None:
    path = f"/api/v1/webhooks/{hook['id']}"
    body = {"name": "gate", "events": ["eval_run.failed", "eval_runs.failed"], "active": False}
    updated = api.put(path, body)
    assert updated.status == 200, updated
    changed = updated.json
    assert (changed["name"], changed["events"], changed["active"]) == (
        "gate",
        ["eval_run.failed"],
        False,
    )
    assert (changed["url"], changed["description"]) == (hook["url"], hook["description"])
    assert changed["updated_at"] > hook["updated_at"] and "secret" not in changed
    assert api.get(path).json == changed
    cleared = api.put(path, {"description": None, "url": "http://127.0.0.1:9/other"}).json
    assert (cleared["description"], cleared["url"], cleared["name"]) == (
        None,
        "http://127.0.0.1:9/other",
        "gate",
    )
    assert api.put(path, {"policy_id": None}).status == 200


UPDATE_REFUSALS: list[tuple[dict[str, Any], str]] = [
    ({"name": None}, "name"),
    ({"name": ""}, "name"),
    ({"url": None}, "url"),
    ({"events": None}, "events"),
    ({"active": None}, "active"),
    ({"active": "maybe"}, "active"),
    ({"events": []}, "events"),
    ({"events": ["eval_run.completed", "runs.created"]}, "events.1"),
    ({"url": "ftp://127.0.0.1/hook"}, "url"),
    ({"url": "http://169.254.169.254/latest/meta-data"}, "url"),
    ({"url": "http://10.0.0.8/hook"}, "url"),
    ({"policy_id": "pol_0000000000000000"}, "policy_id"),
    ({"colour": "red"}, "colour"),
    ({"secret": "s" * 32}, "secret"),
    ({"project_id": "proj_0000000000000000"}, "project_id"),
]


def test_update_refusals_name_the_field_and_change_nothing(api: Any, hook: dict[str, Any]) -> None:
    path = f"/api/v1/webhooks/{hook['id']}"
    before = api.get(path).json
    for body, field in UPDATE_REFUSALS:
        refused = api.put(path, body)
        assert refused.status == 400, (body, refused)
        assert refused.code == "VALIDATION_FAILED"
        assert refused.json["error"]["meta"]["field"] == field, (body, refused)
    not_json = api.put(path, raw=b"{not json")
    assert not_json.status == 400
    assert api.get(path).json == before


def test_a_url_at_pawl_itself_is_refused_on_create_and_update(
    api: Any, project: dict[str, Any], hook: dict[str, Any], pawl_own_port: str
) -> None:
    path = f"/api/v1/webhooks/{hook['id']}"
    before = api.get(path).json
    for refused in (
        create(api, project["id"], url=pawl_own_port),
        api.put(path, {"url": pawl_own_port}),
    ):
        assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "url"
        assert OWN_ENDPOINT_MESSAGE in refused.json["error"]["message"]
    assert api.get(path).json == before


def test_the_secret_reads_back_and_rotation_replaces_it_at_once(
    api: Any, project: dict[str, Any]
) -> None:
    made = create(api, project["id"]).json
    secret_path = f"/api/v1/webhooks/{made['id']}/secret"
    shown = api.get(secret_path)
    assert shown.status == 200 and shown.json == {
        "webhook_id": made["id"],
        "secret": made["secret"],
    }

    rotated = api.post(f"/api/v1/webhooks/{made['id']}/rotate-secret")
    assert rotated.status == 200, rotated
    new = rotated.json["secret"]
    assert new.startswith("whsec_") and new != made["secret"]
    assert {k: v for k, v in rotated.json.items() if k not in {"secret", "updated_at"}} == {
        k: v for k, v in made.items() if k not in {"secret", "updated_at"}
    }
    assert api.get(secret_path).json["secret"] == new
    plain = api.get(f"/api/v1/webhooks/{made['id']}")
    assert "secret" not in plain.json and new not in plain.raw.decode()
    stored = WebhookModel.get(made["id"], consistent_read=True)
    assert new not in str(stored.secret) and made["secret"] not in str(stored.secret)


def test_another_projects_webhook_is_missing_on_every_new_route(
    api: Any, project_key: str, foreign: dict[str, Any]
) -> None:
    scoped = api.as_key(project_key)
    base = f"/api/v1/webhooks/{foreign['id']}"
    missing = base.replace(foreign["id"], "whk_0000000000000000")
    for method, suffix, body in (
        ("PUT", "", {"name": "stolen"}),
        ("GET", "/secret", None),
        ("POST", "/rotate-secret", None),
    ):
        hidden = scoped.request(method, base + suffix, body)
        absent = scoped.request(method, missing + suffix, body)
        assert hidden.status == absent.status == 404, (method, suffix, hidden)
        assert hidden.code == absent.code == "RESOURCE_NOT_FOUND"
        assert foreign["secret"] not in hidden.raw.decode()
    assert api.get(base).json == {k: v for k, v in foreign.items() if k != "secret"}
    assert api.get(f"{base}/secret").json["secret"] == foreign["secret"]


def test_reading_the_secret_is_its_own_action(
    api: Any, project: dict[str, Any], hook: dict[str, Any]
) -> None:
    document = {
        "statement": [
            {"effect": "Allow", "action": ["webhooks:*"]},
            {"effect": "Deny", "action": ["webhooks:GetWebhookSecret"]},
        ]
    }
    policy = api.post("/api/v1/policies", {"name": "no-secrets", "document": document}).json
    body = {"project_id": project["id"], "name": "reader", "policy_ids": [policy["id"]]}
    reader = api.as_key(api.post("/api/v1/api-keys", body).json["key"])
    assert reader.get(f"/api/v1/webhooks/{hook['id']}").status == 200
    denied = reader.get(f"/api/v1/webhooks/{hook['id']}/secret")
    assert denied.status == 404 and denied.code == "RESOURCE_NOT_FOUND"
    assert reader.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret").status == 200


def test_an_update_that_lost_a_race_writes_nothing(api: Any, hook: dict[str, Any]) -> None:
    from chalicelib.engine import webhooks as catalog
    from chalicelib.errors import PawlError
    from chalicelib.store import webhooks as store

    stale = store.get_webhook(hook["id"])
    assert api.put(f"/api/v1/webhooks/{hook['id']}", {"name": "first"}).status == 200
    with pytest.raises(PawlError) as lost:
        catalog.update_webhook(stale, {"name": "second", "active": False})
    assert (lost.value.status, lost.value.code) == (409, "CONCURRENT_UPDATE")
    shown = api.get(f"/api/v1/webhooks/{hook['id']}").json
    assert (shown["name"], shown["active"]) == ("first", True)
    api.delete(f"/api/v1/webhooks/{hook['id']}")
    with pytest.raises(PawlError) as gone:
        catalog.update_webhook(stale, {"name": "third"})
    assert gone.value.status == 404
