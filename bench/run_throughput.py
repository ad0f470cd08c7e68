"""Throughput and AWS calls per item of a run, end to end, through the local runtime.

Starts an in-process ``pawl.local`` runtime (the AWS stand-in, moto's server, in its
own process on 127.0.0.1; the Chalice app over HTTP; SQS pollers calling the real
handlers; no schedules), an instant HTTP agent in its own process (or, with
``--agent python``, an in-process python agent), a dataset of N items and an eval with a
``contains`` scorer, then:

1. starts a queued run (``wait: false``) of N items and waits until it is terminal;
2. starts a ``wait: true`` run over a 25-item dataset.

For each it prints items/s and the AWS API calls per item, counted at the botocore layer
(a ``before-call`` handler on every client the process uses: the shared boto3 clients and
the botocore client behind each PynamoDB model), split by service and operation. SQS
receive/delete/visibility calls are the event-source mapping's work on AWS (Lambda polls,
not our code), so they are shown apart from the engine's own calls. Then the CPU time
per item of each process: pawl's (runtime, workers, API), the stand-in's and the agent's.

    .venv/bin/python bench/run_throughput.py [--items 1000] [--workers 4] [--agent http]
        [--agent-delay-ms 0] [--concurrency 40] [--py-spy FILE]

``--agent-delay-ms 200 --concurrency 40`` measures a latency-bound run (ideal: items x
0.2 s / 40).

Locally the stand-in's CPU bounds the rate (each AWS call costs it a few milliseconds of
Python); the calls per item are the figure that carries over to AWS.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

POLLER_OPERATIONS = {
    ("sqs", "ReceiveMessage"),
    ("sqs", "DeleteMessage"),
    ("sqs", "DeleteMessageBatch"),
    ("sqs", "ChangeMessageVisibility"),
    ("sqs", "ChangeMessageVisibilityBatch"),
    ("sqs", "GetQueueAttributes"),
}
SYNC_ITEMS = 25


def instant(payload: dict[str, Any]) -> dict[str, Any]:
    """The agent under test: answers its last message at once."""
    return {"output": str(payload["input"][-1]["content"])}


class CallCounter:
    """A botocore ``before-call`` handler counting (service, operation) pairs."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.seconds: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._muted = threading.local()

    def __call__(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        if getattr(self._muted, "on", False):
            return
        key = (model.service_model.service_name, model.name)
        context["bench_started"] = time.perf_counter()
        with self._lock:
            self.counts[key] += 1

    def after(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        started = context.get("bench_started")
        if started is not None:
            key = (model.service_model.service_name, model.name)
            with self._lock:
                self.seconds[key] += time.perf_counter() - started

    def mute(self, on: bool) -> None:
        """Calls made by this thread (the benchmark's own polling) are not counted."""
        self._muted.on = on

    def reset(self) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
        with self._lock:
            taken = (self.counts, self.seconds)
            self.counts, self.seconds = Counter(), Counter()
        return taken

    def install(self) -> None:
        from chalicelib import aws
        from chalicelib.store.base import registered_models

        clients = [aws.client("sqs"), aws.client("s3")]
        clients += [model._get_connection().connection.client for model in registered_models()]
        for client in {id(c): c for c in clients}.values():
            client.meta.events.register("before-call", self)
            client.meta.events.register("after-call", self.after)


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600
        )

    def post_raw(self, path: str, jsonl: bytes) -> None:
        headers = {"Content-Type": "application/x-ndjson"}
        response = self.http.post(path, content=jsonl, headers=headers)
        if response.status_code >= 300:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body)
        if response.status_code >= 300:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")
        data: dict[str, Any] = response.json()
        return data


def _suite(
    api: Api,
    project_id: str,
    name: str,
    items: int,
    agent_config: dict[str, Any],
    concurrency: int,
) -> dict[str, Any]:
    agent = api.post(
        "/api/v1/agents", {"project_id": project_id, "name": f"{name}-agent", **agent_config}
    )
    dataset = api.post("/api/v1/datasets", {"project_id": project_id, "name": name})
    lines = [
        json.dumps({"input": [{"role": "user", "content": f"case {i}: ok"}], "metadata": {}})
        for i in range(items)
    ]
    for start in range(0, items, 99):  # the bulk import's limit per request
        api.post_raw(
            f"/api/v1/datasets/{dataset['id']}/items:import",
            "\n".join(lines[start : start + 99]).encode(),
        )
    return api.post(
        "/api/v1/evals",
        {
            "project_id": project_id,
            "name": name,
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            "pass_threshold": 0.9,
            "max_concurrency": concurrency,
        },
    )


def _wait_terminal(counter: CallCounter, run_id: str, timeout_s: float) -> Any:
    from chalicelib.store import runs

    counter.mute(True)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = runs.find_run(run_id)
            if state is not None and state.status not in {"queued", "running"}:
                return state
            time.sleep(0.5)  # the run's own timestamps time it: polling need not be tight
    finally:
        counter.mute(False)
    raise TimeoutError(f"run {run_id} did not finish in {timeout_s}s")


def _seconds_between(start_iso: str, end_iso: str | None) -> float:
    """From the run's creation to its finish, as the engine stamped them."""
    assert end_iso is not None
    parse = datetime.fromisoformat
    return (
        parse(end_iso.replace("Z", "+00:00")) - parse(start_iso.replace("Z", "+00:00"))
    ).total_seconds()


