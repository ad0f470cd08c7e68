"""Runs that stop when the answer is known, through real runs: a baseline run, then an
``early_stop`` run against it, the queues delivered as Lambda would, the scripted python agent
answering (it counts its calls per run).

An item ``flip:<text>`` passes on its first call (the baseline) and fails on later ones (the
candidate): a regression; ``echo:<text>`` passes in both."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chalicelib import aws, queues, wiring
from chalicelib.engine import early_stop, reaper, recovery
from chalicelib.settings import get_settings
from chalicelib.store import run_items, runs, skips
from tests.support import agents
from tests.support.drain import deliver, drain_queues, receive
from tests.support.runs import (
    Plugins,
    Suite,
    all_results,
    assert_counters_match_rows,
    make_suite,
)

IMPORT_CHUNK = 99


def _suite(api: Any, project: Any, name: str, lines: list[dict[str, Any]], **fields: Any) -> Suite:
    suite = make_suite(api, project, [], name=name, **fields)
    path = f"/api/v1/datasets/{suite.dataset['id']}/items:import"
    for start in range(0, len(lines), IMPORT_CHUNK):
        body = "\n".join(json.dumps(line) for line in lines[start : start + IMPORT_CHUNK])
        response = api.post(path, raw=body.encode())
        assert response.status == 201, response
    return suite


def _lines(items: int, regressed: int) -> list[dict[str, Any]]:
    return [{"input": f"flip:r{i}", "expected_output": f"r{i}"} for i in range(regressed)] + [
        {"input": f"echo:s{i}", "expected_output": f"s{i}"} for i in range(items - regressed)
    ]


def _finished(api: Any, app: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    started = api.post(suite.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    run: dict[str, Any] = api.get(suite.run_path(started.json["id"])).json
    assert run["status"] == "completed", run
    return run


def _calls(run_id: str) -> list[str]:
    with agents._lock:
        return [str(c["dataset_item_id"]) for c in agents.CALLS if c.get("run_id") == run_id]


def _gate(run: dict[str, Any]) -> dict[str, Any]:
    (reason,) = [r for r in run["verdict_reasons"] if r["gate"] == "max_regression"]
    return reason


def test_a_regressed_candidate_stops_early_and_skips_the_rest_without_calls(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "regress", _lines(400, regressed=120), max_regression=0.05)
    baseline = _finished(api, app, suite)
    run = _finished(api, app, suite, baseline_run_id=baseline["id"], early_stop=True)
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] == "regressed" and run["early_stop"]["decision"] == "regressed"
    ran = run["completed_count"] + run["errored_count"]
    assert stop["items_run"] == ran and stop["items_skipped"] == 400 - ran > 0
    assert stop["decided_after_items"] <= ran
    # No agent call for a skipped item: the agent saw exactly the items that ran, once each.
    called = _calls(run["id"])
    assert len(called) == len(set(called)) == ran
    results = all_results(api, suite, run["id"])
    assert len(results) == ran
    assert_counters_match_rows(run)  # skipped work has no row and counts in neither
    # The items that ran are the first of the seeded order: a random sample of the set.
    shards = runs.read_shards(run["id"])
    frozen = [
        i.dataset_item_id for page in run_items.iter_run_item_pages(run["id"], shards) for i in page
    ]
    assert set(called) == set(early_stop.shuffled(stop["seed"], frozen)[:ran])
    assert stop["seed"] == early_stop.derived_seed(run["id"])
    # The paired counts on the row match the recorded results (no scan made them).
    counts = stop["paired_counts"]
    assert sum(counts.values()) == ran and counts["regressed"] > 0
    # Every baseline item passed: a failed result regressed, a passed one passed in both.
    assert counts["regressed"] == sum(1 for r in results if r["passed"] is False)
    assert counts["both_passed"] == sum(1 for r in results if r["passed"] is True)
    reason = _gate(run)
    assert reason["conclusion"] == "regressed" and reason["passed"] is False
    assert reason["explanation"].startswith("stopped early: after")
    assert run["passed"] is False
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert stop["spend_saved_usd"] == 0.0  # the scripted agent reports no cost


def test_a_steady_candidate_stops_early_as_not_worse_with_a_given_seed(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "steady", _lines(400, regressed=0), max_regression=0.05)
    baseline = _finished(api, app, suite)
    body = {"baseline_run_id": baseline["id"], "early_stop": True, "early_stop_seed": 7}
    run = _finished(api, app, suite, **body)
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] == "not_worse" and stop["seed"] == 7
    ran = run["completed_count"] + run["errored_count"]
    assert 0 < stop["items_skipped"] == 400 - ran
    assert len(_calls(run["id"])) == ran
    reason = _gate(run)
    assert reason["conclusion"] == "not_worse" and reason["passed"] is True
    assert run["passed"] is True
    # Lists show it too (full and summary views read the same row attributes).
    for view in ("full", "summary"):
        listed = api.get(f"{suite.runs_path}?view={view}").json["data"]
        (shown,) = [r for r in listed if r["id"] == run["id"]]
        assert shown["early_stop"]["decision"] == "not_worse", view
        assert shown["early_stop"]["items_skipped"] == stop["items_skipped"]


def test_a_run_that_never_decides_runs_to_the_end(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    # 30 items, nothing changed: too few for either answer.
    suite = _suite(api, project, "short", _lines(30, regressed=0), max_regression=0.05)
    baseline = _finished(api, app, suite)
    run = _finished(api, app, suite, baseline_run_id=baseline["id"], early_stop=True)
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] is None and stop["items_skipped"] == 0
    assert run["completed_count"] == 30 and len(_calls(run["id"])) == 30
    assert "stopped_early" not in _gate(run)


def _decided_with_lost_work(api: Any, app: Any, suite: Suite) -> str:
    """An early-stop run whose test decided, and whose outstanding messages are then lost
    (kill -9 of the process that held them)."""
    baseline = _finished(api, app, suite)
    started = api.post(suite.runs_path, {"baseline_run_id": baseline["id"], "early_stop": True})
    run_id: str = started.json["id"]
    settings = get_settings()
    deliver(app, "fan_out_run", settings.run_queue, receive(settings.run_queue, 1))
    for _ in range(4):  # enough batches for the counts to decide, at a batch's first read
        deliver(app, "execute_items", settings.item_queue, receive(settings.item_queue, 9))
        state = runs.get_run(run_id)
        assert state.early_stop is not None
        if state.early_stop.stopped:
            break
    assert runs.get_run(run_id).early_stop.stopped  # type: ignore[union-attr]
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(settings.item_queue))
    assert runs.get_run(run_id).status == "running"
    return run_id


def _settled_after_loss(api: Any, suite: Suite, run_id: str, plugins: Plugins) -> None:
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "completed", run
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] == "regressed"
    assert stop["items_run"] + stop["items_skipped"] == 400
    assert len(_calls(run_id)) == stop["items_run"]
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_recovery_skips_the_lost_work_of_a_decided_run_and_it_settles(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "lost", _lines(400, regressed=120), max_regression=0.05)
    run_id = _decided_with_lost_work(api, app, suite)
    recovery.redrive_active_runs(after_restart=True)
    _settled_after_loss(api, suite, run_id, plugins)
    # Re-driving again changes nothing: every work item is recorded or skipped once.
    recovery.redrive_active_runs(after_restart=True)
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_the_reaper_settles_a_decided_run_whose_work_was_lost(
    api: Any, app: Any, project: Any, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite(api, project, "reaped", _lines(400, regressed=120), max_regression=0.05)
    run_id = _decided_with_lost_work(api, app, suite)
    monkeypatch.setenv("PAWL_RUN_GRACE_S", "0")
    wiring.reload_settings()
    try:
        assert get_settings().run_grace_s == 0
        report = reaper.reap()
    finally:
        monkeypatch.undo()
        wiring.reload_settings()
    assert report.settled == 1 and report.failed == 0
    _settled_after_loss(api, suite, run_id, plugins)


def test_spend_saved_is_the_average_cost_per_result_times_the_items_skipped(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    lines = [{"input": f"flip:r{i}", "expected_output": f"r{i}"} for i in range(120)] + [
        {"input": f"paid:s{i}", "expected_output": f"s{i}"} for i in range(280)
    ]
    suite = _suite(api, project, "paid", lines, max_regression=0.05)
    baseline = _finished(api, app, suite)
    run = _finished(api, app, suite, baseline_run_id=baseline["id"], early_stop=True)
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] == "regressed" and stop["items_skipped"] > 0
    spent = run["aggregate_scores"]["usage"]["total"]["cost_usd"]
    assert spent > 0
    assert stop["spend_saved_usd"] == round(spent / stop["items_run"] * stop["items_skipped"], 6)


def test_a_spent_budget_fails_the_run_as_before_with_the_early_stop_block(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    lines = [{"input": f"paid:s{i}", "expected_output": f"s{i}"} for i in range(200)]
    suite = _suite(api, project, "budget", lines, max_regression=0.05, max_concurrency=1)
    baseline = _finished(api, app, suite)
    body = {"baseline_run_id": baseline["id"], "early_stop": True, "max_cost_usd": 0.02}
    started = api.post(suite.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    run = api.get(suite.run_path(started.json["id"])).json
    assert run["status"] == "failed" and run["failure_code"] == "BUDGET_EXCEEDED", run
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] is None  # 20 paid items decide nothing; the rest never started
    assert len(_calls(run["id"])) < 200


def test_a_cancel_beats_the_decision_and_the_run_stays_cancelled(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "cancel", _lines(400, regressed=120), max_regression=0.05)
    baseline = _finished(api, app, suite)
    started = api.post(suite.runs_path, {"baseline_run_id": baseline["id"], "early_stop": True})
    run_id = started.json["id"]
    settings = get_settings()
    deliver(app, "fan_out_run", settings.run_queue, receive(settings.run_queue, 1))
    deliver(app, "execute_items", settings.item_queue, receive(settings.item_queue, 9))
    called = len(_calls(run_id))
    assert api.post(f"{suite.run_path(run_id)}/cancel").status == 200
    drain_queues(app)
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "canceled" and run["aggregate_scores"] is None
    assert run["early_stop"]["decision"] is None  # a cancelled run is not decided
    assert len(_calls(run_id)) == called
    assert plugins.events.of(run_id) == []


def _refused(api: Any, suite: Suite, body: dict[str, Any], needle: str) -> None:
    before = api.get(suite.runs_path).json["total"]
    refused = api.post(suite.runs_path, body)
    assert refused.status == 400, refused
    assert needle in json.dumps(refused.json["error"]), refused.json
    assert api.get(suite.runs_path).json["total"] == before  # nothing written


def test_bad_early_stop_bodies_are_refused_and_write_nothing(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "bodies", _lines(5, regressed=0), max_regression=0.05)
    baseline = _finished(api, app, suite)
    base = {"baseline_run_id": baseline["id"]}
    _refused(api, suite, {"early_stop": True}, "needs a baseline_run_id")
    _refused(api, suite, {**base, "early_stop": True, "wait": True}, "queued runs")
    _refused(api, suite, {**base, "early_stop": "yes"}, "early_stop")
    _refused(api, suite, {**base, "early_stop_seed": 3}, "only with early_stop: true")
    _refused(api, suite, {**base, "early_stop": True, "early_stop_seed": -1}, "early_stop_seed")
    _refused(api, suite, {**base, "early_stop": True, "early_stop_sed": 1}, "early_stop_sed")
    no_margin = _suite(api, project, "nomargin", _lines(5, regressed=0))
    other = _finished(api, app, no_margin)
    _refused(api, no_margin, {"baseline_run_id": other["id"], "early_stop": True}, "max_regression")
    trials = _suite(api, project, "trials", _lines(5, regressed=0), max_regression=0.05, trials=2)
    third = _finished(api, app, trials)
    _refused(api, trials, {"baseline_run_id": third["id"], "early_stop": True}, "2 trials")


@pytest.fixture
def eager_watch(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every look re-reads the run and every record commits at once: a batch sees the counts
    its own earlier items added, so the test can decide in the middle of a batch."""
    monkeypatch.setenv("PAWL_RUN_WATCH_REFRESH_S", "0")
    monkeypatch.setenv("PAWL_PROGRESS_FLUSH_S", "0")
    wiring.reload_settings()
    assert get_settings().run_watch_refresh_s == 0
    yield
    monkeypatch.undo()
    wiring.reload_settings()


