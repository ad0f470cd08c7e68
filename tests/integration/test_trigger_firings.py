"""Trigger firings: every starter type starts a queued run; schedules fire once per slot.

Real parts: moto, the app's own handlers (the scheduled one included), a real HTTP agent,
queues drained through the workers. Time is a fake clock moved by hand.
"""

from __future__ import annotations

import threading
from typing import Any

from chalicelib.engine.triggers import schedule
from chalicelib.store import triggers as trigger_store
from pawl.local.quiesce import Quiesce
from pawl.local.scheduler import Scheduler
from tests.support.drain import drain_queues
from tests.support.triggers import (
    FIRINGS,
    TRIGGERS,
    FakeClock,
    TriggerSuite,
    create_trigger,
    firings_of,
    runs_of,
)


def run(api: Any, suite: TriggerSuite, run_id: str) -> dict[str, Any]:
    response = api.get(f"{suite.runs_path}/{run_id}")
    assert response.status == 200, response
    return dict(response.json)


# --- manual -------------------------------------------------------------------------------


def test_manual_fire_starts_a_queued_run_that_keeps_its_trigger(
    api: Any, app: Any, suite: TriggerSuite
) -> None:
    trigger = create_trigger(api, suite, "manual", input={"agent_version": "latest"})
    firing = api.post(f"{TRIGGERS}/{trigger['id']}/fire", {"input": {"why": "release"}}).json
    assert firing["id"].startswith("trg_fire_") and firing["status"] == "succeeded"
    assert firing["source"] == "manual" and firing["error"] is None
    assert firing["input"] == {"agent_version": "latest", "why": "release"}
    assert firing["started_at"] and firing["completed_at"]
    result = firing["result"]
    assert result["target_type"] == "eval" and result["status"] == "queued"
    started = run(api, suite, result["result_id"])
    assert started["status"] == "queued" and started["trigger_id"] == trigger["id"]
    assert started["agent_version"] == suite.agent["version"]

    assert api.delete(f"{TRIGGERS}/{trigger['id']}").status == 204
    drain_queues(app)
    finished = run(api, suite, result["result_id"])
    assert finished["status"] == "completed" and finished["trigger_id"] == trigger["id"]
    assert len(suite.agent_server.requests) == 1  # the real agent answered the one item
    # The firing outlives its trigger, and still lists under it.
    assert api.get(f"{FIRINGS}/{firing['id']}").json == firing
    listed = firings_of(api, suite.project["id"], trigger["id"])
    assert [f["id"] for f in listed] == [firing["id"]]


def test_a_stale_agent_version_fails_the_firing_and_starts_nothing(
    api: Any, suite: TriggerSuite
) -> None:
    trigger = create_trigger(api, suite, "manual", input={"agent_version": 7})
    firing = api.post(f"{TRIGGERS}/{trigger['id']}/fire").json
    assert firing["status"] == "failed" and firing["result"] is None
    assert firing["error"]["meta"]["field"] == "agent_version"
    assert "has no version 7" in firing["error"]["message"]
    # A deleted target: the firing records it too.
    api.delete(f"/api/v1/evals/{suite.eval['id']}")
    gone = api.post(f"{TRIGGERS}/{trigger['id']}/fire", {"input": {"agent_version": 1}}).json
    assert gone["status"] == "failed" and gone["error"]["code"] == "TRIGGER_TARGET_NOT_FOUND"
    assert [f["status"] for f in firings_of(api, suite.project["id"])] == ["failed", "failed"]
    from chalicelib.store.models import RunModel

    assert RunModel.count() == 0


def test_latest_baseline_is_the_newest_completed_run(
    api: Any, app: Any, suite: TriggerSuite
) -> None:
    trigger = create_trigger(api, suite, "manual", input={"baseline_run_id": "latest"})
    first = api.post(f"{TRIGGERS}/{trigger['id']}/fire").json
    first_run = first["result"]["result_id"]
    assert run(api, suite, first_run)["baseline_run_id"] is None  # none completed yet
    drain_queues(app)
    second = api.post(f"{TRIGGERS}/{trigger['id']}/fire").json
    assert run(api, suite, second["result"]["result_id"])["baseline_run_id"] == first_run


