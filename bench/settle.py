"""Settle time and peak memory of a real ``settle_run`` over N items, against moto in-process.

For each size N, seeds (not measured) a dataset of N items with a ``kind`` metadata (8
kinds), and two fully recorded runs of an eval grouped by ``kind`` with one ``contains``
scorer: a ``completed`` baseline and a ``running`` candidate naming it, each with N result
rows (about 5% errored, some items flipping between the runs). Then claims the candidate's
settle as a worker does and times ``engine.settle.settle_run``: it streams both runs'
results in key order, labels items from the dataset in pages, merge-joins the two runs
and completes the run. Peak memory is traced with tracemalloc in a second, identical
settle of a fresh candidate (tracing slows allocation, so its time is not the one shown).

    .venv/bin/python bench/settle.py [--sizes 1000 10000] [--quick]

The traced peak covers everything in the process during settle, moto's own work included,
and moto's Query materialises the whole partition before it pages (DynamoDB does not):
that part grows with N. Settle itself holds at most one page per stream (the pure
pipeline's bounded memory is shown by ``tests/unit/test_stats_memory.py`` and
``bench/settle_stats.py``: ~20 KiB over 100,000 items).

Measured here (2 cores, moto in-process with the local stand-in's speed-ups, settle
reading each run once; ``--sizes 1000 10000``):

    N=1,000  settle  2.6 s (381 items/s), peak traced memory 13.4 MB, AWS calls 29
    N=10,000 settle 28.4 s (352 items/s), peak traced memory 77.9 MB, AWS calls 215

The stand-in bounds the rate (Query 15.5 s and BatchGetItem 7.7 s of the 28.4 s at
N=10,000 are moto's). 100,000 items (``--sizes 100000``) seed in ~5 minutes, but the
settle through moto had not finished after 17 minutes, so it is not the default. AWS
calls are the portable figure: ~0.02 per item (two result streams paged at 1 MB, labels
read in BatchGetItems of 100 once per stream).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import tracemalloc
from collections import Counter
from typing import Any

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.setdefault("PAWL_TABLE_PREFIX", "pawl-bench")

from moto import mock_aws

from chalicelib import clock, ids
from chalicelib.domain.runs import (
    COMPLETED,
    RUNNING,
    EvalRun,
    EvalSnapshot,
    RunState,
)
from chalicelib.local import moto_patches, moto_server_patches

KINDS = tuple(f"kind_{k}" for k in range(8))
SCORER = {"type": "contains", "value": "ok"}


class CallCounter:
    """A botocore ``before-call`` handler counting (service, operation) pairs."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.seconds: Counter[str] = Counter()

    def __call__(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        self.counts[model.name] += 1
        context["bench_started"] = time.perf_counter()

    def after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        if "bench_started" in context:
            self.seconds[model.name] += time.perf_counter() - context["bench_started"]

    def take(self) -> tuple[Counter[str], Counter[str]]:
        taken = (self.counts, self.seconds)
        self.counts, self.seconds = Counter(), Counter()
        return taken

    def install(self) -> None:
        from chalicelib.store.base import registered_models

        clients = [model._get_connection().connection.client for model in registered_models()]
        for client in {id(c): c for c in clients}.values():
            client.meta.events.register("before-call", self)
            client.meta.events.register("after-call", self.after)


def _outcome(n: int, candidate: bool) -> tuple[bool, bool]:
    """(errored, passed) for item n: ~5% errored, ~10% of items flip between the runs."""
    value = (n * 7919) % 1000
    errored = value < 50
    passed = value % 3 != 0
    if candidate and n % 10 == 3:
        passed = not passed
    return errored, passed


def seed_items(dataset_id: str, project_id: str, count: int) -> list[str]:
    from chalicelib.store.models import DatasetItemModel

    now = clock.now_iso()
    item_ids = [f"dsit_bench{n:08d}" for n in range(count)]
    with DatasetItemModel.batch_write() as batch:
        for n, item_id in enumerate(item_ids):
            batch.save(
                DatasetItemModel(
                    id=item_id,
                    dataset_id=dataset_id,
                    project_id=project_id,
                    input=[{"role": "user", "content": f"case {n}"}],
                    expected_output="ok",
                    metadata={"kind": KINDS[n % len(KINDS)]},
                    created_at=now,
                    updated_at=now,
                    created_key=f"{now}#{item_id}",
                )
            )
    return item_ids


def seed_run(
    snapshot: EvalSnapshot, eval_id: str, baseline_id: str | None, item_ids: list[str]
) -> str:
    """A running, fanned-out run with one result per item, its counters matching the rows."""
    from chalicelib.store import runs
    from chalicelib.store.models import ResultModel, RunModel

    now = clock.now_iso()
    run_id = ids.new_id("eval_run")
    run = EvalRun(
        id=run_id,
        eval_id=eval_id,
        agent_version=1,
        status=RUNNING,
        baseline_run_id=baseline_id,
        item_count=len(item_ids),
        started_at=now,
        created_at=now,
    )
    state = RunState(
        run=run,
        snapshot=snapshot,
        fanout_done=True,
        last_activity_at=now,
        created_key=f"{now}#{run_id}",
    )
    runs.create_run(state)
    errored_count = 0
    with ResultModel.batch_write() as batch:
        for n, item_id in enumerate(item_ids):
            errored, passed = _outcome(n, candidate=baseline_id is not None)
            errored_count += errored
            scores = (
                []
                if errored
                else [{"scorer": "contains", "score": float(passed), "passed": passed}]
            )
            batch.save(
                ResultModel(
                    run_id=run_id,
                    result_key=f"{item_id}#01",
                    id=ids.new_id("eval_result"),
                    eval_id=eval_id,
                    dataset_item_id=item_id,
                    trial=1,
                    input=[{"role": "user", "content": f"case {n}"}],
                    output=None if errored else ("ok" if passed else "no"),
                    scores=scores,
                    passed=None if errored else passed,
                    error={"code": "AGENT_TIMEOUT", "message": "timed out"} if errored else None,
                    usage=[{"source": "eval", "input_tokens": 12, "output_tokens": 3}],
                    created_at=now,
                )
            )
    completed = len(item_ids) - errored_count
    RunModel(id=run_id).update(
        actions=[
            RunModel.completed_count.set(completed),
            RunModel.errored_count.set(errored_count),
            RunModel.recorded_count.set(len(item_ids)),
        ]
    )
    return run_id


def seed(count: int) -> tuple[EvalSnapshot, str, str, list[str]]:
    """Items, a snapshot grouped by kind and a completed baseline run; returns what a
    candidate run needs."""
    from chalicelib.store import runs

    project_id, dataset_id = ids.new_id("project"), ids.new_id("dataset")
    eval_id = ids.new_id("eval")
    item_ids = seed_items(dataset_id, project_id, count)
    snapshot = EvalSnapshot(
        project_id=project_id,
        agent_id=ids.new_id("agent"),
        dataset_id=dataset_id,
        scorers=[SCORER],
        pass_threshold=0.5,
        group_by="kind",
        max_regression=0.2,
    )
    baseline_id = seed_run(snapshot, eval_id, None, item_ids)
    assert runs.settle(baseline_id, COMPLETED, aggregate_scores={}, event_pending=False)
    return snapshot, eval_id, baseline_id, item_ids


def settle_once(candidate_id: str) -> float:
    from chalicelib.engine.settle import settle_run
    from chalicelib.store import runs

    assert runs.claim_settle(candidate_id), "candidate is not fully recorded"
    started = time.perf_counter()
    assert settle_run(candidate_id)
    return time.perf_counter() - started


def check(candidate_id: str, count: int) -> None:
    from chalicelib.store import runs

    state = runs.get_run(candidate_id)
    aggregate = state.run.aggregate_scores or {}
    expected_errored = sum(_outcome(n, True)[0] for n in range(count))
    assert state.status == COMPLETED, state.run
    assert aggregate["scored_item_count"] == count - expected_errored, aggregate
    assert aggregate["baseline"]["compared_item_count"] == count - expected_errored, aggregate
    assert set(aggregate["grouping"]["groups"]) == set(KINDS), aggregate["grouping"]


def measure(count: int, counter: CallCounter) -> None:
    started = time.perf_counter()
    snapshot, eval_id, baseline_id, item_ids = seed(count)
    timed_id = seed_run(snapshot, eval_id, baseline_id, item_ids)
    traced_id = seed_run(snapshot, eval_id, baseline_id, item_ids)
    print(
        f"N={count:,}: seeded 3 runs x {count:,} results in {time.perf_counter() - started:.1f} s"
    )

    gc.collect()
    counter.take()
    elapsed = settle_once(timed_id)
    counts, seconds = counter.take()
    calls = sum(counts.values())
    check(timed_id, count)

    gc.collect()
    tracemalloc.start()
    try:
        settle_once(traced_id)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check(traced_id, count)
    print(
        f"N={count:,} settle {elapsed:.1f} s ({count / elapsed:,.0f} items/s), "
        f"peak traced memory {peak / 1e6:.1f} MB, AWS calls {calls:,}"
    )
    top = ", ".join(f"{op} {n:,} ({seconds[op]:.1f} s)" for op, n in counts.most_common(5))
    print(f"    calls (time in the stand-in): {top}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--quick", action="store_true", help="one tiny size (500 items)")
    arguments = parser.parse_args()
    sizes = [500] if arguments.quick else arguments.sizes

    moto_patches.apply()
    moto_server_patches.apply()  # the stand-in's speed-ups (same answers): less of moto
    with mock_aws():
        from chalicelib import settings
        from chalicelib.bootstrap import ensure_resources
        from chalicelib.store import base

        settings.reset_settings()
        base.bind()
        ensure_resources()
        counter = CallCounter()
        counter.install()
        for count in sizes:
            measure(count, counter)


if __name__ == "__main__":
    main()
