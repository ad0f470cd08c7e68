"""The same run settled in one pass and in slices: time, CPU and pawl's memory (the stand-in).

Starts the local runtime in-process as ``bench/settle.py`` does and seeds the same shape
(N items in 8 groups with ids as the API mints them, a settled baseline, a fully
recorded candidate of N results naming it). Then:

1. one pass: claim, ``engine.settle.settle_run`` (as a run under
   ``PAWL_SETTLE_FANOUT_ITEMS`` settles);
2. the candidate put back to running and unclaimed, then sliced: claim, plan
   ``--slice-items`` slices (``store.settle_parts.plan``) and call the slice worker
   (``engine.settle_slices.settle_slice``, what the run-queue handler calls) for each in
   turn, as if each were its own invocation; the last one combines and settles.

The two settles must store identical ``aggregate_scores`` (checked). Prints, for each
settle and each slice, its wall time, the CPU seconds of this process (pawl's side) and
of the stand-in, pawl's resident memory before and at peak (sampled every 20 ms) and the
load average: the machine is shared, so CPU seconds are the steadier figure. The process's
resident memory only grows (the allocator keeps what a settle freed), so a second settle
in it shows no rise; ``--traced`` then settles both ways once more under ``tracemalloc``
(several times slower; not timed) and prints the peak of Python's own allocations during
the one pass and during each slice: what each invocation would need beyond its baseline. On Lambda
the slices run side by side (``bench/capacity.py``'s ``settle_seconds`` models that); here
they run one after another on a loaded machine.

    .venv/bin/python bench/settle_sliced.py [--items 100000] [--slice-items 25000]

Measured: see ``docs/scaling.md`` "Settle at a million items".
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from settle import (
    RssPeak,
    _cpu_s,
    _rss_mb,
    check,
    seed,
    seed_run,
    settle_once,
)


class Figures:
    """Wall, pawl CPU, stand-in CPU and pawl's RSS of one block."""

    def __init__(self, standin_pid: int) -> None:
        self.standin_pid = standin_pid

    def measure(self, block: Callable[[], Any]) -> dict[str, float]:
        gc.collect()
        before_mb = _rss_mb()
        cpu = (time.process_time(), _cpu_s(self.standin_pid))
        load = os.getloadavg()[0]
        started = time.perf_counter()
        with RssPeak() as rss:
            block()
        return {
            "wall_s": time.perf_counter() - started,
            "pawl_cpu_s": time.process_time() - cpu[0],
            "standin_cpu_s": _cpu_s(self.standin_pid) - cpu[1],
            "rss_before_mb": before_mb,
            "rss_peak_mb": rss.peak,
            "load": load,
        }


def line(name: str, items: int, f: dict[str, float]) -> str:
    per_item_us = f["pawl_cpu_s"] / items * 1e6 if items else 0.0
    return (
        f"{name}: {f['wall_s']:.1f} s wall at load {f['load']:.1f}; CPU pawl "
        f"{f['pawl_cpu_s']:.1f} s ({per_item_us:.0f} us/item), stand-in "
        f"{f['standin_cpu_s']:.1f} s; pawl RSS {f['rss_before_mb']:.0f} -> peak "
        f"{f['rss_peak_mb']:.0f} MB (+{f['rss_peak_mb'] - f['rss_before_mb']:.0f})"
    )


def reopen(run_id: str) -> None:
    """Put a settled run back to running and unclaimed (its rows stay), to settle again."""
    from chalicelib.domain.runs import RUNNING
    from chalicelib.store.base import serialized_writes
    from chalicelib.store.models import RunModel

    with serialized_writes():
        RunModel(id=run_id).update(
            actions=[
                RunModel.status.set(RUNNING),
                RunModel.settle_claimed.set(False),
                RunModel.aggregate_scores.remove(),
                RunModel.passed.remove(),
                RunModel.verdict_reasons.remove(),
                RunModel.finished_at.remove(),
                RunModel.active.set("1"),
            ]
        )


