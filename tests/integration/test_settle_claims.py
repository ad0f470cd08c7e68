"""Only a batch that may record a run's last item tries to claim its settle.

The counter update of each recording transaction carries a guard built from the run as the
batch read it; these tests watch the DynamoDB calls a worker makes (a botocore
``before-call`` handler on the shared client) and the run's state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.engine import execute_item, messages
from chalicelib.engine.context import load_context
from chalicelib.settings import get_settings
from chalicelib.store import results, run_items, usage
from chalicelib.store import runs as run_store
from chalicelib.store.base import connection
from chalicelib.workers.queues import ITEM_BATCH_MESSAGES, ITEM_BATCH_SIZE
from tests.support.drain import deliver, receive
from tests.support.refusals import REFUSED_BY_THE_TEST, refusal
from tests.support.runs import (
    Plugins,
    assert_counters_match_rows,
    make_suite,
    result_row_count,
)


class DynamoCalls:
    """Counts the DynamoDB operations made through the shared client."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.client = connection().client
        self.client.meta.events.register("before-call.dynamodb", self)

    def __call__(self, model: Any, **_: Any) -> None:
        self.counts[model.name] += 1

    def take(self) -> Counter[str]:
        taken, self.counts = self.counts, Counter()
        return taken

    def close(self) -> None:
        self.client.meta.events.unregister("before-call.dynamodb", self)


@pytest.fixture
def calls(api: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoCalls]:
    # The fewest calls a batch makes: its results committed only in whole transactions and
    # at its end. (Committing for progress adds at most one per PAWL_PROGRESS_FLUSH_S of a
    # batch's life, and an in-process batch of 90 may well last longer than 0.5 s here.)
    monkeypatch.setenv("PAWL_PROGRESS_FLUSH_S", "3600")
    # Nor does it re-read the run's status mid-batch (a batch outliving the watch's 0.5 s
    # refresh would: one GetItem more on a loaded machine).
    monkeypatch.setenv("PAWL_RUN_WATCH_REFRESH_S", "3600")
    wiring.reload_settings()
    watcher = DynamoCalls()
    yield watcher
    watcher.close()


def _run(api: Any, suite: Any, run_id: str) -> dict[str, Any]:
    return dict(api.get(suite.run_path(run_id)).json)


def _fanned_out(api: Any, app: Any, project: Any, items: int) -> tuple[Any, str]:
    suite = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(items)])
    run = api.post(suite.runs_path, {}).json
    queue = get_settings().run_queue
    deliver(app, "fan_out_run", queue, receive(queue, 1))
    return suite, run["id"]


def test_batches_that_cannot_finish_the_run_make_no_claim(
    api: Any, app: Any, project: Any, plugins: Plugins, calls: DynamoCalls
) -> None:
    items = 2 * ITEM_BATCH_SIZE + 29
    suite, run_id = _fanned_out(api, app, project, items)
    queue = get_settings().item_queue
    per_batch = []
    for _ in range(3):
        calls.take()
        batch = receive(queue, ITEM_BATCH_MESSAGES)
        work = sum(len(messages.decode_work(m["Body"])) for m in batch)
        assert work == min(ITEM_BATCH_SIZE, items - ITEM_BATCH_SIZE * len(per_batch))
        assert deliver(app, "execute_items", queue, batch) == []
        per_batch.append(calls.take())
        if len(per_batch) < 3:
            assert _run(api, suite, run_id)["status"] == "running"
    # Steady state for a full batch of 90 (9 messages of 10): one read (the run with the
    # batch's 90 results); two commits of 75 and 15 results, each its results' conditional
    # creates (25 a BatchExecuteStatement), their generations' rows (25 a BatchWriteItem)
    # and one transaction counting them; the first batch also reads the pinned agent
    # version (then cached for the process).
    steady = Counter(
        {
            "BatchGetItem": 1,
            "BatchExecuteStatement": 4,
            "BatchWriteItem": 4,
            "TransactWriteItems": 2,
        }
    )
    assert per_batch[0] == steady + Counter({"GetItem": 1})
    assert per_batch[1] == steady
    # The last batch (29 items, one commit) fails its guard: it counts unguarded,
    # claims and settles.
    assert per_batch[2]["BatchGetItem"] == 1
    assert per_batch[2]["TransactWriteItems"] == 2 and per_batch[2]["UpdateItem"] >= 1
    done = _run(api, suite, run_id)
    assert done["status"] == "completed" and done["completed_count"] == items
    assert_counters_match_rows(done)
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_metering_a_full_batch_adds_no_aws_call(
    api: Any, app: Any, project: Any, plugins: Plugins, calls: DynamoCalls
) -> None:
    """Every item reports usage: its events ride in the batch's two counting transactions."""
    cases = [(f"paid:{i}", str(i)) for i in range(2 * ITEM_BATCH_SIZE)]
    suite = make_suite(api, project, cases)
    run_id = api.post(suite.runs_path, {}).json["id"]
    deliver(app, "fan_out_run", get_settings().run_queue, receive(get_settings().run_queue, 1))
    queue = get_settings().item_queue
    calls.take()
    batch = receive(queue, ITEM_BATCH_MESSAGES)
    assert sum(len(messages.decode_work(m["Body"])) for m in batch) == ITEM_BATCH_SIZE
    assert deliver(app, "execute_items", queue, batch) == []
    steady = Counter(
        {
            "BatchGetItem": 1,
            "BatchExecuteStatement": 4,
            "BatchWriteItem": 4,
            "TransactWriteItems": 2,
            "GetItem": 1,
        }
    )
    assert calls.take() == steady
    events = list(usage.iter_events(project["id"], usage.UsageFilter(run_id=run_id)))
    assert len(events) == ITEM_BATCH_SIZE
    assert {(e.source, e.cost_usd) for e in events} == {("eval", 0.001)}
    assert run_store.get_run(run_id).spent_usd == pytest.approx(ITEM_BATCH_SIZE * 0.001)


