"""Firings a crash interrupted: taken over after the grace period, never starting two runs.

A crash is reproduced by doing what the firing path does up to the crash point (the same
store and engine calls) and then not doing the rest; the clock is a fake one.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from chalicelib import clock, ids
from chalicelib.engine.start import StartOptions, start_run
from chalicelib.engine.triggers import firing, hook_signature, inbound, schedule
from chalicelib.engine.triggers.inbound import signature
from chalicelib.store import evals
from chalicelib.store import triggers as store
from tests.support.triggers import (
    FIRINGS,
    TRIGGERS,
    FakeClock,
    TriggerSuite,
    create_trigger,
    runs_of,
)

PAST_GRACE_S = firing.FIRING_GRACE_S + 1


def crashed_after_recording(trigger_id: str, firing_id: str, claimed: bool = False) -> None:
    """The firing row was written (and maybe claimed), then the process died."""
    trigger = store.get_trigger(trigger_id)
    assert store.create_firing(store.firing_row(firing_id, trigger, "webhook", {}, []))
    if claimed:
        assert store.claim_firing(firing_id)


def crashed_after_accepting(trigger_id: str, headers: dict[str, str], body: bytes) -> str:
    """The inbound webhook wrote the request's firing and receipts, then the process died."""
    trigger = store.get_trigger(trigger_id)
    secret = store.read_secret(trigger_id)
    assert secret is not None
    now = clock.now()
    verified = hook_signature.verify(
        secret, headers["X-Pawl-Signature"], body, now=now.timestamp(), require_timestamp=False
    )
    keys = inbound.receipts(trigger_id, verified, headers["X-Pawl-Delivery"])
    row = store.firing_row(ids.new_id("trigger_firing"), trigger, "webhook", {}, [])
    window = timedelta(seconds=firing.REPLAY_WINDOW_S)
    assert store.create_receipted_firing(row, keys, clock.iso(now - window), now + window)
    return str(row.id)


def test_a_retried_delivery_after_a_crash_takes_the_firing_over(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    body = b"{}"
    headers = {"X-Pawl-Signature": signature(trigger["secret"], body), "X-Pawl-Delivery": "d-9"}
    firing_id = crashed_after_accepting(trigger["id"], headers, body)

    def call() -> dict[str, Any]:
        response = api.client.http.post(
            f"/hooks/triggers/{trigger['id']}", headers=headers, body=body
        )
        assert response.status_code == 202, response.body
        return dict(json.loads(response.body))

    # Within the grace period the first executor may still be at work: nothing is redone.
    assert call() == {"firing_id": firing_id, "trigger_id": trigger["id"], "status": "pending"}
    assert runs_of(api, suite) == []
    fake_clock.advance(seconds=PAST_GRACE_S)
    assert call()["status"] == "succeeded"
    assert call()["status"] == "succeeded"  # and only once
    runs = runs_of(api, suite)
    assert [r["id"] for r in runs] == [ids.derived_id("eval_run", firing_id)]


def test_the_sweep_finishes_a_firing_whose_run_was_already_written(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    firing_id = ids.new_id("trigger_firing")
    crashed_after_recording(trigger["id"], firing_id, claimed=True)
    run_id = ids.derived_id("eval_run", firing_id)
    options = StartOptions(trigger_id=trigger["id"], causation=(trigger["id"],), run_id=run_id)
    start_run(evals.get_eval(suite.eval["id"]), options)  # ... and died before recording it
    assert schedule.tick().resumed == []  # not yet stale
    fake_clock.advance(seconds=PAST_GRACE_S)
    assert schedule.tick().resumed == [firing_id]
    recovered = api.get(f"{FIRINGS}/{firing_id}").json
    assert recovered["status"] == "succeeded" and recovered["result"]["result_id"] == run_id
    assert [r["id"] for r in runs_of(api, suite)] == [run_id]
    assert schedule.tick().resumed == []


def test_a_stalled_firing_of_a_deleted_trigger_fails(
    api: Any, suite: TriggerSuite, fake_clock: FakeClock
) -> None:
    trigger = create_trigger(api, suite, "webhook")
    firing_id = ids.new_id("trigger_firing")
    crashed_after_recording(trigger["id"], firing_id)
    assert api.delete(f"{TRIGGERS}/{trigger['id']}").status == 204
    fake_clock.advance(seconds=PAST_GRACE_S)
    assert schedule.tick().resumed == [firing_id]
    failed = api.get(f"{FIRINGS}/{firing_id}").json
    assert failed["status"] == "failed" and failed["error"]["code"] == "RESOURCE_NOT_FOUND"
    assert runs_of(api, suite) == []
