"""How close one latency-bound run comes to its limit, and where the rest of the time goes.

The case of issue 27 part 5: 1,000 items, a keep-alive HTTP agent on 127.0.0.1 that
answers after 200 ms (``bench/instant_agent.py --delay-ms 200``, its own process),
``max_concurrency`` 40, through ``pawl run`` (the CI command, its own process) against a
``pawl serve`` started once (``bench/scale.py``'s, the console script's ``main``). The
limit is 40 / 0.2 s = 200 items/s, so 1,000 items take at least 5.0 s.

    PYTHONPATH=$PWD .venv/bin/python bench/latency.py [--rounds 3] [--items 1000]
        [--delay-ms 200] [--concurrency 40] [--item-workers 4] [--keep-timeline FILE]
        [--call-timeline FILE] [--py-spy FILE]

Per round it prints the run's stamps time (``created_at`` -> ``finished_at``, the figure
of record), the whole command's time (process start to exit), each as % of the limit,
the load average, and the steps, all on one clock (this machine's):

- ``command start-up``: the ``pawl run`` process started -> the run created (Python,
  imports, resolving the eval, the start request);
- ``queued -> fan-out``: created -> ``started_at`` (the run queue's poll);
- ``fan-out -> first call``: ``started_at`` -> the agent's first call arrives (the first
  page frozen and enqueued, the item queue's receive, the batch's read);
- the agent's window, first call in -> last answer out, split into the agent's own time
  (sum of call durations / concurrency: what 40 busy slots would take) and the idle slots
  (concurrency minus calls in flight, integrated, / concurrency) in three phases:
  ``ramp`` (until 40 are first in flight), ``middle`` and ``tail`` (from the last moment 40
  were in flight);
- ``last answer -> finished``: the last result recorded, the settle claimed and run;
  ``settle`` (inside it): ``settle_run``'s own time, from ``bench/serve_instrumented.py``;
- ``finished -> exit``: the command's wait noticing, its report, its exit.

And the CPU seconds each process spent over the round (``pawl run``'s from its rusage,
``pawl serve``'s and the stand-in's from /proc): steadier than the wall clock on a shared
machine, and what the idle slots come from when the two cores are busy.

The figure of record is taken on a quiet machine: the load average is printed with each
round because every wall-clock figure here moves with it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import scale  # noqa: E402  (pawl serve, the agent process, the API helpers)
from run_throughput import instant_http_agent  # noqa: E402


@dataclass
class Round:
    items: int
    limit_s: float
    stamps_s: float
    command_s: float
    load: float
    #: (step, seconds), in the order they happen.
    steps: list[tuple[str, float]] = field(default_factory=list)
    #: CPU seconds over the round: the command, pawl serve, the stand-in.
    cpu_s: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"run's stamps {self.stamps_s:.2f} s ({self.limit_s / self.stamps_s:.1%} of the "
            f"limit), whole command {self.command_s:.2f} s "
            f"(+{self.command_s - self.stamps_s:.2f} s, {self.limit_s / self.command_s:.1%}), "
            f"load {self.load:.2f}"
        )


def in_flight_phases(
    calls: list[tuple[float, float]], concurrency: int
) -> tuple[float, dict[str, float]]:
    """(the agent's busy time / concurrency, idle slot-seconds / concurrency per phase).

    ``calls`` are (arrived, answered) pairs. The phases: ``ramp`` from the first arrival
    until ``concurrency`` calls are first in flight, ``tail`` from the last moment that many
    were in flight to the last answer, ``middle`` between. Busy + the three idle figures
    add up to the window, first arrival -> last answer.
    """
    events = sorted([(t, 1) for t, _ in calls] + [(t, -1) for _, t in calls])
    start, end = events[0][0], events[-1][0]
    busy = sum(b - a for a, b in calls) / concurrency
    full_first = full_last = None
    level = 0
    for moment, step in events:
        if level >= concurrency and full_first is not None:
            full_last = moment  # the saturated stretch that ends here
        level += step
        if level >= concurrency and full_first is None:
            full_first = moment
    if full_first is None:  # never saturated: it is all ramp
        full_first = full_last = end
    assert full_last is not None
    idle = {"ramp": 0.0, "middle": 0.0, "tail": 0.0}
    level, previous = 0, start
    for moment, step in events:
        phase = "ramp" if previous < full_first else "tail" if previous >= full_last else "middle"
        idle[phase] += max(0, concurrency - level) * (moment - previous) / concurrency
        level += step
        previous = moment
    return busy, idle


def _pawl_run(serve: scale.Serve, eval_id: str, work: Path) -> tuple[float, float, str, float]:
    """``pawl run`` as CI runs it: (its start, its exit, the run id, its CPU seconds)."""
    command = [sys.executable, "-m", "pawl.cli", "run", "--eval", eval_id]
    command += ["--server", serve.url, "--api-key", serve.admin_key]
    started = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    answer = subprocess.run(command, capture_output=True, text=True, cwd=work, check=False)
    ended = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if answer.returncode != 0:
        raise RuntimeError(f"pawl run exited {answer.returncode}: {answer.stderr}")
    first = answer.stdout.split()
    run_id = first[first.index("run") + 1]
    return started, ended, run_id, cpu_s


def _fanout_done_at(log: Path, run_id: str) -> float | None:
    """When the fan-out said it had enqueued the run's items (pawl.log's INFO line)."""
    for line in log.read_text().splitlines():
        if run_id in line and "enqueued" in line:
            stamp = line[:23]  # "2026-01-01 00:00:00,123" (local time, as the log writes it)
            return (
                time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S"))
                + int(stamp[20:23]) / 1000
            )
    return None


def one_round(
    serve: scale.Serve, api: scale.Api, agent: httpx.Client, eval_id: str, args: Any
) -> Round:
    agent.get("/_timeline")  # forget the calls before this round
    settles_before = len(serve.settles())
    processes = {"pawl serve": serve.pid, "stand-in": serve.standin_pid}
    cpu_before = {name: scale._proc_cpu_s(pid) for name, pid in processes.items()}
    started, ended, run_id, command_cpu_s = _pawl_run(serve, eval_id, args.work_dir)
    cpu = {name: scale._proc_cpu_s(pid) - cpu_before[name] for name, pid in processes.items()}
    load = os.getloadavg()[0]
    run = api.call("GET", f"/api/v1/evals/{eval_id}/runs/{run_id}")
    assert run["status"] == "completed" and run["completed_count"] == args.items, run
    calls = [(a, b) for a, b in agent.get("/_timeline").json()]
    if args.keep_timeline:
        stamps = {k: run[k] for k in ("created_at", "started_at", "finished_at")}
        args.keep_timeline.write_text(json.dumps({"run": stamps, "calls": calls}))
    created = scale._parse(run["created_at"]).timestamp()
    fanout = scale._parse(run["started_at"]).timestamp()
    finished = scale._parse(run["finished_at"]).timestamp()
    limit = args.items * args.delay_ms / 1000 / args.concurrency
    measured = Round(args.items, limit, finished - created, ended - started, load)
    measured.cpu_s = {"pawl run": command_cpu_s, **cpu}
    first_in = min(a for a, _ in calls)
    last_out = max(b for _, b in calls)
    busy, idle = in_flight_phases(calls, args.concurrency)
    enqueued = _fanout_done_at(args.log_dir / "pawl.log", run_id)
    time.sleep(0.6)  # the counters file is rewritten every 0.5 s
    settle = [s["seconds"] for s in serve.settles()[settles_before:] if s["run_id"] == run_id]
    measured.steps = [
        ("command start-up (process -> run created)", created - started),
        ("queued -> fan-out started", fanout - created),
        ("fan-out started -> first agent call", first_in - fanout),
        ("  (fan-out done, after its start)", (enqueued - fanout) if enqueued else float("nan")),
        ("agent window: busy / concurrency", busy),
        ("agent window: idle slots, ramp", idle["ramp"]),
        ("agent window: idle slots, middle", idle["middle"]),
        ("agent window: idle slots, tail", idle["tail"]),
        ("last answer -> run finished", finished - last_out),
        ("  (settle_run inside it)", settle[0] if settle else float("nan")),
        ("run finished -> command exit", ended - finished),
    ]
    if len(calls) != args.items:
        print(f"   note: the agent saw {len(calls)} calls for {args.items} items", flush=True)
    if args.call_timeline:
        _write_call_timeline(args.call_timeline, serve, (created, first_in), (last_out, finished))
    return measured


def _write_call_timeline(
    path: Path, serve: scale.Serve, start: tuple[float, float], end: tuple[float, float]
) -> None:
    """pawl serve's AWS calls from the run's creation to the agent's first call, and from
    its last answer to the run's finish (0.1 s around each), one a line: ms after the
    window's first moment, thread, operation, its ms."""
    timeline = json.loads(serve.counters.read_text()).get("timeline", [])
    lines = []
    for title, (first, last) in (
        ("created -> first call", start),
        ("last answer -> finished", end),
    ):
        lines.append(f"# {title}: {(last - first) * 1000:.1f} ms")
        lines += [
            f"{(started - first) * 1000:8.1f}  {thread[:28]:28}  {operation:24} {ms:7.1f}"
            for started, thread, operation, ms in timeline
            if first - 0.1 <= started <= last + 0.1
        ]
    path.write_text("\n".join(lines) + "\n")