def test_a_decision_in_the_middle_of_a_batch_drops_and_skips_the_rest_of_it(
    api: Any, app: Any, project: Any, plugins: Plugins, eager_watch: Any
) -> None:
    suite = _suite(
        api, project, "mid", _lines(400, regressed=160), max_regression=0.05, max_concurrency=1
    )
    baseline = _finished(api, app, suite)
    body = {"baseline_run_id": baseline["id"], "early_stop": True, "early_stop_seed": 11}
    run_id = api.post(suite.runs_path, body).json["id"]
    settings = get_settings()
    deliver(app, "fan_out_run", settings.run_queue, receive(settings.run_queue, 1))
    first = receive(settings.item_queue, 9)
    assert sum(len(json.loads(m["Body"])["work"]) for m in first) == 90
    deliver(app, "execute_items", settings.item_queue, first)
    state = runs.get_run(run_id)
    assert state.early_stop is not None and state.early_stop.decision == "regressed"
    # The batch's own run watch decided: its items not started were dropped (no call) and
    # marked skipped; those that ran are recorded.
    ran = state.recorded_count
    assert 0 < ran < 90 and state.early_stop.skipped == 90 - ran
    assert len(_calls(run_id)) == ran
    # Marking the same work again (a redelivered message) adds nothing.
    marked = list(skips.iter_skipped_keys(run_id, state.shards))
    assert len(marked) == 90 - ran and skips.skip(run_id, marked, state.shards) == 0
    again = runs.get_run(run_id)
    assert again.early_stop is not None and again.early_stop.skipped == 90 - ran
    drain_queues(app)
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "completed"
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["items_run"] == ran and stop["items_skipped"] == 400 - ran
    assert stop["decided_after_items"] <= ran and len(_calls(run_id)) == ran


