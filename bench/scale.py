"""Does pawl's cost stay flat as a run grows? A queued run through ``pawl serve`` at 1k, 10k
(and, with ``--include-100k``, 100k) items, in one table.

For each size, a fresh ``pawl serve`` (its own state dir; the stand-in is its child
process, as for a user; started through ``bench/serve_instrumented.py``, which is the
console script's ``main`` plus counters) and the instant HTTP agent in its own process.
Through the API and the CLI, as a user would:

1. a project, an HTTP agent, a dataset of N items (metadata ``kind``: 8 groups) seeded
   with ``pawl datasets import FILE.jsonl`` (the bulk import), an eval grouped by
   ``kind`` with a ``contains`` scorer;
2. a baseline run of the eval (not measured; skipped with ``--no-baseline`` and for sizes
   above ``--baseline-up-to``, 10,000 by default: at 100k it would double the work);
3. the measured run naming that baseline (``wait: false``), and while it executes 20 run
   starts of a one-item eval, each timed from request to answer;
4. when the run is terminal: items/s (the run's own created → finished stamps), CPU
   ms/item of pawl's process and of the stand-in's (/proc, over the measured run; its
   forked snapshot writers' CPU, reaped children's cutime + cstime, apart), AWS
   calls/item (every botocore call of pawl's process: the engine's and the pollers'),
   peak RSS of both processes (VmHWM: over the process's whole life, seeding included),
   start latency p50/p99 (taken during the baseline run, so the measured run's CPU and
   calls are its own; with ``--no-baseline`` during the measured run), and the run's
   settle (``settle_run``'s own time and pawl's RSS peak while it ran).

    .venv/bin/python bench/scale.py [--sizes 1000 10000] [--include-100k] [--no-baseline]
        [--baseline-up-to 10000] [--targets [--small-rounds 3] [--skip-kill9]]

``--targets`` prints issue 27's "keep what holds" table (``bench/scale_targets.py``): AWS
calls per item at 1k and 100k, the 100k rate against the 1k rate, run-start p99 during the
100k run and the kill -9 matrix, each marked held or missed.
        [--item-workers 4] [--concurrency 40] [--snapshot-interval 1]
        [--snapshot-min-journal-mb MB] [--snapshot-journal-ratio R]

The machine's load average is printed with the table: wall-clock figures on a shared
machine are pessimistic; CPU/item and calls/item are the steadier ones.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run_throughput import instant_http_agent as agent_process  # noqa: E402

KINDS = tuple(f"kind_{k}" for k in range(8))
STARTS = 20
POLLER_OPERATIONS = {
    "sqs:ReceiveMessage",
    "sqs:DeleteMessageBatch",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:ChangeMessageVisibilityBatch",
    "sqs:GetQueueAttributes",
}


@dataclass
class Measured:
    items: int
    items_per_s: float = 0.0
    cpu_ms: dict[str, float] = field(default_factory=dict)
    calls_per_item: float = 0.0
    #: Snapshots cut during the measured run (a writer still running at the end is not in
    #: ``cpu_ms["snapshots"]``: its CPU counts once the stand-in has reaped it).
    snapshots: int = 0
    engine_calls_per_item: float = 0.0
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    starts_ms: list[float] = field(default_factory=list)
    starts_while_running: int = 0
    settle_s: float | None = None
    settle_rss_mb: float | None = None
    baseline: bool = True


def _proc_stat_s(pid: int, first: int) -> float:
    """Two consecutive CPU fields of /proc/PID/stat (after the command), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def _proc_cpu_s(pid: int) -> float:
    return _proc_stat_s(pid, 11)  # utime, stime


def _reaped_children_cpu_s(pid: int) -> float:
    """CPU of the children ``pid`` has waited for (cutime, cstime): for the stand-in, its
    forked snapshot writers, which its own utime and stime do not count."""
    return _proc_stat_s(pid, 13)