@contextmanager
def py_spy(pid: int, out: str) -> Iterator[None]:
    """py-spy sampling ``pid`` while the block runs (every thread, idle ones left out)."""
    sampler = ["py-spy", "record", "--pid", str(pid), "--nonblocking", "--rate", "100"]
    process = subprocess.Popen(
        [*sampler, "--format", "raw", "--output", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)  # attached before the round starts
    try:
        yield
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


def _print_round(number: int, measured: Round) -> None:
    print(f"round {number}: {measured.line()}", flush=True)
    for name, seconds in measured.steps:
        print(f"   {name:44} {seconds * 1000:7.0f} ms", flush=True)
    cpu = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in measured.cpu_s.items())
    print(f"   CPU: {cpu}", flush=True)


def _summary(rounds: list[Round]) -> None:
    stamps = statistics.median(r.stamps_s for r in rounds)
    command = statistics.median(r.command_s for r in rounds)
    limit = rounds[0].limit_s
    loads = ", ".join(f"{r.load:.2f}" for r in rounds)
    print(
        f"\nmedian of {len(rounds)}: run's stamps {stamps:.2f} s ({limit / stamps:.1%} of the "
        f"{limit:.2f} s limit), whole command {command:.2f} s (+{command - stamps:.2f} s); "
        f"load {loads}; {os.cpu_count()} CPUs"
    )
    print("median per step:")
    for index, (name, _) in enumerate(rounds[0].steps):
        figure = statistics.median(r.steps[index][1] for r in rounds)
        print(f"   {name:44} {figure * 1000:7.0f} ms")
    cpu = ", ".join(
        f"{name} {statistics.median(r.cpu_s[name] for r in rounds):.2f} s"
        for name in rounds[0].cpu_s
    )
    print(f"   CPU: {cpu}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--delay-ms", type=float, default=200.0, help="the agent's latency")
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--item-workers", type=int, default=4, help="pawl serve's")
    parser.add_argument("--snapshot-interval", dest="snapshot", type=float, default=1)
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="sample pawl serve's process (py-spy, 100 Hz, all threads) during the last "
        "round and write collapsed stacks to FILE (and the stand-in's to FILE.standin)",
    )
    parser.add_argument(
        "--keep-timeline", type=Path, metavar="FILE", help="write the last round's agent calls"
    )
    parser.add_argument(
        "--call-timeline",
        type=Path,
        metavar="FILE",
        help="write pawl serve's AWS calls from each round's creation to its first agent call "
        "and from its last answer to its finish (the last round's is kept): when each "
        "started, on which thread, how long it took",
    )
    args = parser.parse_args()
    args.snapshot_min_journal_mb = args.snapshot_journal_ratio = None
    if args.call_timeline:
        os.environ["PAWL_BENCH_TIMELINE"] = "1"  # pawl serve inherits it
    with ExitStack() as stack:
        agent_url, _ = stack.enter_context(instant_http_agent(args.delay_ms))
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pawl-latency-")))
        args.work_dir, args.log_dir = work, work / "state"
        booting = time.perf_counter()
        serve = stack.enter_context(
            scale.pawl_serve(
                work / "state",
                [urlsplit(agent_url).port or 0],
                args.item_workers,
                scale._snapshot_flags(args),
            )
        )
        print(f"pawl serve up in {time.perf_counter() - booting:.2f} s (once, not per run)")
        api = scale.Api(serve.url, serve.admin_key)
        project = api.call("POST", "/api/v1/projects", {"name": "latency"})["id"]
        eval_id = scale._eval(api, project, "latency", args.items, agent_url, args)
        agent = stack.enter_context(httpx.Client(base_url=agent_url, timeout=60))
        limit = args.items * args.delay_ms / 1000 / args.concurrency
        print(
            f"{args.items} items, agent answering after {args.delay_ms:.0f} ms, concurrency "
            f"{args.concurrency}: the limit is {limit:.2f} s",
            flush=True,
        )
        rounds = []
        for number in range(1, args.rounds + 1):
            with ExitStack() as profiling:
                if args.py_spy and number == args.rounds:
                    profiling.enter_context(py_spy(serve.pid, args.py_spy))
                    profiling.enter_context(py_spy(serve.standin_pid, f"{args.py_spy}.standin"))
                rounds.append(one_round(serve, api, agent, eval_id, args))
            _print_round(number, rounds[-1])
        _summary(rounds)


if __name__ == "__main__":
    main()
