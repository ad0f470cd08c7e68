"""Write-sharded runs (``store.shards``): exactly-once, counters, paging and settling across
shards, and old unsharded runs still read as baselines.

``PAWL_RUN_SHARD_ITEMS`` is lowered so a run of a few items gets several shards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.engine import execute_item, fanout, recovery, settle
from chalicelib.engine.context import load_context
from chalicelib.settings import get_settings
from chalicelib.store import outcome_rows, results, run_counters, run_items
from chalicelib.store import runs as run_store
from chalicelib.store import shards as sharding
from chalicelib.store.models import FrozenItemModel, ResultModel, RunModel
from tests.support.drain import deliver, drain_queues, receive
from tests.support.refusals import REFUSED_BY_THE_TEST, refusal
from tests.support.runs import (
    Plugins,
    all_results,
    assert_counters_match_rows,
    make_suite,
    result_row_count,
)

ITEMS = 12


@pytest.fixture
def sharded(api: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Three work items per shard: a run of 12 items gets 4 shards.
    monkeypatch.setenv("PAWL_RUN_SHARD_ITEMS", "3")
    wiring.reload_settings()
    yield
    monkeypatch.delenv("PAWL_RUN_SHARD_ITEMS")
    wiring.reload_settings()


def _suite(api: Any, project: Any, items: int = ITEMS) -> Any:
    # The agent echoes n; the probe scorer passes an output equal to the expected one:
    # every other item fails.
    cases: list[Any] = [(f"echo:{i}", str(i) if i % 2 == 0 else "other") for i in range(items)]
    return make_suite(api, project, cases)


def _queued_run(api: Any, app: Any, suite: Any, **body: Any) -> str:
    run = api.post(suite.runs_path, body).json
    drain_queues(app)
    return str(run["id"])


def _fanned_out(api: Any, app: Any, project: Any) -> tuple[Any, Any]:
    """A queued run of the suite whose fan-out has run (its work waits on the item queue)."""
    suite = _suite(api, project)
    run = api.post(suite.runs_path, {}).json
    queue = get_settings().run_queue
    deliver(app, "fan_out_run", queue, receive(queue, 1))
    return suite, run


def _execute_one_message(app: Any) -> None:
    item_queue = get_settings().item_queue
    deliver(app, "execute_items", item_queue, receive(item_queue, 1))


def _assert_settled_whole(final: Any) -> None:
    assert final["status"] == "completed", final
    assert final["passed_count"] == final["failed_count"] == ITEMS // 2
    assert_counters_match_rows(final)


def test_shard_count_and_keys_are_stable() -> None:
    assert sharding.shard_count(0, per_shard=1000, most=16) == 1
    assert sharding.shard_count(1000, per_shard=1000, most=16) == 1
    assert sharding.shard_count(1001, per_shard=1000, most=16) == 2
    assert sharding.shard_count(10**6, per_shard=1000, most=16) == 16
    # CRC-32, not hash(): the same shard in every process and release.
    assert sharding.shard_of("dsit_0123456789abcdef", 7) == 1
    assert sharding.partition("evrun_x", 0, 1) == "evrun_x"  # one shard: today's key
    assert sharding.partition("evrun_x", 2, 4) == "evrun_x#2"
    assert sharding.run_id_of("evrun_x#2") == "evrun_x"
    assert sharding.counter_key("evrun_x", 0, 1) == "evrun_x"
    assert sharding.counter_key("evrun_x", 3, 4) == "evrun_x#counters#3"


def test_a_sharded_run_spreads_its_rows_and_settles_with_counters_matching_rows(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite = _suite(api, project)
    run_id = _queued_run(api, app, suite)
    run = api.get(suite.run_path(run_id)).json
    assert run["status"] == "completed", run
    assert run["item_count"] == ITEMS and run["completed_count"] == ITEMS
    assert run["passed_count"] == ITEMS // 2 and run["failed_count"] == ITEMS // 2
    assert_counters_match_rows(run)
    row = RunModel.get(run_id, consistent_read=True)
    assert int(row.shards) == 4 and row.counters_folded
    # Every row is under its item's shard key; every shard holds some.
    by_key: dict[str, int] = {}
    for key in sharding.partitions(run_id, 4):
        for model in ResultModel.query(key):
            assert model.run_id == sharding.item_partition(run_id, model.dataset_item_id, 4)
            by_key[key] = by_key.get(key, 0) + 1
    assert sum(by_key.values()) == ITEMS and len(by_key) > 1
    assert not list(ResultModel.query(run_id))  # nothing under the bare run id
    frozen = [m for key in sharding.partitions(run_id, 4) for m in FrozenItemModel.query(key)]
    assert frozen and all("#" in m.run_id for m in frozen)
    # The aggregate came from every shard.
    assert run["aggregate_scores"]["scored_item_count"] == ITEMS
    assert run["aggregate_scores"]["pass_rate"] == 0.5


def test_results_page_across_shards_in_item_order_with_stable_validated_cursors(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite = _suite(api, project)
    run_id = _queued_run(api, app, suite)
    whole = all_results(api, suite, run_id, limit=100)
    assert len(whole) == ITEMS
    ids = [r["dataset_item_id"] for r in whole]
    assert ids == sorted(ids)  # item order, as an unsharded run lists
    paged = all_results(api, suite, run_id, limit=5)
    assert [r["id"] for r in paged] == [r["id"] for r in whole]
    first = api.get(f"{suite.run_path(run_id)}/results?limit=5").json
    assert first["total"] == ITEMS
    again = api.get(f"{suite.run_path(run_id)}/results?limit=5&cursor={first['next_cursor']}")
    assert [r["id"] for r in again.json["data"]] == [r["id"] for r in whole[5:10]]
    assert again.json["total"] == ITEMS and again.json["offset"] == 5
    # A cursor a client changed is refused before any read.
    forged = first["next_cursor"][:-2] + ("aa" if not first["next_cursor"].endswith("aa") else "bb")
    refused = api.get(f"{suite.run_path(run_id)}/results?limit=5&cursor={forged}")
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "cursor"
    # An offset, an outcome filter and one item's trials read across (or within) shards.
    by_offset = api.get(f"{suite.run_path(run_id)}/results?limit=3&offset=7").json
    assert [r["id"] for r in by_offset["data"]] == [r["id"] for r in whole[7:10]]
    failed = api.get(f"{suite.run_path(run_id)}/results?limit=100&outcome=failed").json
    assert failed["total"] == ITEMS // 2 == len(failed["data"])
    assert all(r["passed"] is False for r in failed["data"])
    one = whole[3]["dataset_item_id"]
    trials = api.get(f"{suite.run_path(run_id)}/results?dataset_item_id={one}").json
    assert [r["id"] for r in trials["data"]] == [whole[3]["id"]]


def test_settle_streams_item_id_ranges_across_shards_in_item_order(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite = _suite(api, project)
    run_id = _queued_run(api, app, suite)
    ids = sorted(item["id"] for item in suite.items)
    every = [row.dataset_item_id for row in outcome_rows.iter_outcome_rows(run_id)]
    assert every == ids
    lo, hi = ids[3], ids[9]
    ranged = [
        row.dataset_item_id
        for page in outcome_rows.iter_outcome_pages(run_id, lo, hi, page_rows=2)
        for row in page
    ]
    assert ranged == ids[3:9]
    below = outcome_rows.iter_outcome_pages(run_id, hi=lo)
    assert [row.dataset_item_id for page in below for row in page] == ids[:3]


def test_settle_reads_shards_in_limited_pages_a_few_queries_at_a_time(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None, monkeypatch: Any
) -> None:
    """The rows a sharded stream holds ahead stay bounded whatever the shard count: every
    shard Query asks for a page of READ_AHEAD_ROWS / (shards x 3) rows, and no more than
    SHARD_QUERIES_AT_ONCE of them are in flight at once."""
    suite = _suite(api, project)
    run_id = _queued_run(api, app, suite)
    monkeypatch.setattr(outcome_rows, "READ_AHEAD_ROWS", 24)  # 4 shards: pages of 2 rows
    monkeypatch.setattr(outcome_rows, "MIN_SHARD_PAGE_ROWS", 1)
    monkeypatch.setattr(outcome_rows, "SHARD_QUERIES_AT_ONCE", 2)
    client = ResultModel._get_connection().connection.client
    in_flight, most, limits = [0], [0], []
    lock = threading.Lock()

    def before(params: Any, **_: Any) -> None:
        with lock:
            limits.append(params.get("Limit"))
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.01)  # long enough for the other readers to pile up behind the gate

    def after(**_: Any) -> None:
        with lock:
            in_flight[0] -= 1

    client.meta.events.register("provide-client-params.dynamodb.Query", before)
    client.meta.events.register("after-call.dynamodb.Query", after)
    try:
        rows = [row.dataset_item_id for row in outcome_rows.iter_outcome_rows(run_id, 4)]
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.Query", before)
        client.meta.events.unregister("after-call.dynamodb.Query", after)
    assert rows == sorted(item["id"] for item in suite.items)
    assert set(limits) == {2} and len(limits) >= ITEMS // 2
    assert most[0] == 2


def test_a_redelivered_item_lands_on_its_shard_and_is_skipped(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite, run = _fanned_out(api, app, project)
    item_queue = get_settings().item_queue
    batch = receive(item_queue, 10)
    deliver(app, "execute_items", item_queue, batch)
    recorded = run_store.get_run(run["id"]).recorded_count
    assert recorded == result_row_count(run["id"]) > 0
    # The same messages again (SQS delivered them twice): nothing new is written or counted.
    deliver(app, "execute_items", item_queue, batch)
    assert run_store.get_run(run["id"]).recorded_count == recorded
    assert result_row_count(run["id"]) == recorded
    drain_queues(app)
    final = api.get(suite.run_path(run["id"])).json
    assert final["status"] == "completed" and final["completed_count"] == ITEMS
    assert result_row_count(run["id"]) == ITEMS
    assert_counters_match_rows(final)


def test_a_second_record_of_one_item_is_a_duplicate_on_the_same_shard(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite, run = _fanned_out(api, app, project)
    state = run_store.get_run(run["id"])
    item_id = suite.items[0]["id"]
    frozen = run_items.batch_get_run_items(state.id, [item_id], state.shards)[item_id]
    ctx = load_context(state, should_continue=lambda: True)
    target = results.Counting(state.shards, 1)
    first = results.record(state.id, [execute_item.execute(ctx, frozen, 1)], None, target)
    again = results.record(state.id, [execute_item.execute(ctx, frozen, 1)], None, target)
    assert len(first.recorded) == 1 and len(again.duplicates) == 1 and not again.recorded
    assert run_store.get_run(state.id).recorded_count == 1


def test_rows_a_dead_worker_left_uncounted_are_recounted_on_restart(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite = _suite(api, project)
    run_id = _queued_run(api, app, suite)
    # Make it look as if the last batch's counting never happened: unsettle the run and
    # take 5 off its counters (as a worker killed between its rows and its count leaves it).
    state = run_store.get_run(run_id)
    RunModel(id=run_id).update(
        actions=[
            RunModel.status.set("running"),
            RunModel.settle_claimed.set(False),
            RunModel.counters_folded.remove(),
            RunModel.active.set("1"),
        ]
    )
    for key in sharding.counter_keys(run_id, state.shards):
        zeros = [getattr(RunModel, name).set(0) for name in run_counters.COUNTER_NAMES]
        RunModel(id=key).update(actions=zeros)
    RunModel(id=sharding.counter_key(run_id, 0, state.shards)).update(
        actions=[
            RunModel.recorded_count.set(ITEMS - 5),
            RunModel.completed_count.set(ITEMS - 5),
        ]
    )
    stuck = run_store.get_run(run_id)
    assert stuck.recorded_count < ITEMS and not stuck.all_recorded
    # Nothing is missing, so a re-drive has no work to send: it recounts and settles.
    recovery.redrive_run(run_id, after_restart=True)
    final = api.get(suite.run_path(run_id)).json
    _assert_settled_whole(final)


def test_a_recount_never_counts_past_the_rows(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    suite, run = _fanned_out(api, app, project)
    _execute_one_message(app)
    state = run_store.get_run(run["id"])
    rows = results.count_rows(state.id, state.shards)
    assert rows["recorded_count"] == state.recorded_count > 0
    # Counters that already match the rows: nothing to recount.
    assert not settle.recount(state, complete_only=False)
    assert not run_counters.reconcile(state.id, state.shards, rows)
    # An incomplete run is not recounted by the reaper's rule (a worker may be counting).
    assert not settle.recount(state)
    fanout.enqueue_missing(state)
    drain_queues(app)
    assert api.get(suite.run_path(state.id)).json["status"] == "completed"


def test_an_unsharded_run_from_before_stays_readable_as_a_baseline(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project)
    baseline_id = _queued_run(api, app, suite)
    # Written as every run before sharding: one key, no `shards` on its row.
    assert RunModel.get(baseline_id).shards is None
    assert len(list(ResultModel.query(baseline_id))) == ITEMS
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PAWL_RUN_SHARD_ITEMS", "3")
        wiring.reload_settings()
        current_id = _queued_run(api, app, suite, baseline_run_id=baseline_id)
    wiring.reload_settings()
    current = api.get(suite.run_path(current_id)).json
    assert int(RunModel.get(current_id).shards) == 4
    assert current["status"] == "completed"
    comparison = current["aggregate_scores"]["baseline"]
    assert comparison["pass_rate_delta"] == 0
    assert len(all_results(api, suite, baseline_id, limit=5)) == ITEMS


def test_a_count_refused_after_its_rows_landed_is_recounted_by_a_redrive(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    """The rows of a commit are created, its counting transaction is refused (as a worker
    killed between them): the redelivery skips the rows, the counters lag, and a re-drive
    that finds no work left recounts them from the rows and settles."""
    from botocore.awsrequest import AWSResponse

    from chalicelib.store.base import connection

    suite, run = _fanned_out(api, app, project)

    def refuse(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return refusal(REFUSED_BY_THE_TEST)

    events = connection().client.meta.events
    events.register_first("before-call.dynamodb.TransactWriteItems", refuse)
    item_queue = get_settings().item_queue
    try:
        failed = deliver(app, "execute_items", item_queue, receive(item_queue, 10))
    finally:
        events.unregister("before-call.dynamodb.TransactWriteItems", refuse)
    assert failed  # reported for redelivery
    assert result_row_count(run["id"]) == ITEMS
    assert run_store.get_run(run["id"]).recorded_count == 0
    drain_queues(app)  # the redelivery: every row is there, nothing to execute or count
    stuck = run_store.get_run(run["id"])
    assert stuck.status == "running" and stuck.recorded_count == 0
    recovery.redrive_run(run["id"])
    final = api.get(suite.run_path(run["id"])).json
    _assert_settled_whole(final)


def test_the_reaper_reads_a_sharded_runs_activity_on_its_counter_rows(
    api: Any, app: Any, project: Any, plugins: Plugins, sharded: None
) -> None:
    from chalicelib.engine import reaper

    _, run = _fanned_out(api, app, project)
    _execute_one_message(app)
    state = run_store.get_run(run["id"])
    assert state.shards == 4 and 0 < state.recorded_count < ITEMS
    long_ago = "2000-01-01T00:00:00.000Z"
    # The run row looks quiet (recording never writes it); a counter row moved just now.
    RunModel(id=run["id"]).update(actions=[RunModel.last_activity_at.set(long_ago)])
    assert run["id"] in set(run_store.iter_active_run_ids(quiet_before=reaper.quiet_cutoff()))
    assert reaper.reap().failed == 0
    assert run_store.get_run(run["id"]).status == "running"
    # Every row of it quiet: the reaper fails it (its work never finished).
    for key in sharding.counter_keys(run["id"], state.shards):
        RunModel(id=key).update(actions=[RunModel.last_activity_at.set(long_ago)])
    assert reaper.reap().failed == 1
    assert run_store.get_run(run["id"]).status == "failed"
