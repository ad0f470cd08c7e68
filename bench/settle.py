"""Settle time, CPU and pawl's memory of a real ``settle_run`` over N items (the stand-in).

Starts the local runtime in-process (the AWS stand-in, moto's server with pawl's patches
and journal, in its own child process, exactly as under ``pawl serve``; no schedules).
For each size N it seeds (not measured; straight into the stand-in in batches) a dataset
of N items with a ``kind`` metadata (8 kinds), and two fully recorded runs of an eval
grouped by ``kind`` with one ``contains`` scorer, each with N result rows (about 5%
errored, some items flipping between the runs). It settles the first as a worker does
(claim, then ``engine.settle.settle_run``; no baseline: this writes its outcome digest),
then the second, which names the first as its baseline: it streams its results in key
order, merge-joins them with the baseline's outcome digest (``--rows``: the digest is
dropped first, so the baseline's result rows are read, as for a run settled before
digests), labels each item once from the dataset in pages, and completes the run.

    .venv/bin/python bench/settle.py [--sizes 1000 10000] [--quick] [--profile] [--rows]

Prints, for each settle, its wall time, the CPU seconds of this process (pawl's side) and
of the stand-in during it, the AWS calls it made, and this process's resident memory:
before the settle and its peak during it (sampled every 20 ms). pawl's memory is the
figure the issue bounds; the stand-in holds every table in memory, which grows with N
whatever pawl does.

Measured (2026-12-02, 2 shared cores at load 3-5 with a 100k run beside it; the settle
with a baseline, grouped):

    N=10,000  settle   2.8 s; CPU pawl  0.8 s, stand-in  1.3 s; pawl RSS 121 -> 128 MB
    N=100,000 settle  25.8 s; CPU pawl  8.3 s, stand-in 13.8 s; pawl RSS 126 -> 141 MB
    --rows:   N=100,000  58.0 s; CPU pawl 10.5 s, stand-in 23.4 s
    before the digest and the stand-in's projection patch: N=100,000 64.3 s; CPU pawl
    10.8 s, stand-in 44.0 s (docs/statistics.md has the table)
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import logging
import os
import pstats
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from chalicelib import clock, ids
from chalicelib.domain.runs import (
    COMPLETED,
    RUNNING,
    EvalRun,
    EvalSnapshot,
    RunState,
)

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
        from chalicelib import aws
        from chalicelib.store.base import registered_models

        clients = [model._get_connection().connection.client for model in registered_models()]
        clients.append(aws.client("s3"))  # the outcome digests
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


def seed_items(dataset_id: str, project_id: str, count: int, random_ids: bool = False) -> list[str]:
    """``random_ids``: ids as the API mints them (random, so a sliced settle's id-space
    bounds cut them evenly), in item order; else ``dsit_bench00000001``..."""
    from chalicelib.store.models import DatasetItemModel

    now = clock.now_iso()
    if random_ids:
        item_ids = sorted(ids.new_id("dataset_item") for _ in range(count))
    else:
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


def seed(count: int, random_ids: bool = False) -> tuple[EvalSnapshot, str, str, list[str]]:
    """Items, a snapshot grouped by kind and a completed baseline run; returns what a
    candidate run needs."""

    project_id, dataset_id = ids.new_id("project"), ids.new_id("dataset")
    eval_id = ids.new_id("eval")
    item_ids = seed_items(dataset_id, project_id, count, random_ids)
    snapshot = EvalSnapshot(
        project_id=project_id,
        agent_id=ids.new_id("agent"),
        dataset_id=dataset_id,
        scorers=[SCORER],
        pass_threshold=0.5,
        group_by="kind",
        max_regression=0.2,
    )
    seed_eval(snapshot, eval_id)
    baseline_id = seed_run(snapshot, eval_id, None, item_ids)
    return snapshot, eval_id, baseline_id, item_ids


def seed_eval(snapshot: EvalSnapshot, eval_id: str) -> None:
    """The eval row the runs are counted on (``runs.create_run`` refuses a run of no eval)."""
    from chalicelib.store.models import EvalModel

    now = clock.now_iso()
    EvalModel(
        id=eval_id,
        project_id=snapshot.project_id,
        name="bench",
        agent_id=snapshot.agent_id,
        dataset_id=snapshot.dataset_id,
        scorers=snapshot.scorers,
        created_at=now,
        updated_at=now,
        created_key=f"{now}#{eval_id}",
    ).save()


def drop_digest(run_id: str) -> None:
    """Delete a run's outcome digest: its comparison reads the rows, as before digests."""
    from chalicelib import aws
    from chalicelib.settings import get_settings
    from chalicelib.store import outcome_digest

    s3, bucket = aws.client("s3"), get_settings().bucket
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=outcome_digest.prefix(run_id))
    for entry in listed.get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=entry["Key"])


