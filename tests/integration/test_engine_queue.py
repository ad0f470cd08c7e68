"""Queued runs through moto's SQS: fan-out, at-least-once delivery, partial failures, sizes."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from chalicelib import aws
from chalicelib.settings import get_settings
from chalicelib.store import run_items
from chalicelib.store.models import FrozenItemModel, GenerationModel, ResultModel
from tests.support import agents
from tests.support.drain import deliver, drain_queues, receive
from tests.support.runs import (
    Plugins,
    Suite,
    all_results,
    assert_counters_match_rows,
    make_item,
    make_suite,
    result_row_count,
)


def _queue_depth(queue: str) -> int:
    from chalicelib import queues

    attributes = aws.client("sqs").get_queue_attributes(
        QueueUrl=queues.queue_url(queue),
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def _start(api: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    response = api.post(suite.runs_path, body)
    assert response.status == 201, response
    return dict(response.json)


def _run(api: Any, suite: Suite, run_id: str) -> dict[str, Any]:
    return dict(api.get(suite.run_path(run_id)).json)


def _fan_out(app: Any) -> None:
    """Deliver only the run queue (fan-out), leaving the item messages queued."""
    queue = get_settings().run_queue
    for _ in range(50):
        messages = receive(queue, 1)
        if not messages:
            return
        deliver(app, "fan_out_run", queue, messages)
    raise AssertionError("fan-out never finished")


def test_queued_run_returns_at_once_and_settles_through_the_queues(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [(f"echo:{i}", str(i % 2)) for i in range(12)])
    run = _start(api, suite)
    assert run["status"] == "queued" and run["item_count"] == 0 and run["started_at"] is None
    # The request did no per-item work: one fan-out message, no frozen rows, no items queued.
    assert _queue_depth(get_settings().run_queue) == 1
    assert _queue_depth(get_settings().item_queue) == 0
    assert not list(run_items.iter_run_item_pages(run["id"]))

    report = drain_queues(app)
    assert report.failed == 0
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["item_count"] == 12
    assert (done["completed_count"], done["errored_count"]) == (12, 0)
    assert done["aggregate_scores"]["pass_rate"] == pytest.approx(2 / 12)
    assert done["started_at"] <= done["finished_at"]
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert plugins.events.events[0].data["status"] == "completed"
    assert_counters_match_rows(done)
    assert len(agents.CALLS) == 12


def test_redelivered_fan_out_does_not_double_the_items(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = _start(api, suite)
    message = receive(get_settings().run_queue, 1)
    # The same fan-out message delivered twice (a Lambda that timed out after working).
    deliver(app, "fan_out_run", get_settings().run_queue, message)
    deliver(app, "fan_out_run", get_settings().run_queue, message)
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["item_count"] == 2
    assert result_row_count(run["id"]) == 2 and len(agents.CALLS) == 2
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]


def test_fan_out_in_chunks_with_continuations(
    api: Any, app: Any, project: Any, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.engine import fanout

    monkeypatch.setattr(fanout, "PAGE_ITEMS", 2)
    monkeypatch.setattr(fanout, "CHUNK_ITEMS", 3)
    suite = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(7)], trials=2)
    run = _start(api, suite)
    report = drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["item_count"] == 14
    assert done["completed_count"] == 14 and done["aggregate_scores"]["pass_rate"] == 1.0
    # two fan-out chunks (pages of 2 + 2 and 2 + 1 items), then one work message per page
    assert report.delivered == 2 + 4
    trials = sorted((r["dataset_item_id"], r["trial"]) for r in all_results(api, suite, run["id"]))
    assert trials == sorted((i["id"], t) for i in suite.items for t in (1, 2))


def test_the_first_page_of_a_fan_out_is_the_run_s_concurrency(
    api: Any, app: Any, project: Any, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its items are sent before the rest is read: the agent calls start after one page of
    the run's concurrency, not after a full page; every later page is full."""
    from chalicelib.engine import fanout

    monkeypatch.setattr(fanout, "PAGE_ITEMS", 20)
    limits: list[int] = []
    page = run_items.dataset_items_page

    def counted(dataset_id: str, after: Any, upto: str, limit: int) -> Any:
        limits.append(limit)
        return page(dataset_id, after, upto, limit)

    monkeypatch.setattr(run_items, "dataset_items_page", counted)
    suite = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(25)], max_concurrency=12)
    run = _start(api, suite)
    _fan_out(app)
    assert limits == [12, 20]  # 12 items, then the 13 left (fewer than a page: the end)
    first = receive(get_settings().item_queue, 1)
    assert len(json.loads(first[0]["Body"])["work"]) == 10  # work messages: ten items each
    deliver(app, "execute_items", get_settings().item_queue, first)
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["completed_count"] == 25
    assert fanout.page_size(None, 1) == fanout.FIRST_PAGE_MIN  # at least a message's worth
    assert fanout.page_size(None, 500) == fanout.PAGE_ITEMS  # never more than a page


def _item_messages() -> list[dict[str, Any]]:
    return receive(get_settings().item_queue, 10)


def test_same_item_delivered_twice_sequentially(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    _fan_out(app)
    messages = _item_messages()
    assert len(messages) == 1
    for _ in range(2):
        assert app.handler_map["execute_items"]({"Records": [_record(messages[0])]}, None) == {
            "batchItemFailures": []
        }
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["completed_count"] == 1
    assert len(agents.CALLS) == 1  # the redelivery was acknowledged without an agent call
    assert _generation_count(run["id"]) == 1 and result_row_count(run["id"]) == 1
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]


def _record(message: dict[str, Any], receive_count: int = 1) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": str(receive_count)},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    }


