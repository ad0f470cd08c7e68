"""A settled run's outcome digest compares exactly as its result rows do.

Runs are written as the engine writes them (result rows through the models, items with
metadata) into in-process moto. Settling a run writes its digest; a later run naming it as
baseline reads the digest instead of the rows, and must work out the same aggregate and
comparison as it does from the rows (the digest's objects deleted, so settle falls back).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib import aws, ids
from chalicelib.domain.runs import COMPLETED, RUNNING, EvalRun, EvalSnapshot, RunState
from chalicelib.engine import settle
from chalicelib.settings import get_settings
from chalicelib.stats import REDUCERS
from chalicelib.store import outcome_digest, runs
from chalicelib.store.base import connection
from chalicelib.store.models import DatasetItemModel, EvalModel, ResultModel, RunModel

NOW = "2026-12-02T00:00:00Z"
#: A trial: None when it errored, else each scorer's (score, passed).
Trial = dict[str, tuple[float, bool]] | None

scores = st.dictionaries(
    st.sampled_from(["contains", "judge"]),
    st.tuples(st.sampled_from([0.0, 0.25, 1 / 3, 1.0]), st.booleans()),
    max_size=2,
)
trials = st.lists(st.none() | scores, min_size=1, max_size=3)
#: An item's label: a group, a non-string (ungrouped), no key, or the item deleted.
labels = st.sampled_from(["a", "b", 7, "missing", "deleted"])
items = st.lists(st.tuples(labels, st.none() | trials, st.none() | trials), min_size=1, max_size=12)


def _snapshot(reducer: str, group_by: str | None, trials: int = 1) -> EvalSnapshot:
    return EvalSnapshot(
        project_id="proj_digest",
        agent_id="agent_digest",
        dataset_id="dset_digest",
        scorers=[{"type": "contains", "value": "ok"}],
        pass_threshold=0.5,
        group_by=group_by,
        trial_reducer=reducer,
        trials=trials,
        max_regression=0.2,
    )


def _seed_run(
    snapshot: EvalSnapshot, baseline_id: str | None, outcomes: dict[str, list[Trial]]
) -> RunState:
    run_id = ids.new_id("eval_run")
    run = EvalRun(
        id=run_id,
        eval_id="eval_digest",
        agent_version=1,
        status=RUNNING,
        baseline_run_id=baseline_id,
        item_count=len(outcomes),
        started_at=NOW,
        created_at=NOW,
    )
    _ensure_eval(snapshot)
    state = RunState(
        run=run,
        snapshot=snapshot,
        fanout_done=True,
        last_activity_at=NOW,
        created_key=f"{NOW}#{run_id}",
    )
    runs.create_run(state)
    with ResultModel.batch_write() as batch:
        for item_id, item_trials in outcomes.items():
            for number, trial in enumerate(item_trials, start=1):
                batch.save(_result(run_id, item_id, number, trial))
    RunModel(id=run_id).update(actions=[RunModel.recorded_count.set(len(outcomes))])
    return state


def _ensure_eval(snapshot: EvalSnapshot) -> None:
    """The eval row a run is counted on (``runs.create_run`` refuses a run of no eval)."""
    EvalModel(
        id="eval_digest",
        project_id=snapshot.project_id,
        name="digest",
        agent_id=snapshot.agent_id,
        dataset_id=snapshot.dataset_id,
        scorers=snapshot.scorers,
        created_at=NOW,
        updated_at=NOW,
        created_key=f"{NOW}#eval_digest",
    ).save()


def _result(run_id: str, item_id: str, number: int, trial: Trial) -> ResultModel:
    row_scores = [
        {"scorer": key, "score": score, "passed": passed}
        for key, (score, passed) in (trial or {}).items()
    ]
    return ResultModel(
        run_id=run_id,
        result_key=f"{item_id}#{number:02d}",
        id=ids.new_id("eval_result"),
        eval_id="eval_digest",
        dataset_item_id=item_id,
        trial=number,
        input=[{"role": "user", "content": "hi"}],
        scores=row_scores,
        passed=None if trial is None else all(passed for _, passed in trial.values()),
        error={"code": "AGENT_TIMEOUT", "message": "timed out"} if trial is None else None,
        created_at=NOW,
    )


def _seed_items(labelled: dict[str, Any]) -> None:
    with DatasetItemModel.batch_write() as batch:
        for item_id, label in labelled.items():
            if label == "deleted":
                continue
            batch.save(
                DatasetItemModel(
                    id=item_id,
                    dataset_id="dset_digest",
                    project_id="proj_digest",
                    input=[{"role": "user", "content": "hi"}],
                    metadata={} if label == "missing" else {"kind": label},
                    created_at=NOW,
                    updated_at=NOW,
                    created_key=f"{NOW}#{item_id}",
                )
            )


def _settlement(run_id: str) -> settle.Settlement:
    settlement = settle.Settlement(state=runs.get_run(run_id))
    settle.aggregate_and_compare(settlement)
    return settlement


def _delete_digest(run_id: str) -> None:
    s3 = aws.client("s3")
    bucket = get_settings().bucket
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=outcome_digest.prefix(run_id))
    for entry in listed.get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=entry["Key"])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=items,
    reducers=st.tuples(st.sampled_from(REDUCERS), st.sampled_from(REDUCERS)),
    grouped=st.booleans(),
)
def test_digest_and_rows_give_the_same_settlement(
    aws_env: None,
    items: list[tuple[Any, list[Trial] | None, list[Trial] | None]],
    reducers: tuple[str, str],
    grouped: bool,
) -> None:
    prefix = ids.random_token()[:6]
    item_ids = [f"dsit_{prefix}{n:03d}" for n in range(len(items))]
    _seed_items({item_id: label for item_id, (label, _, _) in zip(item_ids, items, strict=True)})
    group_by = "kind" if grouped else None
    before = {i: t for i, (_, t, _) in zip(item_ids, items, strict=True) if t is not None}
    after = {i: t for i, (_, _, t) in zip(item_ids, items, strict=True) if t is not None}
    # Up to three trials an item: the trial-aware figures compare from the digest too.
    baseline = _seed_run(_snapshot(reducers[0], group_by, trials=3), None, before)
    _settlement(baseline.id)  # writes the baseline's digest
    candidate = _seed_run(_snapshot(reducers[1], group_by, trials=3), baseline.id, after)

    assert outcome_digest.read_parts(baseline.id, reducers[0]) is not None
    from_digest = _settlement(candidate.id)
    _delete_digest(baseline.id)
    assert outcome_digest.read_parts(baseline.id, reducers[0]) is None
    from_rows = _settlement(candidate.id)

    assert from_digest.aggregate == from_rows.aggregate
    assert from_digest.baseline == from_rows.baseline
    if before and after:
        assert from_rows.baseline is not None
        assert from_rows.baseline["run_id"] == baseline.id


class ResultQueries:
    """The run ids the result table is Queried for, through the shared client."""

    def __init__(self) -> None:
        self.run_ids: list[str] = []

    def __call__(self, params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == ResultModel._get_connection().table_name:
            values = params.get("ExpressionAttributeValues", {})
            self.run_ids.extend(v["S"] for v in values.values() if "S" in v)


@pytest.fixture
def result_queries(aws_env: None) -> Iterator[ResultQueries]:
    watcher = ResultQueries()
    client = connection().client
    client.meta.events.register("provide-client-params.dynamodb.Query", watcher)
    yield watcher
    client.meta.events.unregister("provide-client-params.dynamodb.Query", watcher)


def _settled_pair(part_items: int, monkeypatch: pytest.MonkeyPatch) -> tuple[RunState, RunState]:
    monkeypatch.setattr(outcome_digest, "PART_ITEMS", part_items)
    outcomes: dict[str, list[Trial]] = {
        f"dsit_{n:03d}": [None] if n % 5 == 0 else [{"contains": (1.0, n % 2 == 0)}]
        for n in range(25)
    }
    _seed_items({item_id: f"k{n % 3}" for n, item_id in enumerate(outcomes)})
    snapshot = _snapshot("all", "kind")
    baseline = _seed_run(snapshot, None, outcomes)
    assert runs.claim_settle(baseline.id)
    assert settle.settle_run(baseline.id) is True
    assert runs.get_run(baseline.id).status == COMPLETED
    return baseline, _seed_run(snapshot, baseline.id, outcomes)


def test_a_settled_run_is_compared_from_its_digest_not_its_rows(
    result_queries: ResultQueries, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline, candidate = _settled_pair(part_items=7, monkeypatch=monkeypatch)
    listed = aws.client("s3").list_objects_v2(
        Bucket=get_settings().bucket, Prefix=outcome_digest.prefix(baseline.id)
    )
    assert sorted(entry["Key"] for entry in listed["Contents"]) == [
        outcome_digest.manifest_key(baseline.id),
        *(outcome_digest.part_key(baseline.id, n) for n in range(4)),  # 25 items, 7 a part
    ]
    result_queries.run_ids.clear()

    assert runs.claim_settle(candidate.id)
    assert settle.settle_run(candidate.id) is True

    assert baseline.id not in result_queries.run_ids
    assert candidate.id in result_queries.run_ids
    comparison = runs.get_run(candidate.id).run.aggregate_scores["baseline"]  # type: ignore[index]
    assert comparison["compared_item_count"] == 20  # 5 of 25 errored in both
    assert comparison["flipped"] == {"improved": 0, "regressed": 0}


@pytest.mark.parametrize("lost", ["manifest", "part"])
def test_an_incomplete_digest_is_not_read_and_settle_reads_the_rows(
    result_queries: ResultQueries, monkeypatch: pytest.MonkeyPatch, lost: str
) -> None:
    baseline, candidate = _settled_pair(part_items=10, monkeypatch=monkeypatch)
    key = (
        outcome_digest.manifest_key(baseline.id)
        if lost == "manifest"
        else outcome_digest.part_key(baseline.id, 1)
    )
    aws.client("s3").delete_object(Bucket=get_settings().bucket, Key=key)
    assert outcome_digest.read_parts(baseline.id, "all") is None
    result_queries.run_ids.clear()

    assert runs.claim_settle(candidate.id)
    assert settle.settle_run(candidate.id) is True

    assert baseline.id in result_queries.run_ids
    comparison = runs.get_run(candidate.id).run.aggregate_scores["baseline"]  # type: ignore[index]
    assert comparison["compared_item_count"] == 20


def test_a_digest_reduced_otherwise_is_not_read(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline, _ = _settled_pair(part_items=10, monkeypatch=monkeypatch)
    assert outcome_digest.read_parts(baseline.id, "all") is not None
    assert outcome_digest.read_parts(baseline.id, "majority") is None