def test_an_inactive_trigger_is_not_fired_by_hand(api: Any, suite: TriggerSuite) -> None:
    trigger = create_trigger(api, suite, "manual", active=False)
    refused = api.post(f"{TRIGGERS}/{trigger['id']}/fire")
    assert refused.status == 409 and refused.code == "TRIGGER_NOT_ACTIVE"
    active = create_trigger(api, suite, "manual", name="active")
    bad = api.post(f"{TRIGGERS}/{active['id']}/fire", {"input": {"agent_version": -1}})
    assert bad.status == 400 and bad.code == "TRIGGER_INPUT_INVALID"
    unknown = api.post(f"{TRIGGERS}/{active['id']}/fire", {"inputs": {}})
    assert unknown.status == 400 and unknown.json["error"]["meta"]["field"] == "inputs"
    assert firings_of(api, suite.project["id"]) == [] and runs_of(api, suite) == []


# --- schedule -----------------------------------------------------------------------------


def test_schedule_fires_its_slot_once_through_the_app_handler(
    api: Any, app: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "schedule", cron="*/5 * * * *")
    assert trigger["next_fire_at"] == "2026-12-01T10:05:00.000Z"
    # pawl serve's scheduler runs the very handler AWS runs every minute.
    local = Scheduler(app, quiesce=Quiesce(), now=fake_clock)
    assert "fire_due_triggers" in local.schedules
    fake_clock.advance(minutes=3)
    assert local.trigger("fire_due_triggers") == {"due": 0, "fired": [], "resumed": []}
    fake_clock.advance(minutes=2)  # 10:05:30
    report = local.trigger("fire_due_triggers")
    assert report["due"] == 1 and len(report["fired"]) == 1
    assert local.trigger("fire_due_triggers") == {"due": 0, "fired": [], "resumed": []}
    shown = api.get(f"{TRIGGERS}/{trigger['id']}").json
    assert shown["next_fire_at"] == "2026-12-01T10:10:00.000Z"
    firing = api.get(f"{FIRINGS}/{report['fired'][0]}").json
    assert firing["source"] == "schedule" and firing["status"] == "succeeded"
    started = run(api, suite, firing["result"]["result_id"])
    assert started["status"] == "queued" and started["trigger_id"] == trigger["id"]
    drain_queues(app)
    assert run(api, suite, started["id"])["status"] == "completed"


def test_three_missed_slots_coalesce_into_one_firing(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "schedule", cron="*/5 * * * *")
    # pawl was down across 10:05, 10:10 and 10:15; it comes back at 10:17.
    fake_clock.advance(minutes=16, seconds=30)
    first = schedule.fire_due()
    assert first.due == 1 and len(first.fired) == 1
    assert schedule.fire_due().fired == []
    shown = api.get(f"{TRIGGERS}/{trigger['id']}").json
    assert shown["next_fire_at"] == "2026-12-01T10:20:00.000Z"  # from now, not from the slot
    assert len(firings_of(api, suite.project["id"])) == 1 and len(runs_of(api, suite)) == 1
    fake_clock.advance(minutes=3)  # 10:20:00: the cadence resumes
    assert len(schedule.fire_due().fired) == 1
    assert len(runs_of(api, suite)) == 2


def test_two_schedulers_racing_on_one_slot_start_one_run(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "schedule", cron="*/5 * * * *")
    now = fake_clock.advance(minutes=5)
    # Both read the due slot before either claims it.
    seen_by_a = trigger_store.due_schedules("2026-12-01T10:05:30.000Z")
    seen_by_b = trigger_store.due_schedules("2026-12-01T10:05:30.000Z")
    assert seen_by_a == seen_by_b == [(trigger["id"], "2026-12-01T10:05:00.000Z")]
    fired_by_a = schedule.claim_and_fire(*seen_by_a[0], now)
    fired_by_b = schedule.claim_and_fire(*seen_by_b[0], now)
    assert fired_by_a is not None and fired_by_b is None
    assert len(runs_of(api, suite)) == 1

    # And truly concurrently, on the next slot.
    now = fake_clock.advance(minutes=5)
    reports: list[schedule.ScheduleReport] = []
    start = threading.Barrier(2)

    def scheduler() -> None:
        start.wait()
        reports.append(schedule.fire_due(now))

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(len(r.fired) for r in reports) == 1
    assert len(runs_of(api, suite)) == 2 and len(firings_of(api, suite.project["id"])) == 2