def _journal_segment(state_dir: Path) -> int:
    """The newest journal segment's number: each snapshot cuts a new one."""
    names = sorted((state_dir / "journal").glob("segment-*.wal"))
    return int(names[-1].stem.split("-")[1]) if names else 0


def _snapshot_flags(args: Any) -> list[str]:
    flags = ["--snapshot-interval", str(args.snapshot)]
    if args.snapshot_min_journal_mb is not None:
        flags += ["--snapshot-min-journal-mb", str(args.snapshot_min_journal_mb)]
    if args.snapshot_journal_ratio is not None:
        flags += ["--snapshot-journal-ratio", str(args.snapshot_journal_ratio)]
    return flags


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1000
    return 0.0


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


@dataclass
class Serve:
    url: str
    admin_key: str
    pid: int
    standin_pid: int
    counters: Path

    def calls(self) -> dict[str, int]:
        try:
            data: dict[str, int] = json.loads(self.counters.read_text())["calls"]
        except (FileNotFoundError, json.JSONDecodeError):
            return {}
        return data

    def settles(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = json.loads(self.counters.read_text())["settles"]
        return data


@contextmanager
def pawl_serve(
    state_dir: Path,
    agent_ports: list[int],
    workers: int,
    snapshot_flags: list[str],
    log_dir: Path | None = None,
) -> Iterator[Serve]:
    """``pawl serve`` on a free port, stopped with SIGINT (as Ctrl-C) at the end."""
    counters = state_dir.parent / "counters.json"
    env = {
        **os.environ,
        "PAWL_ALLOW_PRIVATE_URLS": "loopback:" + ",".join(map(str, agent_ports)),
        "PAWL_BENCH_COUNTERS": str(counters),
    }
    command = [sys.executable, str(BENCH / "serve_instrumented.py"), "--port", "0"]
    command += ["--state-dir", str(state_dir), "--item-workers", str(workers)]
    command += [*snapshot_flags, "--no-schedules"]
    log_dir = log_dir or state_dir.parent
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / "serve.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert process.stdout is not None
        url = key = ""
        while not (url and key):
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("pawl serve exited before it was serving")
            if line.startswith("pawl is serving on "):
                url = line.split()[-1]
            elif line.strip().startswith("admin key"):
                key = line.split()[2]
        threading.Thread(target=process.stdout.read, daemon=True).start()  # drain
        standin = _children(process.pid)
        yield Serve(url, key, process.pid, standin[0], counters)
    finally:
        process.send_signal(2)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key
        headers = {"Authorization": f"Bearer {key}"}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=600)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()


