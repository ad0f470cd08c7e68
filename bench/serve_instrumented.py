"""``pawl serve`` with the counters a benchmark needs, written to a JSON file as it runs.

    PAWL_BENCH_COUNTERS=/tmp/counters.json python bench/serve_instrumented.py [serve args]

It is the ``pawl`` console script's own ``main`` (``pawl.cli.main:main``) with ``serve``
and the arguments given, so the runtime, stand-in, pollers and API are exactly a user's.
Before it starts, it wraps two things, for measurement only (answers are unchanged):

- botocore's ``BaseClient._make_api_call``, the one place every AWS call of the process
  goes through (boto3 clients and PynamoDB's), to count calls by service and operation;
- ``chalicelib.engine.settle.settle_run``, to time each settle and sample this process's
  resident memory while it runs.

Every half second (and at exit) the file is rewritten with
``{"calls": {"service:Operation": n}, "settles": [{"run_id", "seconds", "started",
"rss_before_mb", "rss_peak_mb"}]}``. With ``PAWL_BENCH_TIMELINE=1`` it also holds
``"timeline"``: the last :data:`TIMELINE_CALLS` calls as ``[started (epoch s), thread,
"Operation", ms]``, which is how ``bench/latency.py --call-timeline`` shows what a run's
last steps waited on.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import botocore.client

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: Calls the timeline keeps (the most recent).
TIMELINE_CALLS = 5000


def rss_mb() -> float:
    """This process's resident set, in MB (Linux /proc)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE_SIZE / 1e6


class Counters:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: Counter[str] = Counter()
        self.settles: list[dict[str, Any]] = []
        self.timeline: deque[tuple[float, str, str, float]] | None = (
            deque(maxlen=TIMELINE_CALLS) if os.environ.get("PAWL_BENCH_TIMELINE") else None
        )
        self.lock = threading.Lock()
        self._settling = 0
        self._settle_peak = 0.0

    def count_call(self, service: str, operation: str) -> None:
        with self.lock:
            self.calls[f"{service}:{operation}"] += 1

    def timed_call(self, operation: str, started: float, seconds: float) -> None:
        if self.timeline is not None:
            name = threading.current_thread().name
            self.timeline.append((started, name, operation, round(seconds * 1000, 2)))

    def timed_settle(self, settle_run: Callable[[str], bool]) -> Callable[[str], bool]:
        def timed(run_id: str) -> bool:
            before = rss_mb()
            with self.lock:
                self._settling += 1
                self._settle_peak = max(self._settle_peak, before)
            started, started_at = time.perf_counter(), time.time()
            try:
                return settle_run(run_id)
            finally:
                seconds = time.perf_counter() - started
                with self.lock:
                    self._settling -= 1
                    peak = max(self._settle_peak, rss_mb())
                    if self._settling == 0:
                        self._settle_peak = 0.0
                    self.settles.append(
                        {
                            "run_id": run_id,
                            "seconds": seconds,
                            "started": started_at,
                            "rss_before_mb": before,
                            "rss_peak_mb": peak,
                        }
                    )

        return timed

    def sample(self) -> None:
        """A settle's peak memory: sampled here as well as at its start and end."""
        with self.lock:
            if self._settling:
                self._settle_peak = max(self._settle_peak, rss_mb())

    def write(self) -> None:
        with self.lock:
            data: dict[str, Any] = {"calls": dict(self.calls), "settles": list(self.settles)}
            if self.timeline is not None:
                data["timeline"] = list(self.timeline)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data))
        temporary.replace(self.path)

    def run_writer(self) -> None:
        ticks = 0
        while True:
            time.sleep(0.1)
            self.sample()
            ticks += 1
            if ticks % 5 == 0:
                self.write()


def install(counters: Counters) -> None:
    original = botocore.client.BaseClient._make_api_call

    def counted(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
        counters.count_call(client.meta.service_model.service_name, operation_name)
        started, clock = time.time(), time.perf_counter()
        try:
            return original(client, operation_name, api_params)
        finally:
            counters.timed_call(operation_name, started, time.perf_counter() - clock)

    botocore.client.BaseClient._make_api_call = counted  # type: ignore[method-assign]

    from chalicelib.engine import settle

    settle.settle_run = counters.timed_settle(settle.settle_run)  # type: ignore[assignment]


def main() -> None:
    counters = Counters(Path(os.environ["PAWL_BENCH_COUNTERS"]))
    install(counters)
    threading.Thread(target=counters.run_writer, daemon=True, name="bench-counters").start()
    atexit.register(counters.write)
    from pawl.cli.main import main as pawl_main

    sys.argv = ["pawl", "serve", *sys.argv[1:]]
    pawl_main()


if __name__ == "__main__":
    main()
