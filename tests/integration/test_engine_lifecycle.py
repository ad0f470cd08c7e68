"""Cancel, the reaper and recovery: every run ends, exactly once, with the right event."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import aws, queues, wiring
from chalicelib.engine import execute_item, messages, recovery
from chalicelib.engine.context import load_context
from chalicelib.plugins import manager
from chalicelib.settings import get_settings
from chalicelib.store import results as result_store
from chalicelib.store import run_items
from chalicelib.store import runs as run_store
from chalicelib.store.models import DeliveryModel, RunModel
from pawl.local import runtime
from tests.support import agents
from tests.support.drain import deliver, drain_queues, receive
from tests.support.runs import (
    Plugins,
    Suite,
    assert_counters_match_rows,
    make_suite,
)

#: A webhook nobody answers: these tests look at the delivery rows, never send.
HOOK_URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def no_grace(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every run counts as quiet: the reaper acts on whatever it finds."""
    monkeypatch.setenv("PAWL_RUN_GRACE_S", "0")
    wiring.reload_settings()
    # Read them now: chalice.test.Client swaps in the stage's environment (another table
    # prefix) during each request, and settings first read there would follow it.
    assert get_settings().run_grace_s == 0
    yield
    monkeypatch.undo()
    wiring.reload_settings()


