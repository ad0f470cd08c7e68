"""A large run settles in slices, and comes out exactly as one pass would have settled it.

Runs go through the real API, fan-out and item workers (in-process moto, handlers called
as Lambda would), with ``PAWL_SETTLE_FANOUT_ITEMS`` lowered so a few dozen items count as
large. Each test then compares the settled run with a one-pass settle of the same rows,
and watches the slices' messages, the run row and the lifecycle events.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib import aws, queues, wiring
from chalicelib.engine import settle, settle_slices
from chalicelib.engine.reaper import reap
from chalicelib.settings import get_settings
from chalicelib.store import outcome_digest, runs, settle_parts
from chalicelib.store.models import RunModel
from tests.support.drain import deliver, drain_queues, receive
from tests.support.runs import Plugins, Suite, make_suite

#: Over 10 items (trials counted) a run settles in slices of about 12.
FANOUT_ITEMS = 10
SLICE_ITEMS = 12


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_SETTLE_FANOUT_ITEMS", str(FANOUT_ITEMS))
    monkeypatch.setenv("PAWL_SETTLE_SLICE_ITEMS", str(SLICE_ITEMS))
    wiring.reload_settings()
    # Read now: chalice.test.Client swaps in the stage's environment during a request.
    assert get_settings().settle_slice_items == SLICE_ITEMS
    yield
    monkeypatch.undo()
    wiring.reload_settings()


def _cases(count: int, shift: int = 0) -> list[Any]:
    """Passing, failing, errored, paid and flaky items in two groups and ungrouped."""
    cases: list[Any] = []
    for n in range(count):
        kind = {"kind": "ab"[n % 2]} if n % 5 else {}
        pick = (n + shift) % 6
        if pick == 0:
            cases.append((f"echo:{n}", "no", kind))
        elif pick == 1:
            cases.append(("fail", None, kind))
        elif pick == 2:
            cases.append((f"paid:{n}", str(n), kind))
        elif pick == 3:
            cases.append((f"flip:{n}", str(n), kind))
        else:
            cases.append((f"echo:{n}", str(n), kind))
    return cases


def _start(api: Any, suite: Suite, **body: Any) -> str:
    response = api.post(suite.runs_path, body)
    assert response.status == 201, response
    return str(response.json["id"])


def _fan_out_and_execute(app: Any) -> None:
    """Fan out and execute every item, leaving the settle's slice messages (if any)."""
    run_queue, item_queue = get_settings().run_queue, get_settings().item_queue
    deliver(app, "fan_out_run", run_queue, receive(run_queue, 1))
    while batch := receive(item_queue, 9):
        deliver(app, "execute_items", item_queue, batch)


def _digest_entries(run_id: str, reducer: str) -> list[Any]:
    digest = outcome_digest.open_digest(run_id, reducer)
    assert digest is not None
    return [entry for part in digest.parts for entry in part]


def _one_pass(run_id: str) -> settle.Settlement:
    settlement = settle.Settlement(state=runs.get_run(run_id))
    settle.aggregate_and_compare(settlement)
    settle.decide_verdict(settlement)
    return settlement


def _slice_messages() -> list[dict[str, Any]]:
    found = receive(get_settings().run_queue, 10_000)
    assert all("settle_slice" in json.loads(m["Body"]) for m in found)
    return found


def test_a_run_settled_in_slices_equals_the_same_run_settled_in_one_pass(
    api: Any, app: Any, project: Any, plugins: Plugins, small_slices: None
) -> None:
    suite = make_suite(api, project, _cases(60), group_by="kind", trials=2, max_regression=0.5)
    baseline_id = _start(api, suite)
    drain_queues(app)
    candidate_id = _start(api, suite, baseline_run_id=baseline_id)
    _fan_out_and_execute(app)
    sliced = _slice_messages()
    # item_count counts trials: 120 settle rows, 10 slices of 12.
    assert runs.get_run(candidate_id).run.item_count == 120
    assert len(sliced) == settle_slices.slice_count(120) == 10
    assert runs.get_run(candidate_id).status == "running"  # claimed, not settled
    for message in sliced:
        deliver(app, "fan_out_run", get_settings().run_queue, [message])

    for run_id in (baseline_id, candidate_id):
        state = runs.get_run(run_id)
        assert state.status == "completed"
        assert plugins.events.of(run_id) == ["eval_run.completed"]
        row = RunModel.get(run_id)
        assert row.settle_slices == 10 and row.settle_parts_done == set(range(10))
        sliced_digest = _digest_entries(run_id, "all")
        assert len(sliced_digest) == 60
        one_pass = _one_pass(run_id)  # rewrites the digest, in one writer's parts
        assert state.run.aggregate_scores == one_pass.aggregate
        assert state.run.passed == one_pass.passed
        assert state.run.verdict_reasons == one_pass.verdict_reasons
        assert sliced_digest == _digest_entries(run_id, "all")
    comparison = runs.get_run(candidate_id).run.aggregate_scores["baseline"]  # type: ignore[index]
    assert comparison["run_id"] == baseline_id
    assert comparison["compared_item_count"] > 0
    assert set(comparison["grouping"]["groups"]) == {"a", "b"}