def _import(api: Api, dataset_id: str, items: int, directory: Path) -> None:
    """Seed the dataset with the CLI's bulk import, as a user would."""
    path = directory / f"items-{dataset_id}.jsonl"
    with path.open("w") as handle:
        for n in range(items):
            line = {
                "input": [{"role": "user", "content": f"case {n}: ok"}],
                "metadata": {"kind": KINDS[n % len(KINDS)]},
            }
            handle.write(json.dumps(line) + "\n")
    pawl = [sys.executable, "-c", "from pawl.cli.main import main; main()"]
    command = [*pawl, "datasets", "import", str(path), "--dataset", dataset_id]
    command += ["--server", api.url, "--api-key", api.key, "--parallel", "2"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _eval(api: Api, project_id: str, name: str, items: int, agent_url: str, args: Any) -> str:
    agent = api.call(
        "POST",
        "/api/v1/agents",
        {"project_id": project_id, "name": name, "type": "http", "config": {"url": agent_url}},
    )
    dataset = api.call("POST", "/api/v1/datasets", {"project_id": project_id, "name": name})
    _import(api, dataset["id"], items, args.work_dir)
    evaluation = api.call(
        "POST",
        "/api/v1/evals",
        {
            "project_id": project_id,
            "name": name,
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            "pass_threshold": 0.9,
            "group_by": "kind",
            "max_concurrency": args.concurrency,
        },
    )
    eval_id: str = evaluation["id"]
    return eval_id


def _wait(api: Api, eval_id: str, run_id: str) -> dict[str, Any]:
    while True:
        run: dict[str, Any] = api.call("GET", f"/api/v1/evals/{eval_id}/runs/{run_id}")
        if run["status"] not in {"queued", "running"}:
            return run
        time.sleep(1.0)


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _seconds(run: dict[str, Any]) -> float:
    return (_parse(run["finished_at"]) - _parse(run["created_at"])).total_seconds()


def _starts(api: Api, eval_id: str, big: tuple[str, str], spacing_s: float, out: Measured) -> None:
    """Start the one-item eval STARTS times while the big run executes, timing each."""
    answered_at = []
    for _ in range(STARTS):
        started = time.perf_counter()
        api.call("POST", f"/api/v1/evals/{eval_id}/runs", {})
        out.starts_ms.append((time.perf_counter() - started) * 1000)
        answered_at.append(time.time())
        time.sleep(spacing_s)
    done = _wait(api, big[0], big[1])
    finished = _parse(done["finished_at"]).timestamp()
    out.starts_while_running = sum(at < finished for at in answered_at)


def _run_with_starts(api: Api, big: str, small: str, size: int, out: Measured) -> dict[str, Any]:
    """A run of the big eval, with the starts timed while it executes; returns it done."""
    run = api.call("POST", f"/api/v1/evals/{big}/runs", {})
    while api.call("GET", f"/api/v1/evals/{big}/runs/{run['id']}")["status"] == "queued":
        time.sleep(0.2)
    spacing = max(0.05, size / 1000 * 0.15)  # spread over about half of the run
    _starts(api, small, (big, run["id"]), spacing, out)
    done = _wait(api, big, run["id"])
    assert done["status"] == "completed" and done["completed_count"] == size, done
    return done


def measure(size: int, args: Any) -> Measured:
    with_baseline = not args.no_baseline and size <= args.baseline_up_to
    out = Measured(items=size, baseline=with_baseline)
    with ExitStack() as stack:
        agent_url, _ = stack.enter_context(agent_process())
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pawl-scale-")))
        args.work_dir = state
        serve = stack.enter_context(
            pawl_serve(
                state / "state",
                [urlsplit(agent_url).port or 0],
                args.item_workers,
                _snapshot_flags(args),
                args.log_dir and args.log_dir / f"{size}",
            )
        )
        api = Api(serve.url, serve.admin_key)
        project = api.call("POST", "/api/v1/projects", {"name": f"scale-{size}"})
        big = _eval(api, project["id"], f"big-{size}", size, agent_url, args)
        small = _eval(api, project["id"], f"start-{size}", 1, agent_url, args)
        print(f"N={size:,}: seeded", flush=True)
        body: dict[str, Any] = {}
        if with_baseline:
            # The starts are timed during the baseline run (same size), so the measured
            # run's CPU and calls are its own.
            baseline = _run_with_starts(api, big, small, size, out)
            body = {"baseline_run_id": baseline["id"]}
            print(f"N={size:,}: baseline run in {_seconds(baseline):.1f} s", flush=True)
        calls_before = serve.calls()
        cpu_before = {p: _proc_cpu_s(p) for p in (serve.pid, serve.standin_pid)}
        writers_before = _reaped_children_cpu_s(serve.standin_pid)
        segment_before = _journal_segment(state / "state")
        settles_before = len(serve.settles())
        if not with_baseline:
            done = _run_with_starts(api, big, small, size, out)
        else:
            run = api.call("POST", f"/api/v1/evals/{big}/runs", body)
            done = _wait(api, big, run["id"])
        assert done["status"] == "completed" and done["completed_count"] == size, done
        time.sleep(1.5)  # the counters file is rewritten every 0.5 s
        out.items_per_s = size / _seconds(done)
        for name, pid in (("pawl", serve.pid), ("stand-in", serve.standin_pid)):
            out.cpu_ms[name] = (_proc_cpu_s(pid) - cpu_before[pid]) / size * 1000
            out.peak_rss_mb[name] = _peak_rss_mb(pid)
        writers = _reaped_children_cpu_s(serve.standin_pid) - writers_before
        out.cpu_ms["snapshots"] = writers / size * 1000
        out.snapshots = _journal_segment(state / "state") - segment_before
        calls = serve.calls()
        delta = {k: v - calls_before.get(k, 0) for k, v in calls.items()}
        out.calls_per_item = sum(delta.values()) / size
        engine = sum(v for k, v in delta.items() if k not in POLLER_OPERATIONS)
        out.engine_calls_per_item = engine / size
        for settle in serve.settles()[settles_before:]:
            if settle["run_id"] == done["id"]:
                out.settle_s, out.settle_rss_mb = settle["seconds"], settle["rss_peak_mb"]
    return out


def table(rows: list[Measured], args: Any) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"`bench/scale.py` {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, load average {load}; {args.item_workers} item workers, "
        f"max_concurrency {args.concurrency}, instant HTTP agent",
        "",
        "| items | items/s | CPU ms/item pawl | CPU ms/item stand-in (+ snapshot writers, n) "
        "| AWS calls/item "
        "(engine) | peak RSS pawl | peak RSS stand-in | start p50 / p99 (n while running) "
        "| settle (baseline, grouping) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        starts = sorted(r.starts_ms)
        p99 = starts[min(len(starts) - 1, round(0.99 * (len(starts) - 1)))]
        settle = (
            f"{r.settle_s:.1f} s, pawl RSS {r.settle_rss_mb:.0f} MB"
            + ("" if r.baseline else " (no baseline)")
            if r.settle_s is not None
            else "not seen"
        )
        lines.append(
            f"| {r.items:,} | {r.items_per_s:.0f} | {r.cpu_ms['pawl']:.2f} | "
            f"{r.cpu_ms['stand-in']:.2f} (+ {r.cpu_ms['snapshots']:.2f}, {r.snapshots}) | "
            f"{r.calls_per_item:.3f} ({r.engine_calls_per_item:.3f})"
            f" | {r.peak_rss_mb['pawl']:.0f} MB | {r.peak_rss_mb['stand-in']:.0f} MB | "
            f"{statistics.median(starts):.0f} / {p99:.0f} ms ({r.starts_while_running}) | "
            f"{settle} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", help="default: 1000 10000")
    parser.add_argument("--include-100k", action="store_true", help="add a 100,000-item run")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline run")
    parser.add_argument(
        "--baseline-up-to",
        type=int,
        help="larger sizes run once, without a baseline (a baseline doubles the work); "
        "default 10000, and every size with --targets",
    )
    parser.add_argument("--log-dir", type=Path, help="keep pawl serve's log there, per size")
    parser.add_argument("--item-workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument(
        "--snapshot-interval", dest="snapshot", type=float, default=1, help="pawl serve's"
    )
    parser.add_argument("--snapshot-min-journal-mb", type=float, help="pawl serve's")
    parser.add_argument("--snapshot-journal-ratio", type=float, help="pawl serve's")
    parser.add_argument(
        "--targets",
        action="store_true",
        help="issue 27's table: 1k (median of --small-rounds) and 100k without baselines, "
        "the kill -9 matrix, each target held or missed (bench/scale_targets.py)",
    )
    parser.add_argument("--small-rounds", type=int, default=3, help="with --targets")
    parser.add_argument("--skip-kill9", action="store_true", help="with --targets")
    args = parser.parse_args()
    args.sizes_given = args.sizes is not None
    if args.baseline_up_to is None:
        args.baseline_up_to = max(args.sizes or [100_000]) if args.targets else 10_000
    if args.targets:
        from scale_targets import run_targets

        run_targets(args)
        return
    sizes = [*(args.sizes or [1_000, 10_000]), *([100_000] if args.include_100k else [])]
    rows = []
    for size in sizes:
        rows.append(measure(size, args))
        print(table(rows, args), flush=True)
    print()
    print(table(rows, args))


if __name__ == "__main__":
    main()