@pytest.fixture
def one_item_per_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each work item in its own message, so a test can deliver or lose items one by one."""
    monkeypatch.setattr(messages, "WORK_PER_MESSAGE", 1)


def _start(api: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    response = api.post(suite.runs_path, body)
    assert response.status == 201, response
    return dict(response.json)


def _run(api: Any, suite: Suite, run_id: str) -> dict[str, Any]:
    return dict(api.get(suite.run_path(run_id)).json)


def _reap(app: Any) -> dict[str, int]:
    scheduled = {
        "version": "0",
        "id": "reaper-tick",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-01-01T00:00:00Z",
        "region": get_settings().region,
        "resources": [],
        "detail": {},
    }
    answer: dict[str, int] = app.handler_map["reap_quiet_runs"](scheduled, None)
    return answer


def _fan_out(app: Any) -> None:
    queue = get_settings().run_queue
    while messages := receive(queue, 1):
        deliver(app, "fan_out_run", queue, messages)


def _purge_items() -> None:
    """Lose every queued item message (a deployment whose messages went to a DLQ)."""
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(get_settings().item_queue))


# --- cancel -------------------------------------------------------------------------------------


def test_cancel_before_fan_out_drops_everything(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite, tool_context={"token": "s3cret"})
    cancelled = api.post(f"{suite.run_path(run['id'])}/cancel")
    assert cancelled.status == 200 and cancelled.json["status"] == "canceled"
    assert cancelled.json["aggregate_scores"] is None and cancelled.json["passed"] is None
    assert cancelled.json["finished_at"]
    drain_queues(app)
    assert agents.CALLS == [] and plugins.events.events == []
    assert run_store.get_run(run["id"]).tool_context == {}
    assert list(run_store.iter_active_run_ids()) == []
    assert api.post(f"{suite.run_path(run['id'])}/cancel").status == 400


def test_cancel_while_items_are_in_flight(
    api: Any, app: Any, project: Any, plugins: Plugins, one_item_per_message: None
) -> None:
    suite = make_suite(api, project, [("block", "released"), ("echo:b", "b"), ("echo:c", "c")])
    run = _start(api, suite)
    _fan_out(app)
    messages = receive(get_settings().item_queue, 10)
    blocking = [m for m in messages if '"block"' in m["Body"]]
    others = [m for m in messages if m not in blocking]
    worker = threading.Thread(
        target=deliver, args=(app, "execute_items", get_settings().item_queue, blocking)
    )
    worker.start()
    assert agents.wait_until_blocked(suite.items[0]["id"])  # executing in the agent now
    cancelled = api.post(f"{suite.run_path(run['id'])}/cancel").json
    assert cancelled["status"] == "canceled" and cancelled["completed_count"] == 0
    agents.RELEASE.set()
    worker.join(30)
    # The claimed item ran to completion and recounted the run; the rest were dropped.
    deliver(app, "execute_items", get_settings().item_queue, others)
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "canceled" and done["completed_count"] == 1
    assert done["aggregate_scores"] is None and done["passed"] is None
    assert len(agents.CALLS) == 1 and plugins.events.events == []
    assert_counters_match_rows(done)


# --- reaper -------------------------------------------------------------------------------------


def test_reaper_settles_a_fully_recorded_run_nobody_settled(
    api: Any, app: Any, project: Any, plugins: Plugins, no_grace: None
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "x")], pass_threshold=0.5)
    run = _start(api, suite)
    _fan_out(app)
    _purge_items()
    # A worker that recorded every item and died before claiming the settle.
    state = run_store.get_run(run["id"])
    ctx = load_context(state)
    for frozen in next(run_items.iter_run_item_pages(run["id"])):
        result_store.record(run["id"], [execute_item.execute(ctx, frozen, 1)])
    assert _run(api, suite, run["id"])["status"] == "running"
    assert _reap(app) == {"settled": 1, "failed": 0, "events_delivered": 0}
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["passed"] is True
    assert done["aggregate_scores"]["pass_rate"] == 0.5
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert _reap(app) == {"settled": 0, "failed": 0, "events_delivered": 0}


def test_reaper_fails_an_abandoned_run_once(
    api: Any, app: Any, project: Any, plugins: Plugins, one_item_per_message: None, no_grace: None
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = _start(api, suite, tool_context={"token": "s3cret"})
    _fan_out(app)
    messages = receive(get_settings().item_queue, 10)
    deliver(app, "execute_items", get_settings().item_queue, messages[:1])
    _purge_items()  # the other item's message is lost for good
    assert _reap(app)["failed"] == 1
    failed = _run(api, suite, run["id"])
    assert failed["status"] == "failed" and "1 of 2" in failed["failure_reason"]
    assert failed["failure_code"] == "RUN_STALLED"
    assert failed["aggregate_scores"] is None and failed["finished_at"]
    assert plugins.events.of(run["id"]) == ["eval_run.failed"]
    assert run_store.get_run(run["id"]).tool_context == {}
    assert _reap(app) == {"settled": 0, "failed": 0, "events_delivered": 0}
    assert plugins.events.of(run["id"]) == ["eval_run.failed"]


def test_reaper_leaves_runs_with_recent_activity_alone(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    _fan_out(app)
    assert _reap(app) == {"settled": 0, "failed": 0, "events_delivered": 0}
    assert _run(api, suite, run["id"])["status"] == "running"


def test_reaper_delivers_an_event_a_crash_interrupted(
    api: Any, app: Any, project: Any, plugins: Plugins, no_grace: None
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    _fan_out(app)
    _purge_items()
    # The terminal write happened, the process died before the sinks were called.
    assert run_store.settle(run["id"], "failed", failure_reason="simulated crash")
    assert plugins.events.events == []
    assert _reap(app)["events_delivered"] == 1
    assert plugins.events.of(run["id"]) == ["eval_run.failed"]
    assert list(run_store.iter_active_run_ids()) == []


# --- recovery -----------------------------------------------------------------------------------


def test_recovery_re_enqueues_lost_items(
    api: Any, app: Any, project: Any, plugins: Plugins, one_item_per_message: None
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b"), ("echo:c", "c")])
    run = _start(api, suite)
    _fan_out(app)
    messages = receive(get_settings().item_queue, 10)
    deliver(app, "execute_items", get_settings().item_queue, messages[:1])
    _purge_items()
    assert recovery.redrive_active_runs() == 1
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["completed_count"] == 3
    assert len(agents.CALLS) == 3  # only the two lost items ran again
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert recovery.redrive_active_runs() == 0


def test_recovery_hands_over_the_event_of_a_run_that_settled_just_before_a_crash(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    drain_queues(app)
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    # The state a crash between settling and emitting leaves: terminal, still in the index.
    RunModel(id=run["id"]).update(actions=[RunModel.active.set(run_store.ACTIVE_MARK)])
    assert recovery.redrive_active_runs() == 1
    assert plugins.events.of(run["id"]) == ["eval_run.completed"] * 2  # same event id
    assert recovery.redrive_active_runs() == 0  # out of the index again


def test_a_fresh_serve_process_hands_an_interrupted_event_to_the_webhook_sink_at_start(
    api: Any, app: Any, project: Any, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook_body = {"project_id": project["id"], "url": HOOK_URL, "events": ["eval_run.*"]}
    hook = api.post("/api/v1/webhooks", hook_body).json
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    drain_queues(app)
    # The state a kill between settling and emitting leaves: terminal, still in the index,
    # no delivery row yet.
    RunModel(id=run["id"]).update(actions=[RunModel.active.set(run_store.ACTIVE_MARK)])
    DeliveryModel(id=_delivery_ids(api, hook["id"])[0]).delete()
    # A fresh `pawl serve`: nothing has put the process together when start-up re-drives.
    monkeypatch.setattr(manager, "_factory", None)
    monkeypatch.setattr(manager, "_host", None)
    monkeypatch.setattr(wiring, "_services", None)
    assert runtime.redrive_in_flight_runs() == 1
    assert len(_delivery_ids(api, hook["id"])) == 1  # the built-in sink recorded it
    assert list(run_store.iter_active_run_ids()) == []


def _delivery_ids(api: Any, webhook_id: str) -> list[str]:
    response = api.get(f"/api/v1/webhook-deliveries?webhook_id={webhook_id}")
    assert response.status == 200, response
    return [d["id"] for d in response.json["data"]]


def test_recovery_after_a_restart_takes_over_a_settle_its_claimant_never_finished(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = _start(api, suite)
    drain_queues(app)
    # The state a crash right after claiming the settle leaves: every item recorded, the
    # settle claimed, the run still running and in the index.
    RunModel(id=run["id"]).update(
        actions=[
            RunModel.status.set("running"),
            RunModel.settle_claimed.set(True),
            RunModel.active.set(run_store.ACTIVE_MARK),
            RunModel.aggregate_scores.remove(),
        ]
    )
    assert recovery.redrive_active_runs() == 1
    drain_queues(app)
    assert _run(api, suite, run["id"])["status"] == "running"  # a live claimant may finish
    assert recovery.redrive_active_runs(after_restart=True) == 1  # nobody survived it
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["aggregate_scores"] is not None
    assert len(agents.CALLS) == 2  # nothing ran again
    assert recovery.redrive_active_runs() == 0


def test_recovery_resends_a_lost_fan_out(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(get_settings().run_queue))
    assert recovery.redrive_active_runs() == 1
    assert recovery.redrive_active_runs() == 1  # safe to repeat: duplicates are harmless
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["item_count"] == 1
    assert len(agents.CALLS) == 1 and plugins.events.of(run["id"]) == ["eval_run.completed"]
