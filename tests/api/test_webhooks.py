"""Webhook routes: create (secret shown once), get, list, delete, deliveries, and refusals."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.events import LifecycleEvent
from chalicelib.plugins.manager import plugins

HOOK_URL = "http://127.0.0.1:9/hook"


def create(api: Any, project_id: str, /, **fields: Any) -> Any:
    body = {"project_id": project_id, "url": HOOK_URL, "events": ["eval_run.*"], **fields}
    return api.post("/api/v1/webhooks", body)


def listed_ids(api: Any, project_id: str) -> list[str]:
    response = api.get(f"/api/v1/webhooks?project_id={project_id}")
    assert response.status == 200, response
    return [w["id"] for w in response.json["data"]]


def test_create_returns_a_generated_secret_once(api: Any, project: dict[str, Any]) -> None:
    created = create(api, project["id"], events=["eval_run.completed", "eval_run.completed"])
    assert created.status == 201, created
    hook = created.json
    assert hook["id"].startswith("whk_") and hook["secret"].startswith("whsec_")
    assert len(hook["secret"]) > 30
    assert hook["events"] == ["eval_run.completed"]  # a repeated pattern is kept once
    assert hook["url"] == HOOK_URL and hook["project_id"] == project["id"]
    shown = api.get(f"/api/v1/webhooks/{hook['id']}")
    assert shown.status == 200 and "secret" not in shown.json
    assert shown.json == {k: v for k, v in hook.items() if k != "secret"}
    page = api.get(f"/api/v1/webhooks?project_id={project['id']}").json
    assert [w["id"] for w in page["data"]] == [hook["id"]]
    assert all("secret" not in w for w in page["data"])
    assert hook["secret"] not in str(page) + shown.raw.decode()


def test_both_spellings_of_the_run_events_are_accepted_as_given(
    api: Any, project: dict[str, Any]
) -> None:
    # The module page says eval_runs.*; pawl emits eval_run.* (docs/webhooks.md).
    events = ["eval_runs.completed", "eval_run.completed", "eval_runs.*", "eval_run.failed"]
    created = create(api, project["id"], events=events)
    assert created.status == 201, created
    # A pattern repeated in the other spelling is kept once, as first spelt.
    assert created.json["events"] == ["eval_runs.completed", "eval_runs.*", "eval_run.failed"]
    typo = create(api, project["id"], events=["eval_runs.created"])
    assert typo.status == 400 and typo.json["error"]["meta"]["field"] == "events.0"


def test_caller_supplied_secret_is_echoed_only_at_creation(
    api: Any, project: dict[str, Any]
) -> None:
    created = create(api, project["id"], secret="my-own-secret-0123456789")
    assert created.status == 201 and created.json["secret"] == "my-own-secret-0123456789"
    assert "secret" not in api.get(f"/api/v1/webhooks/{created.json['id']}").json
    short = create(api, project["id"], secret="short")
    assert short.status == 400 and short.json["error"]["meta"]["field"] == "secret"


REFUSALS: list[tuple[dict[str, Any], str]] = [
    ({"events": []}, "events"),
    ({"events": ["eval_run.completed", "runs.created"]}, "events.1"),
    ({"events": ["*"]}, "events.0"),
    ({"events": "eval_run.*"}, "events"),
    ({"url": "ftp://127.0.0.1/hook"}, "url"),
    ({"url": "not a url"}, "url"),
    ({"url": "http://169.254.169.254/latest/meta-data"}, "url"),
    ({"url": "http://10.0.0.8/hook"}, "url"),
    ({"colour": "red"}, "colour"),
    ({"project_id": ""}, "project_id"),
]


def test_refusals_name_the_field_and_write_nothing(api: Any, project: dict[str, Any]) -> None:
    # One environment for every case: each refusal must leave the project without webhooks.
    for fields, field in REFUSALS:
        refused = create(api, project["id"], **fields)
        assert refused.status == 400, (fields, refused)
        assert refused.code == "VALIDATION_FAILED"
        assert refused.json["error"]["meta"]["field"] == field, (fields, refused)
    assert listed_ids(api, project["id"]) == []


def test_missing_body_fields_are_refused(api: Any, project: dict[str, Any]) -> None:
    refused = api.post("/api/v1/webhooks", {"project_id": project["id"]})
    assert refused.status == 400
    fields = {e["field"] for e in refused.json["error"]["meta"]["errors"]}
    assert fields == {"url", "events"}


def test_unknown_project_is_404(api: Any) -> None:
    missing = create(api, "proj_doesnotexist0000")
    assert missing.status == 404 and missing.code == "RESOURCE_NOT_FOUND"


def test_delete_then_get_is_404(api: Any, project: dict[str, Any]) -> None:
    hook = create(api, project["id"]).json
    assert api.delete(f"/api/v1/webhooks/{hook['id']}").status == 204
    assert api.get(f"/api/v1/webhooks/{hook['id']}").status == 404
    assert api.delete(f"/api/v1/webhooks/{hook['id']}").status == 404
    assert api.get(f"/api/v1/webhook-deliveries?webhook_id={hook['id']}").status == 404
    assert listed_ids(api, project["id"]) == []


def test_scoped_key_reaches_only_its_project(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = create(api, other["id"]).json
    scoped = api.as_key(project_key)

    mine = create(scoped, project["id"])
    assert mine.status == 201
    write_elsewhere = create(scoped, other["id"])
    assert write_elsewhere.status == 403 and write_elsewhere.code == "API_KEY_PROJECT_SCOPE"
    assert listed_ids(api, other["id"]) == [foreign["id"]]

    for path in (
        f"/api/v1/webhooks/{foreign['id']}",
        f"/api/v1/webhook-deliveries?webhook_id={foreign['id']}",
    ):
        hidden, missing = scoped.get(path), scoped.get(path.replace(foreign["id"], "whk_nope"))
        assert hidden.status == missing.status == 404
        assert hidden.code == missing.code == "RESOURCE_NOT_FOUND"
    assert scoped.delete(f"/api/v1/webhooks/{foreign['id']}").status == 404
    assert api.get(f"/api/v1/webhooks/{foreign['id']}").status == 200

    assert [w["id"] for w in scoped.get("/api/v1/webhooks").json["data"]] == [mine.json["id"]]
    cross_list = scoped.get(f"/api/v1/webhooks?project_id={other['id']}")
    assert cross_list.status == 403 and cross_list.code == "API_KEY_PROJECT_SCOPE"


def test_admin_listing_needs_project_id_and_pages(api: Any, project: dict[str, Any]) -> None:
    assert api.get("/api/v1/webhooks").json["error"]["meta"]["field"] == "project_id"
    made = [create(api, project["id"]).json["id"] for _ in range(3)]
    first = api.get(f"/api/v1/webhooks?project_id={project['id']}&limit=2").json
    second = api.get(
        f"/api/v1/webhooks?project_id={project['id']}&limit=2&cursor={first['next_cursor']}"
    ).json
    assert [w["id"] for w in first["data"] + second["data"]] == made
    assert second["next_cursor"] is None
    bad = api.get(f"/api/v1/webhooks?project_id={project['id']}&cursor=zzz")
    assert bad.status == 400 and bad.json["error"]["meta"]["field"] == "cursor"


def _event(project_id: str, n: int) -> LifecycleEvent:
    return LifecycleEvent(
        id=f"evt_{n:016d}",
        event="eval_run.failed" if n % 2 else "eval_run.completed",
        project_id=project_id,
        resource_type="eval_run",
        resource_id=f"evrun_{n:016d}",
        data={"id": f"evrun_{n:016d}", "status": "failed" if n % 2 else "completed"},
        timestamp="2026-01-31T12:00:00.000Z",
    )


def test_deliveries_list_newest_first_with_pages(api: Any, project: dict[str, Any]) -> None:
    hook = create(api, project["id"]).json
    only_failed = create(api, project["id"], events=["eval_run.failed"]).json
    for n in range(3):
        plugins().deliver_event(_event(project["id"], n))

    page = api.get(f"/api/v1/webhook-deliveries?webhook_id={hook['id']}&limit=2")
    assert page.status == 200, page
    rest = api.get(
        f"/api/v1/webhook-deliveries?webhook_id={hook['id']}&limit=2&cursor={page.json['next_cursor']}"
    ).json
    rows = page.json["data"] + rest["data"]
    assert sorted(r["event_type"] for r in rows) == [
        "eval_run.completed",
        "eval_run.completed",
        "eval_run.failed",
    ]
    assert len({r["id"] for r in rows}) == 3
    assert rows == sorted(rows, key=lambda r: r["created_at"], reverse=True)
    assert rest["next_cursor"] is None
    assert all(r["status"] == "pending" and r["attempts"] == 0 for r in rows)
    assert set(rows[0]) == {
        "id", "webhook_id", "event_type", "payload", "status", "status_code", "attempts",
        "last_attempt_at", "next_attempt_at", "response_body", "last_error", "redelivery_of",
        "created_at", "updated_at",
    }  # fmt: skip
    assert rows[0]["payload"]["resource_id"] == rows[0]["payload"]["data"]["id"]
    failed_only = api.get(f"/api/v1/webhook-deliveries?webhook_id={only_failed['id']}").json["data"]
    assert [r["event_type"] for r in failed_only] == ["eval_run.failed"]
    assert api.get(f"/api/v1/webhook-deliveries?webhook_id={hook['id']}&bogus=1").status == 400
