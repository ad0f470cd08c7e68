"""CPU seconds a ``pawl`` command spends before (and for) its request, per child process.

Runs each command as a fresh process, as a person's shell does: ``pawl --help``,
``pawl list-evals --help``, ``pawl list-evals`` against a closed port on 127.0.0.1 (all of
start-up, then a refused connection), and ``pawl list-evals --output json`` answered by a
tiny server on 127.0.0.1 (start-up, the request, the answer printed). Each figure is the
child's user + system CPU (``resource.getrusage(RUSAGE_CHILDREN)`` before and after it),
over ``--runs`` runs after one warm-up; the median is the figure to quote, min and max show
how noisy the machine was. ``python -c pass`` is the floor: the interpreter alone.

    .venv/bin/python bench/cli_startup.py [--runs 9] [--pythonpath DIR]

``--pythonpath DIR`` measures the ``pawl`` of another checkout (say, an older commit
exported with ``git archive``) with the same interpreter, for a before/after pair.
Bytecode is written to (and read from) a temporary ``PYTHONPYCACHEPREFIX``, so the counted
runs read compiled modules as an installed package does, even where
``PYTHONDONTWRITEBYTECODE`` is set. The budget (issue 25): at most 0.25 s of CPU.

Measured (2026-12-02, 2 cores shared with six other sessions, load average 3-4; median
of 9 runs now, of 5 for the checkout before the operation table):

    python -c pass (the interpreter alone)    0.053 s
    pawl --help                               0.113 s   (before: 3.01 s)
    pawl list-evals --help                    0.124 s   (before: 3.01 s)
    pawl list-evals (a closed port)           0.185 s   (before: 3.02 s)
    pawl list-evals --output json (a server)  0.181 s   (before: 3.12 s)

Under heavier load (load average 6-7) the same runs read up to 0.28 s, the bare
interpreter 0.066 s: quote the figures with the load they were taken at.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 0.25
LISTING = json.dumps(
    {"data": [{"id": f"eval_{i:026d}", "name": f"eval {i}"} for i in range(20)], "total": 20}
).encode()


class _Listing(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(LISTING)))
        self.end_headers()
        self.wfile.write(LISTING)

    def log_message(self, *args: Any) -> None:
        return None


@contextmanager
def listing_server() -> Iterator[str]:
    """A server on 127.0.0.1 answering every GET with a page of 20 evals; yields its URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Listing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def closed_port() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound but not listening: every connection refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def child_cpu(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """User + system CPU seconds of one run of ``command`` (its output thrown away)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # cwd: `python -m` puts the working directory first on sys.path, before PYTHONPATH.
    quiet = subprocess.DEVNULL
    subprocess.run(command, env=env, cwd=cwd, stdout=quiet, stderr=quiet, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(samples: list[float]) -> str:
    """``median [min-max]`` in seconds (a pure function of the samples)."""
    return f"{statistics.median(samples):.3f} s [{min(samples):.3f}-{max(samples):.3f}]"


def measure(command: list[str], env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    child_cpu(command, env, cwd)  # warm-up: writes the bytecode the counted runs read
    return [child_cpu(command, env, cwd) for _ in range(runs)]


def _env(pythonpath: Path, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAWL_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYTHONPATH=str(pythonpath), PYTHONPYCACHEPREFIX=cache, PAWL_API_KEY="pawl.k")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="counted runs of each command")
    parser.add_argument(
        "--pythonpath", type=Path, default=ROOT, help="the checkout whose pawl is measured"
    )
    args = parser.parse_args()
    pawl = [sys.executable, "-m", "pawl.cli"]
    with (
        tempfile.TemporaryDirectory(prefix="pawl-pyc-") as cache,
        listing_server() as server,
        closed_port() as refused,
    ):
        checkout = args.pythonpath.resolve()
        env = _env(checkout, cache)
        cases = [
            ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"]),
            ("pawl --help", [*pawl, "--help"]),
            ("pawl list-evals --help", [*pawl, "list-evals", "--help"]),
            ("pawl list-evals (a closed port)", [*pawl, "list-evals", "--server", refused]),
            (
                "pawl list-evals --output json (a server)",
                [*pawl, "list-evals", "--server", server, "--output", "json"],
            ),
        ]
        print(f"pawl CLI start-up, {args.pythonpath}: CPU (user+sys) of each child process,")
        print(f"median [min-max] of {args.runs} runs after a warm-up; budget {BUDGET_S} s")
        floor = None
        for label, command in cases:
            samples = measure(command, env, checkout, args.runs)
            floor = statistics.median(samples) if floor is None else floor
            over = statistics.median(samples) - floor
            extra = f"  (+{over:.3f} s over the interpreter)" if over > 0 else ""
            print(f"  {label:<44} {summary(samples)}{extra}", flush=True)


if __name__ == "__main__":
    main()