def _report(
    title: str,
    items: int,
    seconds: float,
    measured: tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]],
) -> None:
    counts, spent = measured
    engine = {k: v for k, v in counts.items() if k not in POLLER_OPERATIONS}
    pollers = {k: v for k, v in counts.items() if k in POLLER_OPERATIONS}
    print(f"\n== {title}: {items} items in {seconds:.2f}s = {items / seconds:.1f} items/s")
    print(f"   engine AWS calls: {sum(engine.values())} = {sum(engine.values()) / items:.3f}/item")
    print(f"     {'service':9} {'operation':26} {'calls':>7}  {'per item':>8}  {'mean ms':>8}")
    for (service, operation), n in sorted(engine.items(), key=lambda kv: -kv[1]):
        mean_ms = spent[(service, operation)] / n * 1000
        print(f"     {service:9} {operation:26} {n:7}  {n / items:8.3f}  {mean_ms:8.1f}")
    if pollers:
        total = sum(pollers.values())
        print(f"   event-source SQS calls (Lambda's, not ours): {total} = {total / items:.3f}/item")


class ProcessCpu:
    """CPU seconds used by this process and by child processes named by pid (Linux /proc)."""

    def __init__(self, children: dict[str, int]) -> None:
        self.children = children
        self._start = self._read()

    def _read(self) -> dict[str, float]:
        taken = {"pawl (runtime, workers, API)": time.process_time()}
        ticks = os.sysconf("SC_CLK_TCK")
        for name, pid in self.children.items():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            taken[name] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
        return taken

    def report(self, items: int) -> None:
        now = self._read()
        print("   CPU per item:")
        for name, seconds in now.items():
            print(f"     {name:30} {(seconds - self._start[name]) / items * 1000:7.2f} ms")
        self._start = now


@contextmanager
def py_spy(out: str) -> Iterator[None]:
    """py-spy sampling this process while the block runs (100 Hz, threads holding the GIL)."""
    sampler = ["py-spy", "record", "--pid", str(os.getpid()), "--gil", "--nonblocking"]
    process = subprocess.Popen(
        [*sampler, "--rate", "100", "--format", "raw", "--output", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)  # attached before the run starts
    try:
        yield
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)


@contextmanager
def instant_http_agent(delay_ms: float = 0.0) -> Iterator[tuple[str, int]]:
    """The instant agent in its own process: (url, pid)."""
    script = Path(__file__).with_name("instant_agent.py")
    process = subprocess.Popen(
        [sys.executable, str(script), "--delay-ms", str(delay_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = json.loads(process.stdout.readline())["port"]
        yield f"http://127.0.0.1:{port}/", process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4, help="item-queue poller threads")
    parser.add_argument(
        "--agent",
        choices=["http", "python"],
        default="http",
        help="an instant HTTP agent in its own process (default) or an in-process python one",
    )
    parser.add_argument("--agent-delay-ms", type=float, default=0.0, help="http agent latency")
    parser.add_argument("--concurrency", type=int, default=40, help="the evals' max_concurrency")
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="sample pawl's process with py-spy (GIL holder only) during the queued run and "
        "write collapsed stacks to FILE",
    )
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    with ExitStack() as stack:
        if args.agent == "http":
            url, agent_pid = stack.enter_context(instant_http_agent(args.agent_delay_ms))
            # Outbound calls reach public addresses only unless the operator names the port.
            os.environ["PAWL_ALLOW_PRIVATE_URLS"] = f"loopback:{urlsplit(url).port}"
            agent: dict[str, Any] = {"type": "http", "config": {"url": url}}
            children = {"instant http agent": agent_pid}
        else:
            agent = {"type": "python", "config": {"callable": "run_throughput:instant"}}
            children = {}
        _measure(args, agent, children)


def _measure(args: argparse.Namespace, agent: dict[str, Any], children: dict[str, int]) -> None:

    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory() as state_dir:
        config = RuntimeConfig(
            port=0,
            state_dir=Path(state_dir),
            snapshot_interval_s=0,
            run_schedules=False,
            item_workers=args.workers,
            poll_wait_s=1,
            python_agent_modules=("run_throughput",) if args.agent == "python" else (),
        )
        with LocalRuntime(config) as runtime:
            assert runtime.standin is not None and runtime.standin.pid is not None
            print(
                f"local runtime at {runtime.url}; AWS stand-in (moto server) in process "
                f"{runtime.standin.pid}; {args.agent} agent; {args.workers} item workers"
            )
            api = Api(runtime.url, runtime.admin_key)
            project = api.post("/api/v1/projects", {"name": "bench"})
            queued_eval = _suite(api, project["id"], "queued", args.items, agent, args.concurrency)
            sync_eval = _suite(api, project["id"], "sync", SYNC_ITEMS, agent, args.concurrency)
            counter = CallCounter()
            counter.install()
            cpu = ProcessCpu({**children, "AWS stand-in": runtime.standin.pid})

            counter.reset()
            with ExitStack() as profiling:
                if args.py_spy:
                    profiling.enter_context(py_spy(args.py_spy))
                started = time.perf_counter()
                run = api.post(f"/api/v1/evals/{queued_eval['id']}/runs", {})
                accepted = time.perf_counter() - started
                state = _wait_terminal(counter, run["id"], timeout_s=3600)
            elapsed = _seconds_between(state.run.created_at, state.run.finished_at)
            assert state.status == "completed", state.run
            assert state.run.completed_count == args.items, state.run
            print(f"queued run accepted in {accepted * 1000:.0f} ms, status {state.status}")
            _report("queued run (wait: false)", args.items, elapsed, counter.reset())
            cpu.report(args.items)

            started = time.perf_counter()
            sync = api.post(f"/api/v1/evals/{sync_eval['id']}/runs", {"wait": True})
            elapsed = time.perf_counter() - started
            assert sync["status"] == "completed", sync
            _report("synchronous run (wait: true)", SYNC_ITEMS, elapsed, counter.reset())
            cpu.report(SYNC_ITEMS)


if __name__ == "__main__":
    main()
