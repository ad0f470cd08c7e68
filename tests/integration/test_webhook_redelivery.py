"""Deliveries through the API: read one, list with filters, redeliver; ``active``; rotation.

Real parts end to end: the API (chalice's test client), the sink, moto's SQS, the delivery
worker's handler and a real HTTP receiver on 127.0.0.1 that verifies every signature
(``Receiver`` answers 401 to one that does not hold).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.outbound.policy import OWN_ENDPOINT_MESSAGE
from chalicelib.plugins.manager import plugins
from chalicelib.store.models import DeliveryModel
from chalicelib.webhooks import signing
from tests.integration.test_webhook_delivery import Receiver, drain, receive, run_event
from tests.support.servers import Server, allow_loopback_port, serve

DELIVERIES = "/api/v1/webhook-deliveries"


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_WEBHOOK_RETRY_BASE_S", "0")
    wiring.reload_settings()
    yield
    monkeypatch.delenv("PAWL_WEBHOOK_RETRY_BASE_S")
    wiring.reload_settings()


@pytest.fixture
def receiver(api: Any, fast_retries: None) -> Iterator[tuple[Receiver, Server]]:
    scripted = Receiver([500])
    with serve(scripted) as server:
        yield scripted, server


def subscribe(api: Any, project_id: str, receiver: Receiver, url: str) -> dict[str, Any]:
    created = api.post(
        "/api/v1/webhooks", {"project_id": project_id, "url": url, "events": ["eval_run.*"]}
    )
    assert created.status == 201, created
    receiver.secret = created.json["secret"]
    return dict(created.json)


def listed(api: Any, webhook_id: str, query: str = "") -> list[dict[str, Any]]:
    answer = api.get(f"{DELIVERIES}?webhook_id={webhook_id}{query}")
    assert answer.status == 200, answer
    return list(answer.json["data"])


def test_a_failed_delivery_is_redelivered_as_a_new_one(
    api: Any, project: dict[str, Any], receiver: tuple[Receiver, Server]
) -> None:
    scripted, server = receiver
    hook = subscribe(api, project["id"], scripted, f"{server.url}/hook")
    plugins().deliver_event(run_event(project["id"]))
    drain()
    [original] = listed(api, hook["id"])
    assert (original["status"], original["attempts"], original["status_code"]) == (
        "failed",
        3,
        500,
    )
    assert original["response_body"] == '{"ok": true}' and original["last_attempt_at"]
    assert original["next_attempt_at"] is None and original["redelivery_of"] is None
    assert api.get(f"{DELIVERIES}/{original['id']}").json == original

    scripted.statuses = [200]  # the receiver was fixed
    answer = api.post(f"{DELIVERIES}/{original['id']}/redeliver")
    assert answer.status == 202, answer
    again = answer.json
    assert again["id"] != original["id"] and again["status"] == "pending"
    assert (again["redelivery_of"], again["attempts"]) == (original["id"], 0)
    assert (again["payload"], again["event_type"]) == (original["payload"], original["event_type"])
    drain()

    done = api.get(f"{DELIVERIES}/{again['id']}").json
    assert (done["status"], done["attempts"], done["status_code"]) == ("success", 1, 200)
    assert api.get(f"{DELIVERIES}/{original['id']}").json == original  # history kept
    first, last = server.requests[0], server.requests[-1]
    assert last.body == first.body  # the stored payload, byte for byte
    assert last.headers[signing.DELIVERY_HEADER] == again["id"]
    assert scripted.verified[-1] is True
    assert [d["id"] for d in listed(api, hook["id"], "&status=failed")] == [original["id"]]
    assert [d["id"] for d in listed(api, hook["id"], "&status=success")] == [again["id"]]
    assert listed(api, hook["id"], "&status=pending") == []


def test_rotation_signs_every_later_attempt_with_the_new_secret_only(
    api: Any, project: dict[str, Any], receiver: tuple[Receiver, Server]
) -> None:
    scripted, server = receiver
    scripted.statuses = [200]
    hook = subscribe(api, project["id"], scripted, f"{server.url}/hook")
    plugins().deliver_event(run_event(project["id"]))
    rotated = api.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret").json["secret"]
    drain()  # the receiver still holds the old secret: every attempt is refused
    [pending] = listed(api, hook["id"])
    assert (pending["status"], pending["status_code"]) == ("failed", 401)
    assert scripted.verified == [False] * 3

    scripted.secret = rotated
    redelivered = api.post(f"{DELIVERIES}/{pending['id']}/redeliver").json
    drain()
    assert api.get(f"{DELIVERIES}/{redelivered['id']}").json["status"] == "success"
    assert scripted.verified[-1] is True and len(server.requests) == 4


def test_an_inactive_webhook_is_not_delivered_to(
    api: Any, project: dict[str, Any], receiver: tuple[Receiver, Server]
) -> None:
    scripted, server = receiver
    scripted.statuses = [200]
    hook = subscribe(api, project["id"], scripted, f"{server.url}/hook")
    path = f"/api/v1/webhooks/{hook['id']}"
    plugins().deliver_event(run_event(project["id"], n=1))  # recorded while active
    assert api.put(path, {"active": False}).json["active"] is False
    drain()
    [unsent] = listed(api, hook["id"])
    assert (unsent["status"], unsent["attempts"]) == ("failed", 0)
    assert unsent["last_error"] == "webhook was deactivated before delivery"
    plugins().deliver_event(run_event(project["id"], n=2))  # inactive: nothing recorded
    assert len(listed(api, hook["id"])) == 1 and receive() == []

    refused = api.post(f"{DELIVERIES}/{unsent['id']}/redeliver")
    assert refused.status == 409 and refused.code == "WEBHOOK_NOT_ACTIVE", refused
    assert len(listed(api, hook["id"])) == 1 and receive() == []
    assert server.requests == []

    api.put(path, {"active": True})
    assert api.post(f"{DELIVERIES}/{unsent['id']}/redeliver").status == 202
    drain()
    assert [d["status"] for d in listed(api, hook["id"])] == ["success", "failed"]


def test_redelivery_goes_through_the_outbound_guard_again(
    api: Any, project: dict[str, Any], fast_retries: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted = Receiver([200])
    with serve(scripted) as server:  # serve() allow-lists its port while it runs
        hook = subscribe(api, project["id"], scripted, f"{server.url}/hook")
        plugins().deliver_event(run_event(project["id"]))
        drain()
        [sent] = listed(api, hook["id"])
    # The port is off the allow-list again: the stored URL is refused now.
    refused = api.post(f"{DELIVERIES}/{sent['id']}/redeliver")
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "url"
    # ... and so is one that became pawl's own endpoint, allow-listed or not.
    monkeypatch.setenv("PAWL_RESERVED_ENDPOINTS", f"127.0.0.1:{server.port}")
    with allow_loopback_port(server.port):
        own = api.post(f"{DELIVERIES}/{sent['id']}/redeliver")
    monkeypatch.delenv("PAWL_RESERVED_ENDPOINTS")
    wiring.reload_settings()
    assert own.status == 400 and OWN_ENDPOINT_MESSAGE in own.json["error"]["message"]
    assert [d["id"] for d in listed(api, hook["id"])] == [sent["id"]]  # nothing written
    assert receive() == [] and len(server.requests) == 1


def test_deliveries_of_another_project_are_missing_and_queries_are_checked(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    body = {"project_id": other["id"], "url": "http://127.0.0.1:9/h", "events": ["eval_run.*"]}
    foreign = api.post("/api/v1/webhooks", body).json
    plugins().deliver_event(run_event(other["id"]))
    [delivery] = listed(api, foreign["id"])
    scoped = api.as_key(project_key)
    for method, path in (
        ("GET", f"{DELIVERIES}?webhook_id={foreign['id']}"),
        ("GET", f"{DELIVERIES}/{delivery['id']}"),
        ("POST", f"{DELIVERIES}/{delivery['id']}/redeliver"),
    ):
        hidden = scoped.request(method, path)
        absent = scoped.request(method, path.replace(delivery["id"], "whdl_0000000000000000"))
        if "webhook_id=" in path:
            absent = scoped.request(method, path.replace(foreign["id"], "whk_0000000000000000"))
        assert hidden.status == absent.status == 404, (method, path, hidden)
        assert hidden.code == absent.code == "RESOURCE_NOT_FOUND"
        assert "eval_run" not in hidden.raw.decode()
    assert DeliveryModel.count() == 1  # the refused redelivery wrote nothing

    for query, field in (
        ("", "webhook_id"),
        (f"?webhook_id={foreign['id']}&status=succeeded", "status"),
        (f"?webhook_id={foreign['id']}&bogus=1", "bogus"),
        ("?webhook_id=not-an-id", "webhook_id"),
    ):
        refused = api.get(DELIVERIES + query)
        assert refused.status == 400, (query, refused)
        assert refused.json["error"]["meta"]["field"] == field, (query, refused)


def test_a_delivery_outlives_its_webhook_but_cannot_be_redelivered(
    api: Any, project: dict[str, Any]
) -> None:
    body = {"project_id": project["id"], "url": "http://127.0.0.1:9/h", "events": ["eval_run.*"]}
    hook = api.post("/api/v1/webhooks", body).json
    plugins().deliver_event(run_event(project["id"]))
    [delivery] = listed(api, hook["id"])
    assert api.delete(f"/api/v1/webhooks/{hook['id']}").status == 204
    assert api.get(f"{DELIVERIES}/{delivery['id']}").json["id"] == delivery["id"]  # history
    gone = api.post(f"{DELIVERIES}/{delivery['id']}/redeliver")
    assert gone.status == 404 and gone.json["error"]["meta"]["id"] == hook["id"], gone
    assert DeliveryModel.count() == 1
    assert api.get(f"{DELIVERIES}?webhook_id={hook['id']}").status == 404