# --- event --------------------------------------------------------------------------------


def test_a_new_agent_version_fires_an_event_trigger(api: Any, suite: TriggerSuite) -> None:
    trigger = create_trigger(api, suite, "event", event_pattern="agent.version_created")
    other = create_trigger(api, suite, "event", name="runs-only", event_pattern="eval_run.*")
    agent_path = f"/api/v1/agents/{suite.agent['id']}"
    updated = api.put(agent_path, {"config": {"url": suite.agent_server.url, "timeout_s": 20}})
    assert updated.status == 200 and updated.json["version"] == 2
    firings = firings_of(api, suite.project["id"])
    assert [f["trigger_id"] for f in firings] == [trigger["id"]]
    assert firings[0]["source"] == "event" and firings[0]["status"] == "succeeded"
    assert firings[0]["input"]["event"] == "agent.version_created"
    assert firings[0]["input"]["data"]["version"] == 2
    started = run(api, suite, firings[0]["result"]["result_id"])
    assert started["agent_version"] == 2 and started["trigger_id"] == trigger["id"]
    assert firings_of(api, suite.project["id"], other["id"]) == []


def test_a_run_completing_chains_the_next_suite_and_a_loop_is_stopped(
    api: Any, app: Any, suite: TriggerSuite
) -> None:
    # "After any run of this eval completes, run it again": a loop, stopped on its first
    # recurrence.
    trigger = create_trigger(api, suite, "event", event_pattern="eval_run.completed")
    first = api.post(suite.runs_path, {}).json  # started through the API: no chain
    drain_queues(app)  # runs the first run, then the one its completion chained
    assert run(api, suite, first["id"])["status"] == "completed"
    # (The clock stands still here, so the two firings' order is not the point.)
    by_cause = {f["input"]["resource_id"]: f for f in firings_of(api, suite.project["id"])}
    assert len(by_cause) == 2
    chaining = by_cause.pop(first["id"])
    (refused,) = by_cause.values()
    assert chaining["status"] == "succeeded" and chaining["input"]["resource_id"] == first["id"]
    chained = run(api, suite, chaining["result"]["result_id"])
    assert chained["trigger_id"] == trigger["id"] and chained["status"] == "completed"
    # The chained run's completion names the trigger in its chain: refused, nothing started.
    assert refused["input"]["resource_id"] == chained["id"]
    assert refused["status"] == "failed" and refused["result"] is None
    assert refused["error"]["code"] == "TRIGGER_CAUSATION_LIMIT"
    assert refused["error"]["meta"]["causation"] == [trigger["id"]]
    assert len(runs_of(api, suite)) == 2


def test_an_update_racing_a_claim_does_not_rewind_the_schedule(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    from chalicelib.engine.triggers import service

    created = create_trigger(api, suite, "schedule", cron="*/5 * * * *")
    read_before_the_claim = trigger_store.get_trigger(created["id"])
    fake_clock.advance(minutes=5)
    assert len(schedule.fire_due().fired) == 1  # 10:05 fired; next is 10:10
    renamed = read_before_the_claim.spec().model_copy(update={"name": "renamed"})
    updated = service.update_trigger(read_before_the_claim, renamed)
    assert updated.name == "renamed" and updated.next_fire_at == "2026-12-01T10:10:00.000Z"
    assert schedule.fire_due().fired == []
    fake_clock.advance(minutes=5)
    assert len(schedule.fire_due().fired) == 1 and len(runs_of(api, suite)) == 2