def _errored_record(run_id: str, item_id: str) -> Any:
    state = run_store.get_run(run_id)
    frozen = run_items.batch_get_run_items(run_id, [item_id])[item_id]
    return execute_item.errored_record(load_context(state), frozen, 1, "recorded by the test")


def test_a_batch_that_read_the_run_before_fan_out_ended_still_finds_it_may_finish(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite, run_id = _fanned_out(api, app, project, 1)
    record = _errored_record(run_id, suite.items[0]["id"])
    # Read while fan-out was still running; fan-out has ended since.
    stale = results.RunProgress(fanout_done=False, item_count=0)
    outcome = results.record(run_id, [record], stale)
    assert outcome.may_settle_run and len(outcome.recorded) == 1
    assert result_row_count(run_id) == 1
    assert_counters_match_rows(_run(api, suite, run_id))


def test_the_guard_tells_the_last_record_from_the_others(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite, run_id = _fanned_out(api, app, project, 3)
    first, second, third = (_errored_record(run_id, item["id"]) for item in suite.items)
    progress = results.RunProgress(fanout_done=True, item_count=3)
    assert results.record(run_id, [first], progress).may_settle_run is False
    assert results.record(run_id, [first], progress).duplicates == [first]
    assert results.record(run_id, [second, third], progress).may_settle_run is True
    assert results.record(run_id, [third]).may_settle_run is False  # a duplicate records nothing
    run = _run(api, suite, run_id)
    assert (run["errored_count"], result_row_count(run_id)) == (3, 3)


def test_without_progress_every_record_may_finish(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite, run_id = _fanned_out(api, app, project, 2)
    record = _errored_record(run_id, suite.items[0]["id"])
    assert results.record(run_id, [record]).may_settle_run is True


def test_a_batch_whose_later_commit_fails_is_redelivered_without_repeating_what_it_recorded(
    api: Any, app: Any, project: Any, plugins: Plugins, calls: DynamoCalls
) -> None:
    """A batch commits as its items finish: when its second commit fails, what the first
    recorded stays recorded, the batch is reported for redelivery, and the redelivery calls
    the agent only for the items that were not recorded."""
    from botocore.awsrequest import AWSResponse

    from tests.support import agents

    # Commits: 75 once they are pending (three INSERT calls), then the last 11 at the end.
    items = results.RECORDS_PER_TRANSACTION + 11
    suite, run_id = _fanned_out(api, app, project, items)
    transactions: list[int] = []

    def second_commit_fails(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        transactions.append(1)
        if len(transactions) != 4:  # the second commit's first INSERT call
            return None
        return refusal(REFUSED_BY_THE_TEST)

    events = connection().client.meta.events
    events.register_first("before-call.dynamodb.BatchExecuteStatement", second_commit_fails)
    queue = get_settings().item_queue
    try:
        batch = receive(queue, ITEM_BATCH_MESSAGES)
        failed = deliver(app, "execute_items", queue, batch)
    finally:
        events.unregister("before-call.dynamodb.BatchExecuteStatement", second_commit_fails)
    assert len(failed) == len(batch) and len(transactions) == 4
    assert len(agents.CALLS) == items
    first_commit = results.RECORDS_PER_TRANSACTION
    assert result_row_count(run_id) == first_commit
    assert_counters_match_rows(_run(api, suite, run_id))

    assert deliver(app, "execute_items", queue, receive(queue, ITEM_BATCH_MESSAGES)) == []
    assert len(agents.CALLS) == items + (items - first_commit)
    done = _run(api, suite, run_id)
    assert done["status"] == "completed" and done["completed_count"] == items
    assert_counters_match_rows(done)
    assert plugins.events.of(run_id) == ["eval_run.completed"]
