"""A trigger fires as the key that bound it: every firing (schedule, webhook, event, manual)
re-checks that key's policies as they stand, and a deleted key or a binding now denied fails
the firing with the reason and starts nothing (docs/triggers.md, "Who a firing acts for").

Real parts: moto, the app's handlers (the scheduled one included), a real HTTP agent that
counts its calls, policies edited through the admin API. Time is a fake clock.
"""

from __future__ import annotations

from typing import Any

from pawl.local.quiesce import Quiesce
from pawl.local.scheduler import Scheduler
from tests.api.test_triggers import hook, signed
from tests.support.triggers import FIRINGS, TRIGGERS, FakeClock, TriggerSuite, runs_of, trigger_body

EVERYTHING = {"effect": "Allow", "action": ["*"], "resource": ["*"]}


def _binder(api: Any, project_id: str) -> tuple[Any, str, str]:
    """A project key allowed everything by one policy: (its client, the policy's id, its id)."""
    policy = api.post(
        "/api/v1/policies", {"name": "binder", "document": {"statement": [EVERYTHING]}}
    )
    assert policy.status == 201, policy
    key = api.post(
        "/api/v1/api-keys",
        {"project_id": project_id, "name": "ci", "policy_ids": [policy.json["id"]]},
    )
    assert key.status == 201, key
    return api.as_key(key.json["key"]), policy.json["id"], key.json["id"]


def _deny(api: Any, policy_id: str, actions: list[str], resource: str) -> None:
    statements = [EVERYTHING, {"effect": "Deny", "action": actions, "resource": [resource]}]
    changed = api.put(f"/api/v1/policies/{policy_id}", {"document": {"statement": statements}})
    assert changed.status == 200, changed


def _allow_all(api: Any, policy_id: str) -> None:
    changed = api.put(f"/api/v1/policies/{policy_id}", {"document": {"statement": [EVERYTHING]}})
    assert changed.status == 200, changed


def _created(client: Any, suite: TriggerSuite, kind: str, **fields: Any) -> dict[str, Any]:
    created = client.post(TRIGGERS, trigger_body(suite, kind, **fields))
    assert created.status == 201, created
    return dict(created.json)


def test_a_schedule_firing_re_checks_its_binder_and_a_denied_binding_starts_nothing(
    api: Any, app: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    pid = suite.project["id"]
    binder, policy_id, key_id = _binder(api, pid)
    trigger = _created(binder, suite, "schedule", cron="*/5 * * * *")
    assert (
        "bound_by_key_id" not in trigger
        and "bound_by_key_id" not in api.get(f"{TRIGGERS}/{trigger['id']}").json
    )
    agent_srn = f"srn:{pid}:agent:{suite.agent['id']}"
    _deny(api, policy_id, ["agents:*"], agent_srn)
    local = Scheduler(app, quiesce=Quiesce(), now=fake_clock)
    fake_clock.advance(minutes=5)
    [fired] = local.trigger("fire_due_triggers")["fired"]
    firing = api.get(f"{FIRINGS}/{fired}").json
    assert firing["status"] == "failed" and firing["result"] is None
    assert firing["error"]["code"] == "TRIGGER_BINDING_DENIED"
    assert firing["error"]["meta"]["key_id"] == key_id
    assert firing["error"]["meta"]["field"] == "agent_id"
    assert key_id in firing["error"]["message"] and "agent" in firing["error"]["message"]
    assert runs_of(api, suite) == [] and suite.agent_server.requests == []
    # Allowed again, the next slot starts its run: it was the policy that stopped it.
    _allow_all(api, policy_id)
    fake_clock.advance(minutes=5)
    [again] = local.trigger("fire_due_triggers")["fired"]
    assert api.get(f"{FIRINGS}/{again}").json["status"] == "succeeded"
    assert len(runs_of(api, suite)) == 1


def test_a_webhook_firing_whose_binder_was_deleted_fails_and_starts_nothing(
    api: Any, suite: TriggerSuite
) -> None:
    binder, _, key_id = _binder(api, suite.project["id"])
    trigger = _created(binder, suite, "webhook")
    assert api.delete(f"/api/v1/api-keys/{key_id}").status == 204
    body = b'{"ref": "main"}'
    status, accepted = hook(api, trigger["id"], body, signed(trigger["secret"], body, "d-1"))
    assert status == 202 and accepted["status"] == "failed"
    firing = api.get(f"{FIRINGS}/{accepted['firing_id']}").json
    assert firing["error"]["code"] == "TRIGGER_BINDING_KEY_DELETED"
    assert key_id in firing["error"]["message"] and "deleted" in firing["error"]["message"]
    assert runs_of(api, suite) == []
    # Re-bound by a key that may run the eval (here the admin key), it fires again.
    rebound = api.request("PATCH", f"{TRIGGERS}/{trigger['id']}", {"target_id": suite.eval["id"]})
    assert rebound.status == 200, rebound
    fresh = b'{"ref": "main", "retry": 1}'  # the same body would be a replay of the first
    status, second = hook(api, trigger["id"], fresh, signed(trigger["secret"], fresh, "d-2"))
    assert status == 202 and second["status"] == "succeeded"
    assert len(runs_of(api, suite)) == 1


def test_an_event_firing_needs_its_binder_to_still_run_the_eval(
    api: Any, suite: TriggerSuite
) -> None:
    pid = suite.project["id"]
    binder, policy_id, _ = _binder(api, pid)
    _created(binder, suite, "event", event_pattern="agent.version_created")
    _deny(api, policy_id, ["evaluations:RunEval"], f"srn:{pid}:eval:{suite.eval['id']}")
    agent_path = f"/api/v1/agents/{suite.agent['id']}"
    updated = api.put(agent_path, {"config": {"url": suite.agent_server.url, "timeout_s": 20}})
    assert updated.status == 200
    [firing] = api.get(f"{FIRINGS}?project_id={pid}").json["data"]
    assert firing["source"] == "event" and firing["status"] == "failed"
    assert firing["error"]["code"] == "TRIGGER_BINDING_DENIED"
    assert firing["error"]["meta"]["refusal"] == "FORBIDDEN"
    assert runs_of(api, suite) == []


def test_a_manual_firing_re_checks_the_binder_too_and_a_key_without_policies_is_unrestricted(
    api: Any, suite: TriggerSuite
) -> None:
    pid = suite.project["id"]
    binder, policy_id, _ = _binder(api, pid)
    trigger = _created(binder, suite, "manual")
    _deny(api, policy_id, ["evaluations:GetDataset"], f"srn:{pid}:dataset:*")
    denied = api.post(f"{TRIGGERS}/{trigger['id']}/fire", {}).json
    assert denied["status"] == "failed" and denied["error"]["code"] == "TRIGGER_BINDING_DENIED"
    plain = api.post("/api/v1/api-keys", {"project_id": pid, "name": "plain"}).json["key"]
    unrestricted = _created(api.as_key(plain), suite, "manual", name="plain-trigger")
    fired = api.post(f"{TRIGGERS}/{unrestricted['id']}/fire", {}).json
    assert fired["status"] == "succeeded", fired
    assert len(runs_of(api, suite)) == 1
