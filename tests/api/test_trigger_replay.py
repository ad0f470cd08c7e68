"""The inbound trigger webhook accepts a request once: both signature forms, the 24 h window,
``require_timestamp``, and two copies racing each other over real HTTP."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from chalicelib.domain.triggers import HookAccepted
from chalicelib.engine.triggers import firing, hook_signature, inbound
from tests.support.triggers import (
    FIRINGS,
    TRIGGERS,
    FakeClock,
    TriggerSuite,
    create_trigger,
    firings_of,
    runs_of,
)

BODY = b'{"ref": "main"}'


def post_hook(api: Any, trigger_id: str, body: bytes, headers: dict[str, str]) -> Any:
    sent = {"Content-Type": "application/json", **headers}
    response = api.client.http.post(f"/hooks/triggers/{trigger_id}", headers=sent, body=body)
    return response.status_code, json.loads(response.body) if response.body else None


def body_only(secret: str, body: bytes = BODY, **extra: str) -> dict[str, str]:
    return {"X-Pawl-Signature": hook_signature.body_only(secret, body), **extra}


def stamped(secret: str, at: int, body: bytes = BODY, **extra: str) -> dict[str, str]:
    return {"X-Pawl-Signature": hook_signature.timestamped(secret, body, at), **extra}


def now_s(clock: FakeClock) -> int:
    return int(clock().timestamp())


def test_a_replayed_body_only_request_answers_the_original_firing(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    tid, secret = trigger["id"], trigger["secret"]
    status, first = post_hook(api, tid, BODY, body_only(secret))
    assert status == 202 and first["status"] == "succeeded"
    for _ in range(4):  # the review's five sends of one captured request
        assert post_hook(api, tid, BODY, body_only(secret)) == (202, first)
    # A changed delivery id does not make the same body-only signature new.
    again = post_hook(api, tid, BODY, body_only(secret, **{"X-Pawl-Delivery": "other"}))
    assert again == (202, first)
    spec_names = {"X-Soat-Signature": hook_signature.body_only(secret, BODY)}
    assert post_hook(api, tid, BODY, spec_names) == (202, first)
    assert [f["id"] for f in firings_of(api, suite.project["id"])] == [first["firing_id"]]
    assert len(runs_of(api, suite)) == 1


def test_a_repeated_delivery_id_answers_the_original_firing_whatever_the_body(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    tid, secret = trigger["id"], trigger["secret"]
    status, first = post_hook(api, tid, BODY, body_only(secret, **{"X-Pawl-Delivery": "d-1"}))
    assert status == 202
    other = b'{"ref": "main", "retry": 2}'  # a sender that re-serialized its retry
    retried = post_hook(api, tid, other, body_only(secret, other, **{"X-Pawl-Delivery": "d-1"}))
    assert retried == (202, first)
    fake_clock.advance(seconds=30)  # the same delivery, timestamped at its retry
    timed = stamped(secret, now_s(fake_clock), **{"X-Pawl-Delivery": "d-1"})
    assert post_hook(api, tid, BODY, timed) == (202, first)
    assert len(runs_of(api, suite)) == 1


def test_the_body_only_window_is_24_hours_and_nothing_after_it(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    tid, secret = trigger["id"], trigger["secret"]
    first = post_hook(api, tid, BODY, body_only(secret))[1]
    fake_clock.advance(seconds=firing.REPLAY_WINDOW_S - 1)
    assert post_hook(api, tid, BODY, body_only(secret)) == (202, first)
    fake_clock.advance(seconds=2)  # past the window: moto keeps the row, the window is a compare
    status, later = post_hook(api, tid, BODY, body_only(secret))
    assert status == 202 and later["firing_id"] != first["firing_id"]
    assert post_hook(api, tid, BODY, body_only(secret)) == (202, later)
    assert len(runs_of(api, suite)) == 2


def test_a_timestamped_request_fires_once_and_a_new_timestamp_fires_again(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    tid, secret = trigger["id"], trigger["secret"]
    sent_at = now_s(fake_clock)
    status, first = post_hook(api, tid, BODY, stamped(secret, sent_at))
    assert status == 202 and first["status"] == "succeeded"
    fake_clock.advance(seconds=hook_signature.TOLERANCE_S - 5)  # still inside the tolerance
    assert post_hook(api, tid, BODY, stamped(secret, sent_at)) == (202, first)
    status, second = post_hook(api, tid, BODY, stamped(secret, now_s(fake_clock)))
    assert status == 202 and second["firing_id"] != first["firing_id"]
    # Outside the tolerance, either side of the server's clock: refused, nothing written.
    fake_clock.advance(seconds=10)
    for at in (sent_at, now_s(fake_clock) + hook_signature.TOLERANCE_S + 1):
        status, refused = post_hook(api, tid, BODY, stamped(secret, at))
        assert status == 401 and refused["error"]["code"] == "INVALID_SIGNATURE"
        assert "timestamp" in refused["error"]["message"]
    # A wrong digest with a fresh timestamp tells nothing about the timestamp.
    forged = {"X-Pawl-Signature": f"t={now_s(fake_clock)},v1={'0' * 64}"}
    status, refused = post_hook(api, tid, BODY, forged)
    assert status == 401 and "invalid signature" in refused["error"]["message"]
    # Several v1 entries (a sender rotating secrets): one matching is enough.
    at = now_s(fake_clock)
    two = f"t={at},v1={'0' * 64},v1={hook_signature.timestamped(secret, BODY, at).split('v1=')[1]}"
    assert post_hook(api, tid, BODY, {"X-Pawl-Signature": two})[0] == 202
    assert len(firings_of(api, suite.project["id"])) == len(runs_of(api, suite)) == 3


def test_require_timestamp_refuses_the_body_only_form(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    plain = create_trigger(api, suite, "webhook", name="plain")
    assert plain["require_timestamp"] is False
    strict = create_trigger(api, suite, "webhook", name="strict", require_timestamp=True)
    tid, secret = strict["id"], strict["secret"]
    assert api.get(f"{TRIGGERS}/{tid}").json["require_timestamp"] is True
    status, refused = post_hook(api, tid, BODY, body_only(secret))
    assert status == 401 and refused["error"]["code"] == "INVALID_SIGNATURE"
    assert "requires a timestamped signature" in refused["error"]["message"]
    assert firings_of(api, suite.project["id"]) == [] and runs_of(api, suite) == []
    assert post_hook(api, tid, BODY, stamped(secret, now_s(fake_clock)))[0] == 202
    # Turned off again, the body-only form works: the default keeps SOAT's senders working.
    assert api.request("PATCH", f"{TRIGGERS}/{tid}", {"require_timestamp": False}).status == 200
    assert post_hook(api, tid, BODY, body_only(secret))[0] == 202
    assert len(runs_of(api, suite)) == 2


def test_require_timestamp_is_a_webhook_field_and_never_null(api: Any, suite: TriggerSuite) -> None:
    refused = api.post(
        TRIGGERS,
        {
            "project_id": suite.project["id"],
            "name": "m",
            "type": "manual",
            "target_type": "eval",
            "target_id": suite.eval["id"],
            "require_timestamp": True,
        },
    )
    assert refused.status == 400 and refused.code == "TRIGGER_ACTION_NOT_ALLOWED"
    assert refused.json["error"]["meta"]["field"] == "require_timestamp"
    webhook = create_trigger(api, suite, "webhook")
    for value in (None, "yes"):
        answer = api.request("PATCH", f"{TRIGGERS}/{webhook['id']}", {"require_timestamp": value})
        assert answer.status == 400 and answer.json["error"]["meta"]["field"] == "require_timestamp"
    assert api.get(f"{TRIGGERS}/{webhook['id']}").json["require_timestamp"] is False


def test_copies_of_one_request_racing_each_other_start_one_run(
    api: Any, suite: TriggerSuite
) -> None:
    """Copies received at once, each by its own executor (as concurrent Lambda invocations
    take them; the local front runs one request at a time, so the race is driven through
    the handler's engine entry point): one firing, one run, every copy answered with it."""
    trigger = create_trigger(api, suite, "webhook")
    copies, rounds = 8, 5
    for round_no in range(rounds):
        body = json.dumps({"round": round_no}).encode()
        headers = [body_only(trigger["secret"], body, **{"X-Pawl-Delivery": f"{round_no}-{i}"})
                   for i in range(copies)]  # fmt: skip
        answers = _race(trigger["id"], body, headers)
        assert len(answers) == copies and len({a.firing_id for a in answers}) == 1, answers
    firings = firings_of(api, suite.project["id"])
    assert len(firings) == len(runs_of(api, suite)) == rounds


def _race(trigger_id: str, body: bytes, headers: list[dict[str, str]]) -> list[HookAccepted]:
    answers: list[HookAccepted] = []
    failures: list[BaseException] = []
    start = threading.Barrier(len(headers))

    def receive(sent: dict[str, str]) -> None:
        start.wait(timeout=30)
        try:
            answers.append(inbound.receive(trigger_id, sent, body))
        except BaseException as exc:  # reported below, with the answers
            failures.append(exc)

    threads = [threading.Thread(target=receive, args=(h,)) for h in headers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    return answers


def test_a_replayed_request_over_real_http_answers_the_original_firing() -> None:
    from tests.conftest import ADMIN_KEY
    from tests.support.http_front import app_over_http

    with app_over_http() as server:
        base, admin = server.url, {"Authorization": f"Bearer {ADMIN_KEY}"}
        eval_id, trigger = _webhook_trigger_over_http(base, admin)
        url = f"{base}/hooks/triggers/{trigger['id']}"
        signed = {"Content-Type": "application/json", **body_only(trigger["secret"])}
        first = httpx.post(url, content=BODY, headers=signed)
        assert first.status_code == 202, first.text
        for delivery in ("a", "b"):
            again = httpx.post(url, content=BODY, headers={**signed, "X-Pawl-Delivery": delivery})
            assert again.status_code == 202 and again.json() == first.json()
        runs = httpx.get(f"{base}/api/v1/evals/{eval_id}/runs", headers=admin).json()["data"]
        assert [r["id"] for r in runs] == [
            httpx.get(f"{base}{FIRINGS}/{first.json()['firing_id']}", headers=admin).json()[
                "result"
            ]["result_id"]
        ]


def _webhook_trigger_over_http(base: str, admin: dict[str, str]) -> tuple[str, dict[str, Any]]:
    def created(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(f"{base}{path}", json=body, headers=admin)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    pid = created("/api/v1/projects", {"name": "race"})["id"]
    agent = {"name": "a", "type": "http", "config": {"url": "http://127.0.0.1:9/a"}}
    agent_id = created("/api/v1/agents", {"project_id": pid, **agent})["id"]
    dataset_id = created("/api/v1/datasets", {"project_id": pid, "name": "d"})["id"]
    created(f"/api/v1/datasets/{dataset_id}/items", {"input": [{"role": "user", "content": "x"}]})
    scorers = [{"type": "contains", "value": "x"}]
    ev = {"name": "e", "agent_id": agent_id, "dataset_id": dataset_id, "scorers": scorers}
    eval_id = created("/api/v1/evals", {"project_id": pid, **ev})["id"]
    trigger = created(
        TRIGGERS,
        {"project_id": pid, "name": "ci", "type": "webhook", "target_type": "eval",
         "target_id": eval_id},
    )  # fmt: skip
    return eval_id, trigger
