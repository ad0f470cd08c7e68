"""Trigger routes: CRUD, the secret's visibility, bad bodies, tenancy, the inbound webhook."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.engine.triggers.inbound import MAX_BODY_BYTES, signature
from tests.support.triggers import (
    FIRINGS,
    TRIGGERS,
    TriggerSuite,
    create_trigger,
    firings_of,
    runs_of,
    trigger_body,
)


def hook(api: Any, trigger_id: str, body: bytes, headers: dict[str, str]) -> Any:
    response = api.client.http.post(f"/hooks/triggers/{trigger_id}", headers=headers, body=body)
    payload = json.loads(response.body) if response.body else None
    return response.status_code, payload


def signed(secret: str, body: bytes, delivery: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "X-Pawl-Signature": signature(secret, body)}
    if delivery is not None:
        headers["X-Pawl-Delivery"] = delivery
    return headers


# --- CRUD ---------------------------------------------------------------------------------


def test_create_get_list_update_delete(api: Any, suite: TriggerSuite) -> None:
    created = create_trigger(api, suite, "schedule", cron="*/5  * * * *", input={"x": 1})
    assert created["id"].startswith("trg_") and created["secret"] is None
    assert created["cron"] == "*/5 * * * *"  # normalised
    assert created["next_fire_at"] == "2026-12-01T10:05:00.000Z"
    assert created["active"] is True and created["target_type"] == "eval"
    path = f"{TRIGGERS}/{created['id']}"
    shown = api.get(path).json
    assert shown == {k: v for k, v in created.items() if k != "secret"}
    listed = api.get(f"{TRIGGERS}?project_id={suite.project['id']}").json["data"]
    assert [t["id"] for t in listed] == [created["id"]]

    paused = api.request("PATCH", path, {"active": False})
    assert paused.status == 200 and paused.json["next_fire_at"] is None
    resumed = api.request("PATCH", path, {"active": True, "cron": "0 3 * * *"})
    assert resumed.json["next_fire_at"] == "2026-12-02T03:00:00.000Z"
    renamed = api.request("PATCH", path, {"name": "nightly", "description": "regression"})
    assert renamed.json["name"] == "nightly" and renamed.json["cron"] == "0 3 * * *"
    assert api.get(path).json == renamed.json

    assert api.delete(path).status == 204
    assert api.get(path).status == 404
    # The name is free again.
    assert api.post(TRIGGERS, trigger_body(suite, "manual", name="nightly")).status == 201


def test_webhook_secret_is_shown_on_create_rotate_and_get_secret_only(
    api: Any, suite: TriggerSuite
) -> None:
    created = create_trigger(api, suite, "webhook")
    secret = created["secret"]
    assert len(secret) == 64 and int(secret, 16) >= 0  # 32 random bytes, hex
    path = f"{TRIGGERS}/{created['id']}"
    assert "secret" not in api.get(path).json
    listed = api.get(f"{TRIGGERS}?project_id={suite.project['id']}")
    assert secret not in listed.raw.decode()
    assert api.get(f"{path}/secret").json == {"trigger_id": created["id"], "secret": secret}
    rotated = api.post(f"{path}/rotate-secret").json
    assert rotated["secret"] != secret and len(rotated["secret"]) == 64
    assert api.get(f"{path}/secret").json["secret"] == rotated["secret"]
    # Sealed at rest: the row does not hold it in clear.
    from chalicelib.store.models import TriggerModel

    stored = TriggerModel.get(created["id"]).secret
    assert stored and rotated["secret"] not in stored and stored.startswith("sb1.")
    manual = create_trigger(api, suite, "manual", name="by-hand")
    refused = api.get(f"{TRIGGERS}/{manual['id']}/secret")
    assert refused.status == 409 and refused.code == "TRIGGER_HAS_NO_SECRET"


def test_a_cron_that_never_comes_is_accepted_and_never_due(api: Any, suite: TriggerSuite) -> None:
    feb_30 = create_trigger(api, suite, "schedule", cron="0 0 30 2 *")
    assert feb_30["next_fire_at"] is None
    named = create_trigger(api, suite, "schedule", name="weekdays", cron="30 6 * jan-mar MON-FRI")
    assert named["next_fire_at"] == "2027-01-01T06:30:00.000Z"


def test_name_is_unique_in_the_project(api: Any, suite: TriggerSuite) -> None:
    create_trigger(api, suite, "manual", name="same")
    again = api.post(TRIGGERS, trigger_body(suite, "webhook", name="same"))
    assert again.status == 409 and again.code == "NAME_CONFLICT"


# --- bad bodies ---------------------------------------------------------------------------

BAD_PATTERN = "INVALID_EVENT_PATTERN"
BAD_CREATES: list[tuple[dict[str, Any], str, str]] = [
    ({"colour": "red"}, "colour", "VALIDATION_FAILED"),
    ({"type": "cron"}, "type", "VALIDATION_FAILED"),
    ({"target_type": "agent"}, "target_type", "TRIGGER_TARGET_NOT_SUPPORTED"),
    ({"target_type": "orchestration"}, "target_type", "TRIGGER_TARGET_NOT_SUPPORTED"),
    ({"target_id": "eval_missing"}, "target_id", "TRIGGER_TARGET_NOT_FOUND"),
    ({"target_id": "not-an-id"}, "target_id", "TRIGGER_TARGET_NOT_FOUND"),
    ({"cron": "0 3 * * *"}, "cron", "TRIGGER_ACTION_NOT_ALLOWED"),
    ({"type": "schedule"}, "cron", "TRIGGER_ACTION_NOT_ALLOWED"),
    ({"type": "schedule", "cron": "0 3 * * * *"}, "cron", "INVALID_CRON_EXPRESSION"),
    ({"type": "schedule", "cron": "0 25 * * *"}, "cron", "INVALID_CRON_EXPRESSION"),
    ({"type": "schedule", "cron": "0 3 * * 8"}, "cron", "INVALID_CRON_EXPRESSION"),
    ({"type": "schedule", "cron": "*/0 * * * *"}, "cron", "INVALID_CRON_EXPRESSION"),
    ({"type": "schedule", "cron": "@daily"}, "cron", "INVALID_CRON_EXPRESSION"),
    ({"type": "event", "event_pattern": "orders.shipped"}, "event_pattern", BAD_PATTERN),
    ({"type": "event"}, "event_pattern", "TRIGGER_ACTION_NOT_ALLOWED"),
    ({"event_pattern": "eval_run.*"}, "event_pattern", "TRIGGER_ACTION_NOT_ALLOWED"),
    ({"type": "event", "event_pattern": "eval_run.complete"}, "event_pattern", BAD_PATTERN),
    ({"type": "event", "event_pattern": "Eval Run!"}, "event_pattern", BAD_PATTERN),
    ({"action": "run"}, "action", "TRIGGER_ACTION_NOT_ALLOWED"),
    ({"policy_id": "pol_1"}, "policy_id", "VALIDATION_FAILED"),
    ({"input": {"agent_version": "two"}}, "input.agent_version", "TRIGGER_INPUT_INVALID"),
    ({"input": {"agent_version": 0}}, "input.agent_version", "TRIGGER_INPUT_INVALID"),
    ({"input": {"baseline_run_id": "yesterday"}}, "input.baseline_run_id", "TRIGGER_INPUT_INVALID"),
    ({"input": ["not", "an", "object"]}, "input", "VALIDATION_FAILED"),
    ({"active": "yes"}, "active", "VALIDATION_FAILED"),
    ({"name": ""}, "name", "VALIDATION_FAILED"),
]


def test_bad_creates_are_refused_with_the_reason_and_write_nothing(
    api: Any, suite: TriggerSuite
) -> None:
    for fields, field, code in BAD_CREATES:
        refused = api.post(TRIGGERS, trigger_body(suite, "manual", **fields))
        assert refused.status == 400, (fields, refused)
        assert refused.code == code, (fields, refused)
        assert refused.json["error"]["meta"]["field"] == field, (fields, refused)
    assert api.get(f"{TRIGGERS}?project_id={suite.project['id']}").json["data"] == []
    assert api.post(TRIGGERS, raw=b"{not json").status == 400


def test_bad_updates_are_refused_and_change_nothing(api: Any, suite: TriggerSuite) -> None:
    created = create_trigger(api, suite, "schedule", cron="0 3 * * *")
    path = f"{TRIGGERS}/{created['id']}"
    for fields, field in [
        ({"type": "webhook"}, "type"),
        ({"name": None}, "name"),
        ({"cron": None}, "cron"),
        ({"cron": "every day"}, "cron"),
        ({"event_pattern": "*"}, "event_pattern"),
        ({"target_type": "tool"}, "target_type"),
        ({"secret": "mine"}, "secret"),
    ]:
        refused = api.request("PATCH", path, fields)
        assert refused.status == 400, (fields, refused)
        assert refused.json["error"]["meta"]["field"] == field, (fields, refused)
    assert api.get(path).json == {k: v for k, v in created.items() if k != "secret"}


# --- tenancy ------------------------------------------------------------------------------


def test_a_foreign_project_key_is_refused_on_every_route(api: Any, suite: TriggerSuite) -> None:
    trigger = create_trigger(api, suite, "webhook")
    fired = api.post(f"{TRIGGERS}/{trigger['id']}/fire").json
    other = api.post("/api/v1/projects", {"name": "rival"}).json
    key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}).json["key"]
    rival = api.as_key(key)
    path = f"{TRIGGERS}/{trigger['id']}"
    for method, url in [
        ("GET", path),
        ("PATCH", path),
        ("DELETE", path),
        ("GET", f"{path}/secret"),
        ("POST", f"{path}/rotate-secret"),
        ("POST", f"{path}/fire"),
        ("GET", f"{FIRINGS}/{fired['id']}"),
    ]:
        refused = rival.request(method, url, {} if method in {"POST", "PATCH"} else None)
        assert refused.status == 404 and refused.code == "RESOURCE_NOT_FOUND", (method, url)
    mine = suite.project["id"]
    for url in [f"{TRIGGERS}?project_id={mine}", f"{FIRINGS}?project_id={mine}"]:
        assert rival.get(url).status == 403
    own_listing = rival.get(f"{FIRINGS}?trigger_id={trigger['id']}")
    assert own_listing.status == 200 and own_listing.json["data"] == []
    assert rival.post(TRIGGERS, trigger_body(suite)).status == 403
    # Its own project, but our eval as the target: a target it cannot see does not exist.
    foreign_target = rival.post(TRIGGERS, {**trigger_body(suite), "project_id": other["id"]})
    assert foreign_target.status == 400 and foreign_target.code == "TRIGGER_TARGET_NOT_FOUND"
    # Nothing changed: still there, same secret, one firing, one run.
    assert api.get(path).status == 200
    assert api.get(f"{path}/secret").json["secret"] == trigger["secret"]
    assert len(firings_of(api, mine)) == 1 and len(runs_of(api, suite)) == 1


# --- the inbound webhook ------------------------------------------------------------------


def test_inbound_webhook_refusals_write_nothing(api: Any, suite: TriggerSuite) -> None:
    trigger = create_trigger(api, suite, "webhook")
    secret, trigger_id = trigger["secret"], trigger["id"]
    body = b'{"ref": "main"}'
    manual = create_trigger(api, suite, "manual", name="by-hand")
    unknown = hook(api, "trg_doesnotexist", body, signed(secret, body))
    not_webhook = hook(api, manual["id"], body, signed(secret, body))
    malformed = hook(api, "nope", body, signed(secret, body))
    # 404 alike whether missing, of another type, or malformed: existence is not leaked.
    for status, payload in (unknown, not_webhook, malformed):
        assert status == 404 and payload["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert hook(api, trigger_id, body, {"Content-Type": "application/json"})[0] == 401
    assert hook(api, trigger_id, body, signed("0" * 64, body))[0] == 401
    assert hook(api, trigger_id, body, signed(secret, b'{"ref": "other"}'))[0] == 401
    bare = {"X-Pawl-Signature": signature(secret, body).removeprefix("sha256=")}
    assert hook(api, trigger_id, body, bare)[0] == 401
    status, payload = hook(api, trigger_id, b"{nope", signed(secret, b"{nope"))
    assert status == 400 and payload["error"]["code"] == "VALIDATION_FAILED"
    stale = b'{"agent_version": "soon"}'
    assert hook(api, trigger_id, stale, signed(secret, stale))[0] == 400
    big = b'{"pad": "' + b"x" * MAX_BODY_BYTES + b'"}'
    assert hook(api, trigger_id, big, signed(secret, big))[0] == 413
    api.request("PATCH", f"{TRIGGERS}/{trigger_id}", {"active": False})
    status, payload = hook(api, trigger_id, body, signed(secret, body))
    assert status == 409 and payload["error"]["code"] == "TRIGGER_NOT_ACTIVE"
    assert firings_of(api, suite.project["id"]) == [] and runs_of(api, suite) == []


def test_inbound_webhook_fires_once_per_delivery_id(api: Any, suite: TriggerSuite) -> None:
    trigger = create_trigger(api, suite, "webhook", input={"note": "static"})
    secret, trigger_id = trigger["secret"], trigger["id"]
    body = b'{"ref": "main", "note": "pushed"}'
    status, accepted = hook(api, trigger_id, body, signed(secret, body, delivery="d-1"))
    assert status == 202 and set(accepted) == {"firing_id", "trigger_id", "status"}
    assert accepted["trigger_id"] == trigger_id and accepted["status"] == "succeeded"
    again = hook(api, trigger_id, body, signed(secret, body, delivery="d-1"))
    assert again == (202, accepted)
    firing = api.get(f"{FIRINGS}/{accepted['firing_id']}").json
    assert firing["source"] == "webhook" and firing["input"] == {"note": "pushed", "ref": "main"}
    runs = runs_of(api, suite)
    assert [r["id"] for r in runs] == [firing["result"]["result_id"]]
    assert runs[0]["status"] == "queued" and runs[0]["trigger_id"] == trigger_id
    # The spec's header names work too; a new delivery id is a new firing.
    spec_headers = {"X-Soat-Signature": signature(secret, b"[1, 2]"), "X-Soat-Delivery": "d-2"}
    status, second = hook(api, trigger_id, b"[1, 2]", spec_headers)
    assert status == 202 and second["firing_id"] != accepted["firing_id"]
    assert api.get(f"{FIRINGS}/{second['firing_id']}").json["input"]["payload"] == [1, 2]
    # A rotated secret: the old one stops verifying at once.
    new_secret = api.post(f"{TRIGGERS}/{trigger_id}/rotate-secret").json["secret"]
    assert hook(api, trigger_id, body, signed(secret, body, delivery="d-3"))[0] == 401
    assert hook(api, trigger_id, body, signed(new_secret, body, delivery="d-3"))[0] == 202
    assert len(runs_of(api, suite)) == 3


def test_the_inbound_webhook_is_not_in_the_openapi_document(api: Any) -> None:
    paths = api.get("/api/v1/openapi.json").json["paths"]
    assert "/api/v1/triggers" in paths and "/api/v1/trigger-firings/{firing_id}" in paths
    assert not [p for p in paths if p.startswith("/hooks")]


def test_the_inbound_webhook_over_real_http() -> None:
    """Through the local HTTP front (as `pawl serve` and API Gateway pass it): raw bytes in."""
    import httpx

    from tests.conftest import ADMIN_KEY
    from tests.support.http_front import app_over_http

    with app_over_http() as server:
        base = server.url
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}

        def created(path: str, body: dict[str, Any]) -> dict[str, Any]:
            answer = httpx.post(f"{base}{path}", json=body, headers=admin)
            assert answer.status_code == 201, answer.text
            return dict(answer.json())

        pid = created("/api/v1/projects", {"name": "http"})["id"]
        agent = {"name": "a", "type": "http", "config": {"url": "http://127.0.0.1:9/a"}}
        agent_id = created("/api/v1/agents", {"project_id": pid, **agent})["id"]
        dataset_id = created("/api/v1/datasets", {"project_id": pid, "name": "d"})["id"]
        item = {"input": [{"role": "user", "content": "hi"}]}
        created(f"/api/v1/datasets/{dataset_id}/items", item)
        scorers = [{"type": "contains", "value": "x"}]
        ev = {"name": "e", "agent_id": agent_id, "dataset_id": dataset_id, "scorers": scorers}
        eval_id = created("/api/v1/evals", {"project_id": pid, **ev})["id"]
        trigger = created(
            "/api/v1/triggers",
            {"project_id": pid, "name": "ci", "type": "webhook", "target_type": "eval",
             "target_id": eval_id},
        )  # fmt: skip
        hook_url = f"{base}/hooks/triggers/{trigger['id']}"
        body = b'{"ref":  "main"}\n'  # signed as sent, whitespace included
        good = {"X-Pawl-Signature": signature(trigger["secret"], body), "X-Pawl-Delivery": "1"}
        refused = httpx.post(hook_url, content=body, headers={**good, "X-Pawl-Signature": "x"})
        assert refused.status_code == 401
        accepted = httpx.post(hook_url, content=body, headers=good)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["status"] == "succeeded"
        assert httpx.post(hook_url, content=body, headers=good).json() == accepted.json()
        runs = httpx.get(f"{base}/api/v1/evals/{eval_id}/runs", headers=admin).json()["data"]
        assert [r["trigger_id"] for r in runs] == [trigger["id"]]
