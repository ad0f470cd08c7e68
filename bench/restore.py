"""How long ``pawl serve`` takes to bring a saved state back: restore, replay, start.

Copies a state dir (made by ``pawl serve``, or by ``bench/standin_load.py --keep-state
DIR``: a 10,000-item run leaves about 40,000 rows, 16 MB) to a temporary one and starts
the local runtime on the copy, as ``pawl serve --state-dir`` does. Prints the rows in the
snapshot, the seconds the stand-in spent loading them into moto, the journal records
replayed after it, and the whole start (stand-in, bootstrap, restore, replay, counts,
re-drive, workers) to the moment the API answers. A state dir without ``snapshot.json``
(``bench/standin_load.py --snapshot-interval 0 --keep-unclean DIR``) is all journal: its
round shows the journal's replay rate in MB/s.

    .venv/bin/python bench/restore.py DIR [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import httpx


def one_round(source: Path) -> tuple[float, dict[str, float], dict[str, float]]:
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory() as scratch:
        state_dir = Path(scratch) / "state"
        shutil.copytree(source, state_dir, ignore=shutil.ignore_patterns(".lock"))
        config = RuntimeConfig(
            port=0, state_dir=state_dir, snapshot_interval_s=0, run_schedules=False
        )
        started = time.perf_counter()
        runtime = LocalRuntime(config).start()
        try:
            httpx.get(f"{runtime.url}/health", timeout=60).raise_for_status()
            whole = time.perf_counter() - started
            assert runtime.replayed is not None
            restored = runtime.replayed.get("restored") or {}
            return whole, restored, runtime.replayed
        finally:
            runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("state_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = args.state_dir / "snapshot.json"
    if path.exists():
        document = json.loads(path.read_bytes())
        rows = sum(len(items) for items in document["tables"].values())
        size_mb = path.stat().st_size / 1e6
        print(f"snapshot: {rows} rows, {len(document['objects'])} objects, {size_mb:.1f} MB")
    else:
        print("no snapshot: the whole state is journal")
    for round_number in range(1, args.rounds + 1):
        whole, restored, replayed = one_round(args.state_dir)
        seconds, size = replayed.get("replay_seconds", 0), replayed.get("replayed_bytes", 0)
        rate = f"{size / 1e6 / seconds:.1f} MB/s" if seconds else "-"
        print(
            f"round {round_number}: restore {restored.get('seconds', 0):.2f} s in the stand-in "
            f"({restored.get('cpu_seconds', 0):.2f} s CPU); replayed {replayed['replayed']} "
            f"journal records, {size / 1e6:.1f} MB in {seconds:.2f} s ({rate}, "
            f"{replayed.get('replay_cpu_seconds', 0):.2f} s CPU, {replayed['refused']} refused); "
            f"start to /health {whole:.2f} s"
        )


if __name__ == "__main__":
    main()
