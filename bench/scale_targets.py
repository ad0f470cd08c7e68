"""Issue 27's "keep what holds" table, re-measured with one command (``bench/scale.py --targets``).

What it measures, each through ``bench/scale.py``'s ``measure`` (a fresh ``pawl serve`` per
run, the instant HTTP agent, ``max_concurrency`` 40, 4 item workers):

- **1,000 items**, ``--small-rounds`` times (3 by default; the median by items/s is the
  row): a 2 s run is noisy;
- **100,000 items**, once (its baseline and the measured run: about 4 minutes each on an
  idle 2-core machine, plus seeding);
- each **with a baseline run** of its size first, during which the 20 run starts are
  timed ("run starts < 1 s p99 during a 100k run": the baseline is one), so the measured
  run's AWS calls are its own (at 1k the starts' calls would add ~0.6 per item, at 100k
  ~0.006); the 100k measured run then writes over a results table holding the baseline's
  100,000 rows, as a second run does (``--baseline-up-to 10000`` skips the 100k baseline:
  half the time, the starts timed during the measured run, their calls in its figure);
- the **kill -9 matrix**: ``pytest -m slow tests/e2e/test_kill9.py`` (22 kill points of
  ``pawl serve``; its pass/fail and duration), unless ``--skip-kill9``.

Then it prints ``bench/scale.py``'s table of the runs and the targets:

| target | as issue 27 states it |
| --- | --- |
| AWS calls per item | ≤ 0.1 (every botocore call of ``pawl serve``, pollers' too) |
| flat to 100k | the 100k rate ≥ 80 % of the 1k rate |
| run starts | < 1 s p99 during the 100k run |
| kill -9 matrix | passes |

    PYTHONPATH=$PWD .venv/bin/python bench/scale.py --targets [--small-rounds 3]
        [--sizes 1000 100000] [--skip-kill9]

``--sizes`` changes the two sizes (the smallest is the reference rate, the largest the
one held to it): ``--sizes 1000 --skip-kill9`` checks the tooling in a couple of minutes.
The load average is printed with the table: the rates are wall-clock figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scale

ROOT = Path(__file__).resolve().parent.parent
CALLS_PER_ITEM = 0.1
FLAT_RATIO = 0.8
START_P99_MS = 1000.0
#: Sizes up to this run ``--small-rounds`` times; larger ones once.
SMALL = 10_000


@dataclass
class Kill9:
    passed: bool
    seconds: float
    summary: str


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def kill9_matrix() -> Kill9:
    """The kill -9 matrix, as its test runs it (``tests/e2e/test_kill9.py``, slow)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-m", "slow"]
    command += ["tests/e2e/test_kill9.py"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [line.strip(" =") for line in done.stdout.splitlines() if line.strip(" =")]
    return Kill9(done.returncode == 0, time.perf_counter() - started, lines[-1] if lines else "")


def measure_size(size: int, args: Any) -> scale.Measured:
    rounds = args.small_rounds if size <= SMALL else 1
    taken = []
    for number in range(1, rounds + 1):
        started = time.perf_counter()
        taken.append(scale.measure(size, args))
        print(
            f"N={size:,} round {number}/{rounds}: {taken[-1].items_per_s:.0f} items/s "
            f"({time.perf_counter() - started:.0f} s with seeding; load "
            f"{os.getloadavg()[0]:.1f})",
            flush=True,
        )
    taken.sort(key=lambda m: m.items_per_s)
    return taken[len(taken) // 2]


def _holds(ok: bool) -> str:
    return "holds" if ok else "**missed**"


def targets_table(rows: list[scale.Measured], kill9: Kill9 | None) -> str:
    small, large = rows[0], rows[-1]
    lines = ["| target | measured | |", "| --- | --- | --- |"]
    for row in rows:
        # A run's fixed calls (start, fan-out, settle) weigh on a small run: the target is
        # the large run's, the small one's figure is its reference.
        verdict = _holds(row.calls_per_item <= CALLS_PER_ITEM) if row is large else "reference"
        lines.append(
            f"| ≤ {CALLS_PER_ITEM} AWS calls per item at {row.items:,} "
            f"| {row.calls_per_item:.3f} (engine {row.engine_calls_per_item:.3f}) "
            f"| {verdict} |"
        )
    ratio = large.items_per_s / small.items_per_s
    lines.append(
        f"| {large.items:,} rate ≥ {FLAT_RATIO:.0%} of the {small.items:,} rate "
        f"| {large.items_per_s:.0f} / {small.items_per_s:.0f} items/s = {ratio:.0%} "
        f"| {_holds(ratio >= FLAT_RATIO)} |"
    )
    worst = p99(large.starts_ms)
    during = "baseline run" if large.baseline else "run"
    lines.append(
        f"| run start p99 < {START_P99_MS / 1000:.0f} s during the {large.items:,} {during} "
        f"| {worst:.0f} ms (p50 {statistics.median(large.starts_ms):.0f} ms; "
        f"{large.starts_while_running} of {len(large.starts_ms)} while it ran) "
        f"| {_holds(worst < START_P99_MS and large.starts_while_running > 0)} |"
    )
    if kill9 is None:
        lines.append("| kill -9 matrix (`tests/e2e/test_kill9.py`) | not run (--skip-kill9) | |")
    else:
        lines.append(
            f"| kill -9 matrix (`tests/e2e/test_kill9.py`) | {kill9.summary} "
            f"({kill9.seconds:.0f} s) | {_holds(kill9.passed)} |"
        )
    return "\n".join(lines)


def run_targets(args: Any) -> None:
    sizes = sorted(args.sizes if args.sizes_given else [1_000, 100_000])
    rows = []
    for size in sizes:
        rows.append(measure_size(size, args))
        print(scale.table(rows, args), flush=True)
    kill9 = None
    if not args.skip_kill9:
        print("the kill -9 matrix (tests/e2e/test_kill9.py)...", flush=True)
        kill9 = kill9_matrix()
    print()
    print(scale.table(rows, args))
    print()
    print(targets_table(rows, kill9))
