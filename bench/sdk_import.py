"""CPU cost of ``import pawl`` and of the client's first use, each in a fresh interpreter.

``import pawl`` should cost next to nothing (each public name is imported on first use);
``pawl.Client`` then loads httpx (timed on its own) and the client with its generated
operations. Bytecode is compiled once
into a temporary cache first, as an installed package has it, so the figures are what a
user's process pays, not compilation.

    python bench/sdk_import.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Each step's own CPU (process time), in ms, printed by the child.
PROBE = """
import time
started = time.process_time()
import pawl
imported = time.process_time()
import httpx
with_httpx = time.process_time()
pawl.Client, pawl.AsyncClient
used = time.process_time()
steps = (imported - started, with_httpx - imported, used - with_httpx)
print(" ".join(f"{1000 * step:.3f}" for step in steps))
"""


def one_round(env: dict[str, str]) -> list[float]:
    """(import pawl, import httpx, the client's own modules) in ms of CPU."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return [float(figure) for figure in done.stdout.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": cache}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        one_round(env)  # writes the bytecode
        rounds = [one_round(env) for _ in range(args.rounds)]
    print(f"rounds: {args.rounds} (fresh interpreters, bytecode cached); median ms of CPU")
    labels = ("import pawl", "import httpx", "then pawl.Client (client + operations)")
    for at, label in enumerate(labels):
        print(f"{label:<40} {statistics.median(r[at] for r in rounds):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
