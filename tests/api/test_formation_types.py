"""Formation resource types beyond the suite: a webhook (write-only secret, replaced on
change) and a first deploy the platform refuses part-way (201, failed, walked back)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from chalicelib.errors import ConcurrentUpdate, NotFound
from chalicelib.store import formations as store

FORMATIONS = "/api/v1/formations"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "support-suite.yaml"
HOOK_TEMPLATE = {
    "parameters": {"HookSecret": {"no_echo": True}},
    "resources": {
        "Hook": {
            "type": "webhook",
            "properties": {
                "url": "http://127.0.0.1:9/hooks",
                "events": ["eval_run.*"],
                "secret": {"param": "HookSecret"},
            },
        }
    },
    "outputs": {"hook": {"ref": "Hook"}},
}
FIRST_SECRET = "first-secret-0123456789"
SECOND_SECRET = "second-secret-0123456789"


def _plan(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"{FORMATIONS}/plan", body)
    assert response.status == 200, response
    return dict(response.json["changes"][0])


def test_a_webhook_secret_is_write_only_and_a_change_replaces_it(
    api: Any, project: dict[str, Any]
) -> None:
    body = {"project_id": project["id"], "name": "hooks", "template": HOOK_TEMPLATE}
    created = api.post(FORMATIONS, {**body, "parameters": {"HookSecret": FIRST_SECRET}})
    assert created.status == 201 and created.json["status"] == "active", created
    formation = created.json
    first_hook = formation["outputs"]["hook"]
    assert formation["resolved_parameters"] == {"HookSecret": "***"}
    assert FIRST_SECRET not in created.raw.decode()
    assert api.get(f"/api/v1/webhooks/{first_hook}").status == 200

    same = _plan(api, {**body, "parameters": {"HookSecret": FIRST_SECRET}})
    assert same["action"] == "unchanged", same
    rotated = _plan(api, {**body, "parameters": {"HookSecret": SECOND_SECRET}})
    assert rotated["action"] == "update" and rotated["changed"] == ["secret"]
    assert rotated["diff"]["desired"]["secret"] == "********"
    assert SECOND_SECRET not in json.dumps(rotated)

    path = f"{FORMATIONS}/{formation['id']}"
    updated = api.put(
        path, {"template": HOOK_TEMPLATE, "parameters": {"HookSecret": SECOND_SECRET}}
    )
    assert updated.status == 200 and updated.json["status"] == "active", updated
    second_hook = updated.json["outputs"]["hook"]
    assert second_hook != first_hook  # no update route: replaced
    assert api.get(f"/api/v1/webhooks/{first_hook}").status == 404
    hooks = api.get(f"/api/v1/webhooks?project_id={project['id']}").json["data"]
    assert [h["id"] for h in hooks] == [second_hook]
    events = api.get(f"{path}/events").json["data"]
    assert SECOND_SECRET not in json.dumps(events) and FIRST_SECRET not in json.dumps(events)

    # A webhook URL pointing at a private address is refused by the webhook route itself.
    inward = copy.deepcopy(HOOK_TEMPLATE)
    inward["resources"]["Hook"]["properties"]["url"] = "http://169.254.169.254/latest"
    refused = api.put(path, {"template": inward, "parameters": {"HookSecret": SECOND_SECRET}})
    assert refused.json["status"] == "failed" and "url" in refused.json["error"]["message"]
    assert api.get(f"/api/v1/webhooks/{second_hook}").status == 200  # the old one stands


def test_a_first_deploy_refused_part_way_is_201_failed_and_walked_back(
    api: Any, project: dict[str, Any]
) -> None:
    template = yaml.safe_load(EXAMPLE.read_text())
    # The agent declares no output_schema: the eval's output_schema scorer is refused.
    template["resources"]["SupportEval"]["properties"]["scorers"] = [{"type": "output_schema"}]
    created = api.post(
        FORMATIONS, {"project_id": project["id"], "name": "suite", "template": template}
    )
    assert created.status == 201, created
    formation = created.json
    assert formation["status"] == "failed" and formation["outputs"] == {}
    assert formation["error"]["meta"]["logical_id"] == "SupportEval"
    assert formation["error"]["code"] == "VALIDATION_FAILED"
    standing = {r["logical_id"]: r["status"] for r in formation["resources"]}
    # The retained agent survives the rollback and stays recorded; the rest is deleted.
    assert standing.pop("SupportAgent") == "created"
    assert set(standing.values()) == {"deleted"}
    datasets = api.get(f"/api/v1/datasets?project_id={project['id']}").json["data"]
    assert datasets == []
    agents = api.get(f"/api/v1/agents?project_id={project['id']}").json["data"]
    assert [a["name"] for a in agents] == ["support-agent"]
    events = api.get(f"{FORMATIONS}/{formation['id']}/events").json["data"][0]["events"]
    kinds = [(e["logical_id"], e["action"], e["status"]) for e in events]
    assert ("SupportEval", "create", "failed") in kinds
    assert kinds[-1] == ("SupportAgent", "rollback-skipped", "succeeded")
    assert ("SupportCases", "rollback", "succeeded") in kinds

    # Corrected, the same formation adopts the retained agent rather than duplicating it.
    fixed = yaml.safe_load(EXAMPLE.read_text())
    again = api.put(f"{FORMATIONS}/{formation['id']}", {"template": fixed})
    assert again.json["status"] == "active", again
    assert again.json["outputs"]["agent_id"] == agents[0]["id"]
    assert len(api.get(f"/api/v1/agents?project_id={project['id']}").json["data"]) == 1


def _agent_template(token: str) -> dict[str, Any]:
    config = {
        "url": "http://127.0.0.1:9/agent",
        "headers": {"Authorization": token, "X-Team": "qa"},
    }
    return {
        "resources": {
            "Bot": {
                "type": "agent",
                "properties": {"name": "bot", "type": "http", "config": config},
            }
        }
    }


def test_secret_headers_are_never_shown_and_a_rotation_is_an_update(
    api: Any, project: dict[str, Any]
) -> None:
    body = {"project_id": project["id"], "name": "bot"}
    created = api.post(FORMATIONS, {**body, "template": _agent_template("Bearer one-0000")})
    assert created.status == 201 and created.json["status"] == "active", created
    assert "one-0000" not in created.raw.decode()
    shown = created.json["template"]["resources"]["Bot"]["properties"]["config"]["headers"]
    assert shown == {"Authorization": "********", "X-Team": "qa"}

    same = _plan(api, {**body, "template": _agent_template("Bearer one-0000")})
    assert same["action"] == "unchanged", same
    rotated = _plan(api, {**body, "template": _agent_template("Bearer two-0000")})
    assert rotated["action"] == "update" and rotated["changed"] == ["config"]
    assert "two-0000" not in json.dumps(rotated)

    path = f"{FORMATIONS}/{created.json['id']}"
    updated = api.put(path, {"template": _agent_template("Bearer two-0000")})
    assert updated.json["status"] == "active" and "two-0000" not in updated.raw.decode()
    agent_id = updated.json["resources"][0]["physical_resource_id"]
    assert api.get(f"/api/v1/agents/{agent_id}").json["version"] == 2
    assert _plan(api, {**body, "template": _agent_template("Bearer two-0000")})["action"] == (
        "unchanged"
    )
    events = api.get(f"{path}/events").json["data"]
    assert "two-0000" not in json.dumps(events) and "one-0000" not in json.dumps(events)


def test_a_stale_save_loses_and_a_deleted_formation_is_404(
    api: Any, project: dict[str, Any]
) -> None:
    body = {"project_id": project["id"], "name": "hooks", "template": HOOK_TEMPLATE}
    created = api.post(FORMATIONS, {**body, "parameters": {"HookSecret": FIRST_SECRET}}).json
    stale, version = store.get_formation(created["id"])
    path = f"{FORMATIONS}/{created['id']}"
    again = api.put(path, {"template": HOOK_TEMPLATE, "parameters": {"HookSecret": FIRST_SECRET}})
    assert again.json["status"] == "active"
    with pytest.raises(ConcurrentUpdate):
        store.save_formation(stale, version)
    assert api.delete(path).status == 204
    with pytest.raises(NotFound):
        store.save_formation(stale, version)
    assert api.get(f"/api/v1/webhooks?project_id={project['id']}").json["data"] == []
    # The name is free again.
    assert api.post(FORMATIONS, {**body, "parameters": {"HookSecret": FIRST_SECRET}}).status == 201


def test_a_trigger_is_declared_against_the_formation_eval(
    api: Any, project: dict[str, Any]
) -> None:
    template = yaml.safe_load(EXAMPLE.read_text())
    template["resources"]["Nightly"] = {
        "type": "trigger",
        "properties": {
            "name": "nightly-support",
            "type": "schedule",
            "target_type": "eval",
            "target_id": {"ref": "SupportEval"},
            "cron": "0 3 * * *",
        },
    }
    body = {"project_id": project["id"], "name": "suite", "template": template}
    created = api.post(FORMATIONS, body)
    assert created.status == 201 and created.json["status"] == "active", created
    by_name = {r["logical_id"]: r for r in created.json["resources"]}
    trigger_id = by_name["Nightly"]["physical_resource_id"]
    trigger = api.get(f"/api/v1/triggers/{trigger_id}").json
    assert trigger["target_id"] == created.json["outputs"]["eval_id"]
    assert trigger["cron"] == "0 3 * * *"
    same = api.post(f"{FORMATIONS}/plan", body | {"template": template}).json["changes"]
    assert {c["action"] for c in same} == {"unchanged"}, same

    template["resources"]["Nightly"]["properties"]["cron"] = "30 4 * * 1-5"
    changes = api.post(f"{FORMATIONS}/plan", body | {"template": template}).json["changes"]
    nightly = next(c for c in changes if c["logical_id"] == "Nightly")
    assert nightly["action"] == "update" and nightly["changed"] == ["cron"]
    path = f"{FORMATIONS}/{created.json['id']}"
    updated = api.put(path, {"template": template})
    assert updated.json["status"] == "active", updated
    assert api.get(f"/api/v1/triggers/{trigger_id}").json["cron"] == "30 4 * * 1-5"

    assert api.delete(path).status == 204  # the retained agent has no history: no blocker
    assert api.get(f"/api/v1/triggers/{trigger_id}").status == 404
