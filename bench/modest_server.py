"""Runs against a modest agent server: errored items and attempts at several concurrencies.

The agent is what many prototypes run on: Python's ``http.server.ThreadingHTTPServer`` as
it comes (listen backlog 5, HTTP/1.0, so a new connection per call), in its own process
on 127.0.0.1 (``bench/instant_agent.py --modest``). pawl is an in-process
``pawl.local`` runtime (the AWS stand-in in its own process, SQS pollers calling
the real handlers), as in ``bench/run_throughput.py``. For each round and each
concurrency it starts a fresh agent, a queued run of N items over one shared dataset,
waits until the run is terminal, reads every result through the API and prints:

- errored items (and their distinct error messages),
- items/s (from the run's own created/finished stamps),
- attempts per item (mean, max) and retries in all (attempts beyond the first),
- the calls the agent answered (more than the items when a call it answered was retried:
  that would be a defect for a repeatable call that had been answered, so it is shown).

    .venv/bin/python bench/modest_server.py [--items 1000] [--concurrency 10,40,200]
        [--rounds 3] [--workers 4] [--delay-ms 0]

The figures depend on the machine's load: run it while the machine does other work too,
since a loaded machine is when a backlog of 5 overflows.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx


@dataclass
class Figures:
    concurrency: int
    items: int
    errored: int
    items_per_s: float
    attempts_mean: float
    attempts_max: int
    retries: int
    agent_calls: int
    errors: Counter[str]


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600
        )

    def post(self, path: str, body: Any, *, ndjson: bool = False) -> Any:
        if ndjson:
            headers = {"Content-Type": "application/x-ndjson"}
            response = self.http.post(path, content=body, headers=headers)
        else:
            response = self.http.post(path, json=body)
        if response.status_code >= 300:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")
        return response.json()

    def get(self, path: str) -> Any:
        response = self.http.get(path)
        if response.status_code >= 300:
            raise RuntimeError(f"{path}: {response.status_code} {response.text}")
        return response.json()


class AgentProcess:
    """``instant_agent.py --modest`` in its own process; ``stop()`` returns its call count."""

    def __init__(self, delay_ms: float) -> None:
        script = Path(__file__).with_name("instant_agent.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--modest", "--delay-ms", str(delay_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = int(json.loads(self.process.stdout.readline())["port"])
        self.url = f"http://127.0.0.1:{self.port}/"

    def stop(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        calls = int(json.loads(self.process.stdout.readline())["calls"])
        self.process.wait(timeout=30)
        return calls


def _allow_port(port: int) -> None:
    """Outbound calls reach loopback only on ports the operator names."""
    from chalicelib import wiring

    entries = [e for e in os.environ.get("PAWL_ALLOW_PRIVATE_URLS", "").split(",") if e]
    os.environ["PAWL_ALLOW_PRIVATE_URLS"] = ",".join([*entries, f"loopback:{port}"])
    wiring.reload_settings()


def _dataset(api: Api, project_id: str, items: int) -> dict[str, Any]:
    dataset = api.post("/api/v1/datasets", {"project_id": project_id, "name": "modest"})
    lines = [
        json.dumps({"input": [{"role": "user", "content": f"case {i}: ok"}]}) for i in range(items)
    ]
    for start in range(0, items, 99):  # the bulk import's limit per request
        body = "\n".join(lines[start : start + 99]).encode()
        api.post(f"/api/v1/datasets/{dataset['id']}/items:import", body, ndjson=True)
    return dataset


def _wait_terminal(api: Api, eval_id: str, run_id: str, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = api.get(f"/api/v1/evals/{eval_id}/runs/{run_id}")
        if run["status"] not in {"queued", "running"}:
            return run
        time.sleep(0.5)
    raise TimeoutError(f"run {run_id} did not finish in {timeout_s}s")


def _results(api: Api, eval_id: str, run_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        path = f"/api/v1/evals/{eval_id}/runs/{run_id}/results?limit=100"
        page = api.get(path + (f"&cursor={cursor}" if cursor else ""))
        found += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def _seconds(run: dict[str, Any]) -> float:
    parse = datetime.fromisoformat
    started = parse(run["created_at"].replace("Z", "+00:00"))
    finished = parse(run["finished_at"].replace("Z", "+00:00"))
    return (finished - started).total_seconds()


def measure(
    api: Api, project_id: str, dataset_id: str, items: int, concurrency: int, delay_ms: float
) -> Figures:
    agent_process = AgentProcess(delay_ms)
    try:
        _allow_port(agent_process.port)
        agent = api.post(
            "/api/v1/agents",
            {
                "project_id": project_id,
                "name": f"modest-{agent_process.port}-{time.monotonic_ns()}",
                "type": "http",
                "config": {"url": agent_process.url},
            },
        )
        evaluation = api.post(
            "/api/v1/evals",
            {
                "project_id": project_id,
                "name": f"modest-{concurrency}-{time.monotonic_ns()}",
                "agent_id": agent["id"],
                "dataset_id": dataset_id,
                "scorers": [{"type": "contains", "value": "ok"}],
                "max_concurrency": concurrency,
            },
        )
        run = api.post(f"/api/v1/evals/{evaluation['id']}/runs", {})
        run = _wait_terminal(api, evaluation["id"], run["id"], timeout_s=3600)
        results = _results(api, evaluation["id"], run["id"])
    finally:
        calls = agent_process.stop()
    attempts = [r.get("attempts") or 0 for r in results]
    errors = Counter(str(r["error"])[:160] for r in results if r.get("error"))
    return Figures(
        concurrency=concurrency,
        items=len(results),
        errored=sum(1 for r in results if r.get("error")),
        items_per_s=len(results) / max(_seconds(run), 1e-9),
        attempts_mean=statistics.fmean(attempts) if attempts else 0.0,
        attempts_max=max(attempts, default=0),
        retries=sum(max(0, a - 1) for a in attempts),
        agent_calls=calls,
        errors=errors,
    )


def _print(round_no: int, figures: Figures) -> None:
    print(
        f"round {round_no}  concurrency {figures.concurrency:4}  items {figures.items:5}  "
        f"errored {figures.errored:4}  {figures.items_per_s:7.1f} items/s  "
        f"attempts mean {figures.attempts_mean:.3f} max {figures.attempts_max:3}  "
        f"retries {figures.retries:5}  agent saw {figures.agent_calls:5} calls",
        flush=True,
    )
    for message, count in figures.errors.most_common(5):
        print(f"      {count:5} x {message}", flush=True)


@contextmanager
def runtime(workers: int) -> Iterator[Api]:
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory() as state_dir:
        config = RuntimeConfig(
            port=0,
            state_dir=Path(state_dir),
            snapshot_interval_s=0,
            run_schedules=False,
            item_workers=workers,
            poll_wait_s=1,
        )
        with LocalRuntime(config) as running:
            yield Api(running.url, running.admin_key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", default="10,40,200", help="comma-separated")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=4, help="item-queue poller threads")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="agent latency")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    with runtime(args.workers) as api:
        project = api.post("/api/v1/projects", {"name": "modest-server"})
        dataset = _dataset(api, project["id"], args.items)
        print(
            f"{args.items} items, a ThreadingHTTPServer agent (backlog 5, HTTP/1.0) per run, "
            f"{args.workers} item workers, os.cpu_count()={os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for round_no in range(1, args.rounds + 1):
            for concurrency in levels:
                figures = measure(
                    api, project["id"], dataset["id"], args.items, concurrency, args.delay_ms
                )
                _print(round_no, figures)


if __name__ == "__main__":
    main()
