"""Early stop and the sliced settle on write-sharded runs (issue 26 part 6, issue 27 parts 1-3).

The two features were built beside write sharding, each on an unsharded run. Here both run
on runs whose rows, frozen items and counters are spread over several hash keys
(``PAWL_RUN_SHARD_ITEMS`` lowered): an early-stop run's paired counts and skips land on
its counter rows, its looks see their sums, its skip markers live in its items' shards,
and its settle claim folds them; a sliced settle reads each item range from every shard
and equals a one-pass settle of the same run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.engine import settle
from chalicelib.settings import get_settings
from chalicelib.store import results, run_counters, run_items, runs, skips
from chalicelib.store import shards as sharding
from chalicelib.store.models import FrozenItemModel, RunModel
from tests.support.drain import deliver, drain_queues, receive
from tests.support.runs import Plugins, Suite, assert_counters_match_rows, make_suite

IMPORT_CHUNK = 99


@pytest.fixture
def sharded(api: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # 50 work items a shard: a run of 400 items gets 8 shards, one of 60 (x2 trials) 3.
    monkeypatch.setenv("PAWL_RUN_SHARD_ITEMS", "50")
    wiring.reload_settings()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_SETTLE_FANOUT_ITEMS", "10")
    monkeypatch.setenv("PAWL_SETTLE_SLICE_ITEMS", "12")
    wiring.reload_settings()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


def _imported_suite(api: Any, project: Any, lines: list[dict[str, Any]], **fields: Any) -> Suite:
    suite = make_suite(api, project, [], **fields)
    path = f"/api/v1/datasets/{suite.dataset['id']}/items:import"
    for start in range(0, len(lines), IMPORT_CHUNK):
        body = "\n".join(json.dumps(line) for line in lines[start : start + IMPORT_CHUNK])
        assert api.post(path, raw=body.encode()).status == 201
    return suite


def _regressing_lines(items: int, regressed: int) -> list[dict[str, Any]]:
    return [{"input": f"flip:r{i}", "expected_output": f"r{i}"} for i in range(regressed)] + [
        {"input": f"echo:s{i}", "expected_output": f"s{i}"} for i in range(items - regressed)
    ]


def _pairs_on_run_row(run_id: str) -> int:
    row = RunModel.get(run_id, consistent_read=True)
    names = ("pair_both", "pair_improved", "pair_regressed", "pair_neither")
    return sum(int(getattr(row, name) or 0) for name in names)


def test_an_early_stop_run_on_a_sharded_run_looks_at_summed_counts_and_settles(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite = _imported_suite(api, project, _regressing_lines(400, 120), max_regression=0.05)
    baseline = api.post(suite.runs_path, {}).json
    drain_queues(app)
    body = {"baseline_run_id": baseline["id"], "early_stop": True, "early_stop_seed": 3}
    run_id = api.post(suite.runs_path, body).json["id"]
    settings = get_settings()
    deliver(app, "fan_out_run", settings.run_queue, receive(settings.run_queue, 1))
    shards = runs.read_shards(run_id)
    assert shards == 8
    # The shuffled, id-only work names the run's shards, so a worker finds its keys.
    first = receive(settings.item_queue, 3)
    assert all(json.loads(m["Body"])["shards"] == shards for m in first)
    deliver(app, "execute_items", settings.item_queue, first)

    # Before the settle claim the paired counts are on the counter rows only; a look (the
    # run watch's read, a batch's first read) sees their sums.
    recorded = sum(1 for _ in results.iter_result_keys(run_id, shards))
    assert recorded > 0 and _pairs_on_run_row(run_id) == 0
    watched = runs.read_watch(run_id)
    assert watched is not None and watched.early_stop is not None
    assert watched.recorded == recorded
    assert sum(watched.early_stop.pairs.values()) == recorded
    state = runs.get_run(run_id)
    assert state.early_stop is not None and state.early_stop.pairs == watched.early_stop.pairs

    drain_queues(app)
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "completed", run
    stop = run["aggregate_scores"]["early_stop"]
    assert stop["decision"] == "regressed"
    ran = run["completed_count"] + run["errored_count"]
    assert stop["items_skipped"] == 400 - ran > 0
    assert sum(stop["paired_counts"].values()) == ran
    assert_counters_match_rows(run)
    # The claim folded the counter rows onto the run row, pairs and skips among them.
    row = RunModel.get(run_id, consistent_read=True)
    assert row.counters_folded and int(row.skipped_count) == 400 - ran
    assert _pairs_on_run_row(run_id) == ran
    sums = run_counters.read(run_id, shards)
    assert sums["skipped_count"] == 400 - ran and sums["recorded_count"] == 400
    # Skip markers live in their items' shards (none under the bare run id), and the
    # frozen set's readers leave them out.
    marked = list(skips.iter_skipped_keys(run_id, shards))
    assert len(marked) == 400 - ran
    for key in marked:
        item_id = key.rpartition("#")[0]
        partition = sharding.item_partition(run_id, item_id, shards)
        assert FrozenItemModel.get(partition, f"skip#{key}").run_id == partition
    assert not list(FrozenItemModel.query(run_id))
    frozen = [i for page in run_items.iter_run_item_pages(run_id, shards) for i in page]
    assert len(frozen) == 400
    # A redelivered drop adds nothing.
    assert skips.skip(run_id, marked, shards) == 0
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def _cases(count: int) -> list[Any]:
    cases: list[Any] = []
    for n in range(count):
        kind = {"kind": "ab"[n % 2]} if n % 5 else {}
        pick = n % 4
        if pick == 0:
            cases.append((f"echo:{n}", "no", kind))
        elif pick == 1:
            cases.append(("fail", None, kind))
        elif pick == 2:
            cases.append((f"flip:{n}", str(n), kind))
        else:
            cases.append((f"echo:{n}", str(n), kind))
    return cases


def test_a_sliced_settle_of_a_sharded_run_equals_one_pass(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None, small_slices: None
) -> None:
    suite = make_suite(api, project, _cases(60), group_by="kind", trials=2, max_regression=0.5)
    baseline_id = api.post(suite.runs_path, {}).json["id"]
    drain_queues(app)
    candidate_id = api.post(suite.runs_path, {"baseline_run_id": baseline_id}).json["id"]
    run_queue, item_queue = get_settings().run_queue, get_settings().item_queue
    deliver(app, "fan_out_run", run_queue, receive(run_queue, 1))
    while batch := receive(item_queue, 9):
        deliver(app, "execute_items", item_queue, batch)
    assert runs.read_shards(candidate_id) == 3  # 120 work items, 50 a shard
    sliced = receive(run_queue, 1000)
    assert len(sliced) == 10 and all("settle_slice" in json.loads(m["Body"]) for m in sliced)
    for message in sliced:
        deliver(app, "fan_out_run", run_queue, [message])

    for run_id in (baseline_id, candidate_id):
        state = runs.get_run(run_id)
        assert state.status == "completed" and state.shards == 3
        assert plugins.events.of(run_id) == ["eval_run.completed"]
        one_pass = settle.Settlement(state=runs.get_run(run_id))
        settle.aggregate_and_compare(one_pass)
        settle.decide_verdict(one_pass)
        assert state.run.aggregate_scores == one_pass.aggregate
        assert state.run.verdict_reasons == one_pass.verdict_reasons
    comparison = runs.get_run(candidate_id).run.aggregate_scores["baseline"]  # type: ignore[index]
    # Every item but the 15 that error in both runs (errors are not compared).
    assert comparison["run_id"] == baseline_id and comparison["compared_item_count"] == 45


def test_a_recount_of_a_sharded_early_stop_run_counts_its_skip_markers_once(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None, monkeypatch: Any
) -> None:
    suite = _imported_suite(api, project, _regressing_lines(400, 120), max_regression=0.05)
    baseline = api.post(suite.runs_path, {}).json
    drain_queues(app)
    # Every worker records and skips, none claims: the run is left as a dead worker (one
    # that wrote a row and died before counting it) would leave it.
    claims: list[str] = []
    monkeypatch.setattr(settle, "maybe_settle", lambda run_id, *_: claims.append(run_id))
    body = {"baseline_run_id": baseline["id"], "early_stop": True, "early_stop_seed": 5}
    run_id = api.post(suite.runs_path, body).json["id"]
    drain_queues(app)
    monkeypatch.undo()
    state = runs.get_run(run_id)
    assert state.shards == 8 and state.early_stop is not None and state.early_stop.stopped
    assert state.all_recorded and not state.settle_claimed
    # Nothing fell behind: the rows and the markers are what the counters hold.
    assert not settle.recount(state, complete_only=False)
    before = run_counters.read(run_id, 8)
    counter_rows = [
        row
        for key in sharding.counter_keys(run_id, 8)
        for row in RunModel.batch_get([key], consistent_read=True)
    ]
    row = next(r for r in counter_rows if int(r.completed_count or 0) > 0)
    row.update(actions=[RunModel.completed_count.add(-1), RunModel.recorded_count.add(-1)])
    state = runs.get_run(run_id)
    assert not state.all_recorded
    assert settle.recount(state)
    after = run_counters.read(run_id, 8)
    assert after.values == before.values  # the row counted again, the markers not twice
    settle.maybe_settle(run_id, 8, 400)
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "completed", run
    assert_counters_match_rows(run)
    assert run["aggregate_scores"]["early_stop"]["items_skipped"] == before["skipped_count"]