def sliced(run_id: str, items: int, slices: int, figures: Figures) -> list[dict[str, float]]:
    from chalicelib.engine import messages, settle_slices
    from chalicelib.store import runs, settle_parts

    assert runs.claim_settle(run_id)
    assert settle_parts.plan(run_id, slices) == set()
    measured = []
    for number in range(slices):
        message = messages.SettleSliceMessage(
            run_id=run_id, settle_slices=slices, settle_slice=number
        )
        f = figures.measure(lambda message=message: settle_slices.settle_slice(message))
        lo, hi = settle_slices.slice_bounds(slices)[number]
        print(line(f"  slice {number} [{lo}, {hi})", items // slices, f), flush=True)
        measured.append(f)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--slice-items", type=int, default=25_000)
    parser.add_argument(
        "--traced", action="store_true", help="then both again under tracemalloc: heap peaks"
    )
    arguments = parser.parse_args()
    count = arguments.items
    os.environ["PAWL_SETTLE_SLICE_ITEMS"] = str(arguments.slice_items)
    os.environ["PAWL_SETTLE_FANOUT_ITEMS"] = "1"

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from chalicelib import wiring
    from chalicelib.engine import settle_slices
    from chalicelib.store import runs
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    wiring.reload_settings()
    slices = settle_slices.slice_count(count)
    assert slices is not None
    with tempfile.TemporaryDirectory(prefix="pawl-settle-sliced-") as state_dir:
        config = RuntimeConfig(
            port=0, state_dir=Path(state_dir), snapshot_interval_s=0, run_schedules=False
        )
        with LocalRuntime(config) as runtime:
            assert runtime.standin is not None and runtime.standin.pid is not None
            figures = Figures(runtime.standin.pid)
            started = time.perf_counter()
            snapshot, eval_id, baseline_id, item_ids = seed(count, random_ids=True)
            candidate_id = seed_run(snapshot, eval_id, baseline_id, item_ids)
            del item_ids
            print(f"N={count:,}: seeded in {time.perf_counter() - started:.0f} s", flush=True)
            settle_once(baseline_id)  # its digest: the candidate compares against it

            one = figures.measure(lambda: settle_once(candidate_id))
            check(candidate_id, count)
            one_pass = runs.get_run(candidate_id).run.aggregate_scores
            print(line(f"N={count:,} one pass", count, one), flush=True)

            reopen(candidate_id)
            print(f"N={count:,} in {slices} slices, one after another:", flush=True)
            parts = sliced(candidate_id, count, slices, figures)
            check(candidate_id, count)
            identical = runs.get_run(candidate_id).run.aggregate_scores == one_pass
            total = {key: sum(f[key] for f in parts) for key in ("wall_s", "pawl_cpu_s")}
            peak = max(f["rss_peak_mb"] - f["rss_before_mb"] for f in parts)
            slowest = max(f["wall_s"] for f in parts)
            print(
                f"N={count:,} sliced: {total['wall_s']:.1f} s wall in all "
                f"(slowest slice {slowest:.1f} s, the last with the combine), CPU pawl "
                f"{total['pawl_cpu_s']:.1f} s; largest slice RSS rise +{peak:.0f} MB; "
                f"aggregates identical to one pass: {identical}",
                flush=True,
            )
            assert identical
            if arguments.traced:
                traced(candidate_id, count, slices)


def traced(run_id: str, count: int, slices: int) -> None:
    """The peak of Python's allocations during a one-pass settle and during each slice."""
    from chalicelib.engine import messages, settle_slices
    from chalicelib.store import runs, settle_parts

    reopen(run_id)
    gc.collect()
    tracemalloc.start()
    settle_once(run_id)
    one_pass_mb = tracemalloc.get_traced_memory()[1] / 1e6
    reopen(run_id)
    assert runs.claim_settle(run_id)
    settle_parts.plan(run_id, -1)  # a new plan: the stored slices are forgotten
    assert settle_parts.plan(run_id, slices) == set()
    peaks = []
    for number in range(slices):
        gc.collect()
        tracemalloc.reset_peak()
        start_mb = tracemalloc.get_traced_memory()[0] / 1e6
        settle_slices.settle_slice(
            messages.SettleSliceMessage(run_id=run_id, settle_slices=slices, settle_slice=number)
        )
        peaks.append(tracemalloc.get_traced_memory()[1] / 1e6 - start_mb)
    tracemalloc.stop()
    check(run_id, count)
    print(
        f"N={count:,} traced heap peak: one pass {one_pass_mb:.1f} MB; slices "
        + ", ".join(f"{peak:.1f}" for peak in peaks)
        + " MB (the last with the combine)",
        flush=True,
    )


if __name__ == "__main__":
    main()
