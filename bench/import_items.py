"""Bulk import throughput: a 10,000-line JSON Lines file through ``pawl datasets import``.

Starts an in-process local runtime (the AWS stand-in in its own process, the API over
HTTP; no pollers needed), writes a JSONL file of N items (each a user message of about
60 characters and a small metadata object), and imports it into a fresh dataset with the
CLI's own code (:func:`pawl.cli.datasets.import_file`), once per ``--parallel``
value. Prints items/s and the wall time of each; checks the dataset holds every item.

    .venv/bin/python bench/import_items.py [--items 10000] [--parallel 1 4]

Wall-clock figures on a shared machine are noisy; run it more than once.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path

from pawl.cli.datasets import import_file
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.transport import PawlClient


def _write(path: Path, items: int) -> None:
    with path.open("w") as handle:
        for i in range(items):
            item = {
                "input": [{"role": "user", "content": f"case {i}: what is the refund policy?"}],
                "expected_output": "30 days",
                "metadata": {"topic": "billing", "index": i},
            }
            handle.write(json.dumps(item) + "\n")


def _cpu_seconds(standin_pid: int) -> tuple[float, float]:
    """CPU seconds of this process (API and CLI) and of the stand-in (Linux /proc)."""
    fields = Path(f"/proc/{standin_pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return time.process_time(), (int(fields[11]) + int(fields[12])) / ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "items.jsonl"
        _write(path, args.items)
        print(f"{args.items} lines, {path.stat().st_size / 1e6:.1f} MB")
        config = RuntimeConfig(
            port=0, state_dir=Path(tmp) / "state", snapshot_interval_s=0, run_schedules=False
        )
        with LocalRuntime(config) as runtime, PawlClient(runtime.url, runtime.admin_key) as admin:
            project = admin.create_project("bench-import")
            key = admin.create_api_key(project["id"], "bench")["key"]
            with PawlClient(runtime.url, key, timeout_s=120) as client:
                for parallel in args.parallel:
                    dataset = client.create_dataset({"name": f"import-{parallel}"})
                    assert runtime.standin is not None and runtime.standin.pid is not None
                    cpu = _cpu_seconds(runtime.standin.pid)
                    started = time.perf_counter()
                    outcome = import_file(client, dataset["id"], path, parallel=parallel)
                    elapsed = time.perf_counter() - started
                    assert outcome.imported == args.items and not outcome.refusal, outcome
                    pawl_ms, standin_ms = (
                        (after - before) / args.items * 1000
                        for after, before in zip(
                            _cpu_seconds(runtime.standin.pid), cpu, strict=True
                        )
                    )
                    print(
                        f"--parallel {parallel}: {args.items} items in {elapsed:.2f} s = "
                        f"{args.items / elapsed:,.0f} items/s; CPU per item: pawl (API and "
                        f"CLI) {pawl_ms:.2f} ms, stand-in {standin_ms:.2f} ms"
                    )


if __name__ == "__main__":
    main()
