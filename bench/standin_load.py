"""The AWS stand-in under a run's load: its CPU per item, its memory, and run-start latency.

Starts ``pawl serve``'s runtime in this process (its stand-in, moto's server, in a child,
snapshots as ``pawl serve`` takes them, checked every ``--snapshot-interval`` seconds) or, with
``--ministack PYTHON``, MiniStack in a child process started with that interpreter and
reached through ``--aws-endpoint`` (nothing snapshotted: MiniStack keeps its own state).
Then seeds a dataset of N items (the bulk import), starts a queued run of them with an
instant HTTP agent, and while it runs starts a one-item run every ``--probe-every``
seconds, timing each start's answer (a start that waits on the stand-in shows here). Prints:

- items/s of the big run (from its own timestamps);
- CPU ms per item of the stand-in's process (utime + stime from /proc) and of pawl's;
- the stand-in's peak and final RSS (``VmHWM``/``VmRSS``);
- run-start latency during the run: count, median, p99 and max;
- snapshots written while it ran and the longest time mutations were held back by one.

    .venv/bin/python bench/standin_load.py [--items 10000] [--snapshot-interval 1]
        [--snapshot-min-journal-mb 4] [--snapshot-journal-ratio 0.25]
        [--ministack /path/to/venv/bin/python] [--keep-state DIR] [--keep-unclean DIR]

``--keep-unclean`` with ``--snapshot-interval 0`` leaves a state that is all journal (what
``bench/restore.py`` replays to measure the journal's replay rate).

MiniStack pins a botocore that pawl's boto3 does not accept, so it runs from its own
virtualenv (``python -m venv /tmp/ms && /tmp/ms/bin/pip install ministack==1.5.33``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pawl.local.compaction import (
    DEFAULT_JOURNAL_RATIO,
    DEFAULT_MIN_JOURNAL_BYTES,
    MB,
    CompactionPolicy,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_throughput import (
    Api,
    ProcessCpu,
    _seconds_between,
    _suite,
    instant_http_agent,
)

DEFAULT_MIN_JOURNAL_MB = DEFAULT_MIN_JOURNAL_BYTES / MB


def rss_mb(pid: int) -> tuple[float, float]:
    """(peak, current) resident set of a process in MB, from /proc/PID/status."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return (int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def ministack(python: str) -> Any:
    """MiniStack in a child process on a free port: (endpoint, pid)."""
    port = _free_port()
    env = {**os.environ, "GATEWAY_PORT": str(port), "LOG_LEVEL": "WARNING"}
    env.pop("PYTHONPATH", None)
    process = subprocess.Popen(
        [python, "-m", "ministack"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield endpoint, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


class StartProbe:
    """Starts a one-item run every ``every_s`` seconds and keeps each answer's latency."""

    def __init__(self, api: Api, eval_id: str, every_s: float) -> None:
        self.api, self.eval_id, self.every_s = api, eval_id, every_s
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            started = time.perf_counter()
            try:
                self.api.post(f"/api/v1/evals/{self.eval_id}/runs", {})
            except RuntimeError as failed:  # a start that failed is a finding, not the end
                self.failures.append(str(failed)[:200])
            self.latencies.append(time.perf_counter() - started)

    def __enter__(self) -> StartProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        if not self.latencies:
            return "no starts"
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"{len(ordered)} starts: median {statistics.median(ordered) * 1000:.0f} ms, "
            f"p99 {p99 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms; "
            f"{len(self.failures)} failed {self.failures[:2]}"
        )


def _wait_terminal(api: Api, eval_id: str, run_id: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = api.http.get(f"/api/v1/evals/{eval_id}/runs/{run_id}").json()
        if run["status"] not in {"queued", "running"}:
            return dict(run)
        time.sleep(1.0)
    raise TimeoutError(f"run {run_id} did not finish in {timeout_s}s")


def measure(args: argparse.Namespace, runtime: Any, standin_pid: int, agent_pid: int) -> None:
    api = Api(runtime.url, runtime.admin_key)
    agent = {"type": "http", "config": {"url": os.environ["BENCH_AGENT_URL"]}}
    project = api.post("/api/v1/projects", {"name": "load"})
    seeded = time.perf_counter()
    big = _suite(api, project["id"], "big", args.items, agent, args.concurrency)
    probe_eval = _suite(api, project["id"], "probe", 1, agent, args.concurrency)
    print(f"seeded {args.items} items in {time.perf_counter() - seeded:.1f} s")
    cpu = ProcessCpu({"stand-in": standin_pid, "agent": agent_pid})
    written_before = runtime.snapshots_written
    run = api.post(f"/api/v1/evals/{big['id']}/runs", {})
    with StartProbe(api, probe_eval["id"], args.probe_every) as probe:
        done = _wait_terminal(api, big["id"], run["id"], timeout_s=7200)
    assert done["status"] == "completed", done
    seconds = _seconds_between(done["created_at"], done["finished_at"])
    print(f"\n== {args.items} items in {seconds:.1f} s = {args.items / seconds:.1f} items/s")
    cpu.report(args.items)
    peak, now = rss_mb(standin_pid)
    print(f"   stand-in RSS: peak {peak:.0f} MB, now {now:.0f} MB")
    print(f"   pawl RSS: peak {rss_mb(os.getpid())[0]:.0f} MB")
    print(f"   run starts during the run: {probe.summary()}")
    if runtime.persists_state:
        written = runtime.snapshots_written - written_before
        print(
            f"   snapshots written: {written}; longest hold of requests: "
            f"{runtime.longest_hold_ms:.1f} ms; last: {runtime.last_snapshot}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--snapshot-interval", type=float, default=1.0)
    parser.add_argument("--snapshot-min-journal-mb", type=float, default=DEFAULT_MIN_JOURNAL_MB)
    parser.add_argument("--snapshot-journal-ratio", type=float, default=DEFAULT_JOURNAL_RATIO)
    parser.add_argument("--probe-every", type=float, default=2.0)
    parser.add_argument("--ministack", metavar="PYTHON", help="run MiniStack with this python")
    parser.add_argument("--keep-state", type=Path, help="copy the state dir here at the end")
    parser.add_argument(
        "--keep-unclean",
        type=Path,
        help="copy the state dir here before the runtime stops (as kill -9 would leave it)",
    )
    args = parser.parse_args()

    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with ExitStack() as stack:
        url, agent_pid = stack.enter_context(instant_http_agent())
        os.environ["BENCH_AGENT_URL"] = url
        os.environ["PAWL_ALLOW_PRIVATE_URLS"] = f"loopback:{urlsplit(url).port}"
        endpoint, standin_pid = None, None
        if args.ministack:
            endpoint, standin_pid = stack.enter_context(ministack(args.ministack))
        state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        config = RuntimeConfig(
            port=0,
            state_dir=state_dir,
            aws_endpoint=endpoint,
            snapshot_interval_s=args.snapshot_interval,
            compaction=CompactionPolicy.from_megabytes(
                args.snapshot_min_journal_mb, args.snapshot_journal_ratio
            ),
            run_schedules=False,
            item_workers=args.workers,
        )
        started = time.perf_counter()
        runtime = stack.enter_context(LocalRuntime(config))
        print(f"runtime up in {time.perf_counter() - started:.1f} s; load {os.getloadavg()}")
        if runtime.standin is not None:
            standin_pid = runtime.standin.pid
        assert standin_pid is not None
        measure(args, runtime, standin_pid, agent_pid)
        print(f"load average at the end: {os.getloadavg()}")
        if args.keep_unclean:
            shutil.copytree(state_dir, args.keep_unclean, ignore=shutil.ignore_patterns(".lock"))
            print(f"unclean state kept in {args.keep_unclean}")
        if args.keep_state:
            runtime.stop()
            shutil.copytree(state_dir, args.keep_state, dirs_exist_ok=True)
            print(f"state kept in {args.keep_state}: {json.dumps(sorted(os.listdir(state_dir)))}")


if __name__ == "__main__":
    main()