def _early_stop_examples() -> list[dict[str, Any]]:
    """The ``json pawl-example`` blocks of docs/statistics.md whose run asks for early_stop."""
    text = (Path(__file__).parents[2] / "docs" / "statistics.md").read_text()
    blocks = re.findall(r"```json pawl-example\n(.*?)```", text, flags=re.DOTALL)
    examples = [json.loads(block) for block in blocks]
    return [e for e in examples if (e.get("run") or {}).get("early_stop")]


def _at(document: Any, path: str) -> Any:
    for name, index in re.findall(r"([^.\[\]]+)(?:\[(\d+)\])?", path):
        document = document[name]
        if index:
            document = document[int(index)]
    return document


def _pair_lines(pairs: dict[str, int]) -> list[dict[str, Any]]:
    """Items whose baseline and candidate outcomes are the pair named (the flip agent fails
    an item's second call; an expected output nothing answers fails both)."""
    assert pairs.get("fail->pass", 0) == 0, "the early-stop examples need no improvement"
    lines = [
        {"input": f"echo:a{i}", "expected_output": f"a{i}"} for i in range(pairs["pass->pass"])
    ]
    lines += [
        {"input": f"flip:b{i}", "expected_output": f"b{i}"} for i in range(pairs["pass->fail"])
    ]
    lines += [{"input": f"echo:c{i}", "expected_output": "no"} for i in range(pairs["fail->fail"])]
    return lines


@pytest.mark.parametrize("example", _early_stop_examples(), ids=lambda e: e["title"][:40])
def test_the_documented_early_stop_examples_hold(
    api: Any, app: Any, project: Any, plugins: Plugins, example: dict[str, Any]
) -> None:
    suite = _suite(api, project, "documented", _pair_lines(example["pairs"]), **example["eval"])
    baseline = _finished(api, app, suite)
    run = _finished(api, app, suite, baseline_run_id=baseline["id"], **example["run"])
    for path, expected in example["expect"].items():
        assert _at(run, path) == expected, path
    assert run["aggregate_scores"]["early_stop"]["items_skipped"] > 0