def _generation_count(run_id: str) -> int:
    return sum(1 for g in GenerationModel.scan() if g.run_id == run_id)


def test_same_item_delivered_twice_concurrently(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = _start(api, suite)
    _fan_out(app)
    messages = _item_messages()
    assert len(messages) == 1  # both work items ride in one message
    event = {"Records": [_record(m) for m in messages]}
    barrier = threading.Barrier(4)
    answers: list[Any] = []

    def worker() -> None:
        barrier.wait()
        answers.append(app.handler_map["execute_items"](event, None))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == [{"batchItemFailures": []}] * 4
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed"
    assert (done["completed_count"], done["errored_count"]) == (2, 0)
    assert result_row_count(run["id"]) == 2 and _generation_count(run["id"]) == 2
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]


def test_a_worker_that_raises_is_redelivered_and_completes(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:crash-once", "crash-once"), ("echo:b", "b")])
    run = _start(api, suite)
    _fan_out(app)
    [message] = _item_messages()  # both items in one message
    answer = deliver(app, "execute_items", get_settings().item_queue, [message])
    assert answer == [message["MessageId"]]  # redelivered whole for the one that raised
    halfway = _run(api, suite, run["id"])
    assert halfway["status"] == "running" and halfway["completed_count"] == 1
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["completed_count"] == 2
    assert done["aggregate_scores"]["pass_rate"] == 1.0
    # The item recorded by the first delivery was acknowledged, not executed again.
    assert agents.calls_for(suite.items[1]["id"]) == 1
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert_counters_match_rows(done)


def test_last_delivery_of_a_crashing_item_records_an_error(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:crash-always", "x")])
    run = _start(api, suite)
    _fan_out(app)
    message = _item_messages()[0]
    failed = app.handler_map["execute_items"]({"Records": [_record(message, 1)]}, None)
    assert failed == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    last = app.handler_map["execute_items"]({"Records": [_record(message, 5)]}, None)
    assert last == {"batchItemFailures": []}
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["errored_count"] == 1
    result = all_results(api, suite, run["id"])[0]
    assert result["error"]["code"] == "EVAL_ITEM_FAILED" and result["generation_id"] is None


def test_inputs_are_frozen_when_the_run_fans_out(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite)
    late = make_item(api, suite.dataset["id"], "echo:late", "late")  # after the start
    _fan_out(app)
    item = suite.items[0]
    path = f"/api/v1/datasets/{suite.dataset['id']}/items/{item['id']}"
    changed = api.put(
        path, {"input": [{"role": "user", "content": "echo:z"}], "expected_output": "z"}
    )
    assert changed.status == 200, changed
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["item_count"] == 1  # the item created after the start is not part of the run
    [result] = all_results(api, suite, run["id"])
    assert result["input"] == [{"role": "user", "content": "echo:a"}]
    assert result["expected_output"] == "a" and result["output"] == "a" and result["passed"]
    assert late["id"] not in {r["dataset_item_id"] for r in all_results(api, suite, run["id"])}


def test_large_item_is_read_from_the_frozen_set(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    text = "echo:" + "q" * 20_000
    suite = make_suite(api, project, [(text, "q" * 20_000)])
    run = _start(api, suite)
    _fan_out(app)
    [message] = _item_messages()
    [work] = json.loads(message["Body"])["work"]
    assert "item" not in work  # too large to ride in the message
    deliver(app, "execute_items", get_settings().item_queue, [message])
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["aggregate_scores"]["pass_rate"] == 1.0


def test_large_output_round_trips_through_s3(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    size = 300_000
    suite = make_suite(api, project, [(f"big:{size}", "x" * size)])
    run = _start(api, suite)
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["aggregate_scores"]["pass_rate"] == 1.0
    [result] = all_results(api, suite, run["id"])
    assert len(result["output"]) == size
    generation = api.get(f"/api/v1/generations/{result['generation_id']}").json
    assert len(generation["output"]) == size
    row = ResultModel.get(run["id"], f"{result['dataset_item_id']}#01")
    assert row.output is None and row.output_s3_key
    # The run's outcome digest (runs/<id>/outcomes/) is there too; the output is alone.
    listed = aws.client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="generations/")
    assert [o["Key"] for o in listed["Contents"]] == [row.output_s3_key]


def test_small_items_are_frozen_many_to_a_row_and_large_ones_alone(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    large = "q" * 20_000
    suite = make_suite(
        api, project, [*[(f"echo:{i}", str(i)) for i in range(5)], (f"echo:{large}", large)]
    )
    run = _start(api, suite)
    _fan_out(app)
    rows = list(FrozenItemModel.query(run["id"]))
    pages = [row for row in rows if row.items is not None]
    singles = [row for row in rows if row.items is None]
    assert len(pages) == 1 and len(pages[0].items) == 5  # one write for the small ones
    assert [row.dataset_item_id for row in singles] == [suite.items[5]["id"]]
    frozen = [item for page in run_items.iter_run_item_pages(run["id"]) for item in page]
    assert sorted(item.dataset_item_id for item in frozen) == sorted(i["id"] for i in suite.items)
    # By id: the large one from its row, a small one from its page.
    wanted = [suite.items[5]["id"], suite.items[2]["id"]]
    found = run_items.batch_get_run_items(run["id"], wanted)
    assert found[wanted[0]].input == [{"role": "user", "content": f"echo:{large}"}]
    assert found[wanted[1]].input == [{"role": "user", "content": "echo:2"}]
    drain_queues(app)
    done = _run(api, suite, run["id"])
    assert done["status"] == "completed" and done["aggregate_scores"]["pass_rate"] == 1.0