def settle_once(candidate_id: str, profile: bool = False) -> float:
    from chalicelib.engine.settle import settle_run
    from chalicelib.store import runs

    assert runs.claim_settle(candidate_id), "candidate is not fully recorded"
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    assert settle_run(candidate_id)
    elapsed = time.perf_counter() - started
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return elapsed


def check(candidate_id: str, count: int) -> None:
    from chalicelib.store import runs

    state = runs.get_run(candidate_id)
    aggregate = state.run.aggregate_scores or {}
    expected_errored = sum(_outcome(n, True)[0] for n in range(count))
    assert state.status == COMPLETED, state.run
    assert aggregate["scored_item_count"] == count - expected_errored, aggregate
    assert aggregate["baseline"]["compared_item_count"] == count - expected_errored, aggregate
    assert set(aggregate["grouping"]["groups"]) == set(KINDS), aggregate["grouping"]


def _rss_mb(pid: int | str = "self") -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _cpu_s(pid: int | str = "self") -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssPeak:
    """This process's resident memory, sampled every 20 ms while a block runs."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb())

    def __enter__(self) -> RssPeak:
        self.peak = _rss_mb()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def measure(count: int, counter: CallCounter, standin_pid: int, arguments: Any) -> None:
    started = time.perf_counter()
    snapshot, eval_id, baseline_id, item_ids = seed(count)
    timed_id = seed_run(snapshot, eval_id, baseline_id, item_ids)
    del item_ids
    print(
        f"N={count:,}: seeded 2 runs x {count:,} results in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    # The baseline settles as any run does (no baseline of its own): that writes its digest.
    timed(baseline_id, count, counter, standin_pid, "baseline", profile=False)
    if arguments.rows:
        drop_digest(baseline_id)
    timed(timed_id, count, counter, standin_pid, "settle", arguments.profile)
    check(timed_id, count)


def timed(
    run_id: str, count: int, counter: CallCounter, standin_pid: int, name: str, profile: bool
) -> None:
    gc.collect()
    counter.take()
    before_mb = _rss_mb()
    cpu_before = (time.process_time(), _cpu_s(standin_pid))
    with RssPeak() as rss:
        elapsed = settle_once(run_id, profile)
    pawl_cpu, standin_cpu = (
        after - before
        for after, before in zip(
            (time.process_time(), _cpu_s(standin_pid)), cpu_before, strict=True
        )
    )
    counts, seconds = counter.take()
    calls = sum(counts.values())
    print(
        f"N={count:,} {name} {elapsed:.1f} s ({count / elapsed:,.0f} items/s); CPU pawl "
        f"{pawl_cpu:.1f} s, stand-in {standin_cpu:.1f} s; pawl RSS {before_mb:.0f} MB before, "
        f"peak {rss.peak:.0f} MB; stand-in RSS {_rss_mb(standin_pid):.0f} MB; "
        f"AWS calls {calls:,}",
        flush=True,
    )
    top = ", ".join(f"{op} {n:,} ({seconds[op]:.1f} s)" for op, n in counts.most_common(5))
    print(f"    calls (wall time waiting on the stand-in): {top}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--quick", action="store_true", help="one tiny size (500 items)")
    parser.add_argument("--profile", action="store_true", help="cProfile the settle (slower)")
    parser.add_argument(
        "--rows", action="store_true", help="drop the baseline's digest: compare from its rows"
    )
    arguments = parser.parse_args()
    sizes = [500] if arguments.quick else arguments.sizes

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory(prefix="pawl-settle-") as state_dir:
        config = RuntimeConfig(
            port=0, state_dir=Path(state_dir), snapshot_interval_s=0, run_schedules=False
        )
        with LocalRuntime(config) as runtime:
            assert runtime.standin is not None and runtime.standin.pid is not None
            counter = CallCounter()
            counter.install()
            for count in sizes:
                measure(count, counter, runtime.standin.pid, arguments)


if __name__ == "__main__":
    main()