def test_a_run_under_the_size_settles_in_one_pass(
    api: Any, app: Any, project: Any, plugins: Plugins, small_slices: None
) -> None:
    suite = make_suite(api, project, _cases(FANOUT_ITEMS))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    assert receive(get_settings().run_queue, 10) == []
    assert runs.get_run(run_id).status == "completed"
    assert RunModel.get(run_id).settle_slices is None


def test_redelivered_slices_settle_the_run_once(
    api: Any, app: Any, project: Any, plugins: Plugins, small_slices: None
) -> None:
    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    sliced = _slice_messages()
    queue = get_settings().run_queue
    for message in sliced[:-1]:
        deliver(app, "fan_out_run", queue, [message])
        deliver(app, "fan_out_run", queue, [message])  # a duplicate: counts nothing
    assert runs.get_run(run_id).status == "running"
    deliver(app, "fan_out_run", queue, [sliced[-1]])
    settled = runs.get_run(run_id)
    assert settled.status == "completed"
    # Every slice delivered again after the settle (the last one combines again).
    for message in sliced:
        queues.send_many_encoded(queue, [message["Body"]])
    drain_queues(app)
    again = runs.get_run(run_id)
    assert again.run.finished_at == settled.run.finished_at
    assert again.run.aggregate_scores == settled.run.aggregate_scores
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_a_crashed_slice_is_redelivered_and_the_run_settles(
    api: Any,
    app: Any,
    project: Any,
    plugins: Plugins,
    small_slices: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    real = settle.accumulate
    crashed: list[str] = []

    def crash_once(*args: Any, **kwargs: Any) -> Any:
        if not crashed:
            crashed.append(kwargs["tag"])
            raise RuntimeError("the slice's worker died")
        return real(*args, **kwargs)

    monkeypatch.setattr(settle, "accumulate", crash_once)
    report = drain_queues(app)
    assert crashed and report.failed == 1
    assert runs.get_run(run_id).status == "completed"
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_the_reaper_redrives_the_slices_a_stuck_settle_lost(
    api: Any,
    app: Any,
    project: Any,
    plugins: Plugins,
    small_slices: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    sliced = _slice_messages()
    queue = get_settings().run_queue
    deliver(app, "fan_out_run", queue, [sliced[0]])
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(queue))  # the others went to the DLQ
    assert runs.get_run(run_id).status == "running"

    monkeypatch.setenv("PAWL_RUN_GRACE_S", "0")
    wiring.reload_settings()
    assert get_settings().run_grace_s == 0
    reap()
    redriven = _slice_messages()
    assert len(redriven) == len(sliced) - 1  # the stored slice is not recomputed
    for message in redriven:
        deliver(app, "fan_out_run", queue, [message])
    assert runs.get_run(run_id).status == "completed"
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_the_reaper_combines_when_every_slice_is_stored(
    api: Any,
    app: Any,
    project: Any,
    plugins: Plugins,
    small_slices: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    monkeypatch.setattr(settle_slices, "combine", lambda run_id, slices: False)  # it crashes
    drain_queues(app)
    assert runs.get_run(run_id).status == "running"
    monkeypatch.undo()
    monkeypatch.setenv("PAWL_RUN_GRACE_S", "0")
    monkeypatch.setenv("PAWL_SETTLE_FANOUT_ITEMS", str(FANOUT_ITEMS))
    monkeypatch.setenv("PAWL_SETTLE_SLICE_ITEMS", str(SLICE_ITEMS))
    wiring.reload_settings()
    assert get_settings().run_grace_s == 0
    assert reap().settled == 1  # the reaper's re-drive combined the stored slices
    assert receive(get_settings().run_queue, 10) == []
    assert runs.get_run(run_id).status == "completed"
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def test_a_run_cancelled_during_its_sliced_settle_stays_cancelled(
    api: Any, app: Any, project: Any, plugins: Plugins, small_slices: None
) -> None:
    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    assert api.post(f"{suite.run_path(run_id)}/cancel", {}).status == 200
    drain_queues(app)
    state = runs.get_run(run_id)
    assert state.status == "cancelled" and state.run.aggregate_scores is None
    assert plugins.events.of(run_id) == []
    assert settle_parts.count_done(run_id, 3, 0) is None


def test_slice_bounds_cover_every_id_once_in_order() -> None:
    for slices in (1, 2, 3, 7, 20, 62, 1000, settle_slices.MAX_SLICES):
        bounds = settle_slices.slice_bounds(slices)
        assert len(bounds) == slices
        assert bounds[0][0] is None and bounds[-1][1] is None
        for (_, hi), (lo, _) in itertools.pairwise(bounds):
            assert hi == lo and hi is not None
        inner = [lo for lo, _ in bounds[1:] if lo is not None]
        assert len(inner) == slices - 1
        assert inner == sorted(inner) and len(set(inner)) == len(inner)
    with pytest.raises(ValueError):
        settle_slices.slice_bounds(settle_slices.MAX_SLICES + 1)


def test_random_ids_spread_evenly_over_the_slices() -> None:
    from chalicelib import ids

    item_ids = sorted(ids.new_id("dataset_item") for _ in range(20_000))
    bounds = settle_slices.slice_bounds(20)
    counts = [
        sum(1 for i in item_ids if (lo is None or i >= lo) and (hi is None or i < hi))
        for lo, hi in bounds
    ]
    assert sum(counts) == 20_000
    assert max(counts) < 1_300 and min(counts) > 700  # 1,000 each expected


class GetObjects:
    """The S3 keys read through the shared client."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        self.keys.append(params["Key"])


def _digest_of(count: int, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[Any]]:
    from chalicelib import ids

    monkeypatch.setattr(outcome_digest, "PART_ITEMS", 5)
    run_id = ids.new_id("eval_run")
    entries = [
        outcome_digest.DigestEntry(item_id, False, n % 2 == 0, (), False, 1, "a")
        for n, item_id in enumerate(sorted(ids.new_id("dataset_item") for _ in range(count)))
    ]
    writer = outcome_digest.DigestWriter(run_id, "all", "kind")
    for entry in entries:
        writer.add(entry)
    writer.seal()
    return run_id, entries


def test_a_range_of_a_digest_reads_only_the_parts_that_hold_it(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, entries = _digest_of(23, monkeypatch)  # parts of 5, 5, 5, 5, 3
    lo, hi = entries[7].dataset_item_id, entries[12].dataset_item_id
    reads = GetObjects()
    aws.client("s3").meta.events.register("provide-client-params.s3.GetObject", reads)
    try:
        digest = outcome_digest.open_digest(run_id, "all", lo, hi)
        assert digest is not None
        assert [e for part in digest.parts for e in part] == entries[7:12]
    finally:
        aws.client("s3").meta.events.unregister("provide-client-params.s3.GetObject", reads)
    assert reads.keys == [
        outcome_digest.manifest_key(run_id),
        outcome_digest.part_key(run_id, 1),
        outcome_digest.part_key(run_id, 2),
    ]
    everything = outcome_digest.open_digest(run_id, "all")
    assert everything is not None and [e for p in everything.parts for e in p] == entries
    above = outcome_digest.open_digest(run_id, "all", lo=entries[20].dataset_item_id)
    assert above is not None and [e for p in above.parts for e in p] == entries[20:]


def test_a_format_2_digest_is_still_read_by_range(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A digest written before format 3 names its parts by number only: every part is
    opened, the range filtered as it streams (and reading stops past its end)."""
    run_id, entries = _digest_of(23, monkeypatch)
    manifest = {"format": 2, "reducer": "all", "group_by": "kind", "parts": 5, "item_count": 23}
    aws.client("s3").put_object(
        Bucket=get_settings().bucket,
        Key=outcome_digest.manifest_key(run_id),
        Body=json.dumps(manifest).encode(),
    )
    lo, hi = entries[3].dataset_item_id, entries[9].dataset_item_id
    digest = outcome_digest.open_digest(run_id, "all", lo, hi)
    assert digest is not None and digest.labelled_by == "kind"
    assert [e for part in digest.parts for e in part] == entries[3:9]


def test_runs_over_the_size_settle_in_slices_of_the_slice_size() -> None:
    assert get_settings().settle_fanout_items == 100_000  # the defaults
    assert settle_slices.slice_count(100_000) is None
    assert settle_slices.slice_count(100_001) == 3
    assert settle_slices.slice_count(1_000_000) == 20


def test_recovery_after_a_restart_redrives_a_sliced_settle(
    api: Any, app: Any, project: Any, plugins: Plugins, small_slices: None
) -> None:
    """The process holding the claim died with its slices' messages: a restart's re-drive
    takes the claim over at once and enqueues the slices again."""
    from chalicelib.engine import recovery

    suite = make_suite(api, project, _cases(30))
    run_id = _start(api, suite)
    _fan_out_and_execute(app)
    queue = get_settings().run_queue
    aws.client("sqs").purge_queue(QueueUrl=queues.queue_url(queue))
    assert recovery.redrive_active_runs(after_restart=True) == 1
    assert _queue_depth(queue) == settle_slices.slice_count(30)
    drain_queues(app)
    assert runs.get_run(run_id).status == "completed"
    assert plugins.events.of(run_id) == ["eval_run.completed"]


def _queue_depth(queue: str) -> int:
    attributes = aws.client("sqs").get_queue_attributes(
        QueueUrl=queues.queue_url(queue), AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])
