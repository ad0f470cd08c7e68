"""pawl beside promptfoo and Inspect on the same work, printed as a README-ready table.

The work: N items (default 1,000), each one POST to the same HTTP agent
(``bench/instant_agent.py`` in its own process) and a "contains ok" check, at a matched
concurrency. Two rounds of work: an instant agent, and one that answers after 200 ms.

- **pawl**: ``pawl serve`` (started once, as a deployed service; through
  ``bench/serve_instrumented.py``, the console script's own ``main``), a dataset seeded
  with the bulk import, an eval with ``max_concurrency`` set; timed from the run's start
  request to its terminal state as the run's own stamps record it.
- **promptfoo** (npm): ``promptfoo eval`` with its ``http`` provider and a ``contains``
  assertion, ``--max-concurrency``, no cache, nothing written; timed as the process's wall
  time (its start-up included).
- **Inspect** (PyPI ``inspect_ai``): ``inspect eval bench/peers/inspect_task.py`` (a solver
  that POSTs to the agent, the ``includes`` scorer), ``--max-samples``; process wall time.

Peers are optional: each is skipped, with a message saying how to install it, when it is
not found. ``--promptfoo`` and ``--inspect`` name their executables (default: the
``PAWL_BENCH_PROMPTFOO`` / ``PAWL_BENCH_INSPECT`` variables, else ``promptfoo`` /
``inspect`` on PATH). See bench/peers/README.md.

    .venv/bin/python bench/peers/run.py [--items 1000] [--rounds 3] [--concurrency 40]

CPU seconds are each tool's own processes (pawl: its process and the stand-in's; peers:
the command's process tree), the agent excluded. The median of ``--rounds`` interleaved
rounds is shown, with the machine's load average: on a shared machine wall figures are
pessimistic.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))

import scale  # noqa: E402  (bench/scale.py: pawl serve, the agent, the API helpers)

WORK = (("instant agent", 0.0), ("200 ms agent", 200.0))


@dataclass
class Outcome:
    seconds: float
    cpu_s: float


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_command(command: list[str], cwd: Path, env: dict[str, str]) -> Outcome:
    cpu = _children_cpu_s()
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if finished.returncode != 0:
        tail = (finished.stdout + finished.stderr)[-2000:]
        raise RuntimeError(f"{command[0]} exited {finished.returncode}: {tail}")
    return Outcome(elapsed, _children_cpu_s() - cpu)


def promptfoo(exe: str, url: str, items: int, concurrency: int, work: Path) -> Outcome:
    config = {
        "description": "pawl peers benchmark",
        "prompts": ["{{content}}"],
        "providers": [
            {
                "id": "http",
                "config": {
                    "url": url,
                    "method": "POST",
                    "headers": {"Content-Type": "application/json"},
                    "body": {"input": [{"role": "user", "content": "{{prompt}}"}]},
                    "transformResponse": "json.output",
                },
            }
        ],
        "defaultTest": {"assert": [{"type": "contains", "value": "ok"}]},
        "tests": [{"vars": {"content": f"case {n}: ok"}} for n in range(items)],
    }
    path = work / "promptfooconfig.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(work / ".promptfoo"),
    }
    command = [exe, "eval", "-c", str(path), "--max-concurrency", str(concurrency)]
    command += ["--no-cache", "--no-write", "--no-table", "--no-progress-bar"]
    return _timed_command(command, work, env)


def inspect(exe: str, url: str, items: int, concurrency: int, work: Path) -> Outcome:
    task = Path(__file__).with_name("inspect_task.py")
    command = [exe, "eval", task.name, "--model", "mockllm/model"]  # Inspect wants it relative
    command += ["--max-samples", str(concurrency), "--max-connections", str(concurrency)]
    command += ["-T", f"url={url}", "-T", f"items={items}", "--display", "none"]
    command += ["--log-dir", str(work / "inspect-logs"), "--no-log-samples"]
    env = {**os.environ, "INSPECT_LOG_LEVEL": "warning"}
    return _timed_command(command, task.parent, env)


class Pawl:
    """One ``pawl serve`` for every round: a service is started once."""

    def __init__(self, stack: ExitStack, agent_ports: list[int], args: Any, work: Path) -> None:
        self.args = args
        args.work_dir = work
        self.serve = stack.enter_context(
            scale.pawl_serve(
                work / "state",
                agent_ports,
                args.item_workers,
                ["--snapshot-interval", str(args.snapshot)],
            )
        )
        self.api = scale.Api(self.serve.url, self.serve.admin_key)
        self.project = self.api.call("POST", "/api/v1/projects", {"name": "peers"})["id"]
        self.evals: dict[str, str] = {}

    def run(self, url: str, items: int, concurrency: int, work: Path) -> Outcome:
        if url not in self.evals:
            self.args.concurrency = concurrency
            name = f"peers-{len(self.evals)}"
            self.evals[url] = scale._eval(self.api, self.project, name, items, url, self.args)
        eval_id = self.evals[url]
        pids = (self.serve.pid, self.serve.standin_pid)
        cpu = sum(scale._proc_cpu_s(p) for p in pids)
        run = self.api.call("POST", f"/api/v1/evals/{eval_id}/runs", {})
        done = scale._wait(self.api, eval_id, run["id"])
        assert done["status"] == "completed" and done["completed_count"] == items, done
        return Outcome(scale._seconds(done), sum(scale._proc_cpu_s(p) for p in pids) - cpu)


def _version(command: list[str]) -> str:
    try:
        answer = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (answer.stdout.strip() or answer.stderr.strip()).splitlines()[-1][:40]


def _peers(args: Any) -> dict[str, tuple[Callable[..., Outcome], str, str]]:
    """The peers that are installed: name -> (runner, executable, version)."""
    found: dict[str, tuple[Callable[..., Outcome], str, str]] = {}
    for name, runner, exe, hint in (
        ("promptfoo", promptfoo, args.promptfoo, "npm install promptfoo (needs node 20.20+)"),
        ("Inspect", inspect, args.inspect, "pip install inspect_ai (in its own venv)"),
    ):
        path = shutil.which(exe) or (exe if Path(exe).is_file() else None)
        if path is None:
            print(f"skipping {name}: {exe!r} not found ({hint}; see bench/peers/README.md)")
            continue
        found[name] = (runner, path, _version([path, "--version"]))
    return found


def _table(
    results: dict[tuple[str, str], list[Outcome]], versions: dict[str, str], args: Any
) -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {platform.machine()} "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.system()}), load average "
        f"{load}; {args.items:,} items, concurrency {args.concurrency}, median of "
        f"{args.rounds} round(s)",
        "",
        "| work | tool | items/s | wall s | CPU s (tool's processes) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for (work, tool), outcomes in results.items():
        seconds = statistics.median(o.seconds for o in outcomes)
        cpu = statistics.median(o.cpu_s for o in outcomes)
        lines.append(
            f"| {work} | {tool} {versions[tool]} | {args.items / seconds:.0f} | "
            f"{seconds:.1f} | {cpu:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=40)
    parser.add_argument("--item-workers", type=int, default=4, help="pawl serve's")
    parser.add_argument("--snapshot-interval", dest="snapshot", type=float, default=1)
    parser.add_argument("--promptfoo", default=os.environ.get("PAWL_BENCH_PROMPTFOO", "promptfoo"))
    parser.add_argument("--inspect", default=os.environ.get("PAWL_BENCH_INSPECT", "inspect"))
    args = parser.parse_args()
    peers = _peers(args)
    versions = {
        "pawl": _version(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"]),
        **{name: version for name, (_, _, version) in peers.items()},
    }
    results: dict[tuple[str, str], list[Outcome]] = {}
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pawl-peers-")))
        agents = {w: stack.enter_context(scale.agent_process(delay))[0] for w, delay in WORK}
        ports = [urlsplit(url).port or 0 for url in agents.values()]
        pawl = Pawl(stack, ports, args, work)
        runners: dict[str, Callable[..., Outcome]] = {"pawl": pawl.run}
        runners.update({name: _bound(runner, exe) for name, (runner, exe, _) in peers.items()})
        for round_number in range(args.rounds):
            for work_name, url in agents.items():
                for tool, runner in runners.items():
                    outcome = runner(url, args.items, args.concurrency, work)
                    results.setdefault((work_name, tool), []).append(outcome)
                    print(
                        f"round {round_number + 1}: {work_name}, {tool}: "
                        f"{outcome.seconds:.1f} s, CPU {outcome.cpu_s:.1f} s",
                        flush=True,
                    )
    print()
    print(_table(results, versions, args))


def _bound(runner: Callable[..., Outcome], exe: str) -> Callable[..., Outcome]:
    def run(url: str, items: int, concurrency: int, work: Path) -> Outcome:
        return runner(exe, url, items, concurrency, work)

    return run


if __name__ == "__main__":
    main()
