"""What an early-stopped regression run saves, end to end, through the local runtime.

Starts an in-process ``pawl.local`` runtime (the AWS stand-in in its own process, the
Chalice app over HTTP, the SQS pollers calling the real handlers), a dataset of N items
(default 2,000) and an eval with a ``contains`` scorer and ``max_regression`` 0.05, and a
python agent that reports a cost per call (``COST_USD``), as a hosted model's answer does:

1. a baseline run with agent version 1 (passes 90% of the items);
2. version 2 regresses 15 points (passes 75%: the same 10% fail, and 15% more);
3. an ``early_stop: true`` run of version 2 against the baseline: printed are the decision,
   the items run and skipped, the agent calls made, the spend and the spend saved (the
   engine's estimate: average cost per recorded result x items skipped), and wall time;
4. (unless ``--no-full``) the same candidate run without early stop, for the spend and
   wall time it really costs, so the estimate can be checked against it.

    .venv/bin/python bench/early_stop.py [--items 2000] [--workers 4] [--seed N] [--no-full]
        [--agent-delay-ms 100]

Each agent call takes ``--agent-delay-ms`` (a hosted model answers in hundreds of ms), at the
eval's concurrency of 40.

Wall times on a shared machine are inflated by its load; the load average is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

#: What each agent call reports it cost (USD).
COST_USD = 0.004
CALLS: dict[str, int] = {}
_lock = threading.Lock()


def _bucket(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 100


def _answer(payload: dict[str, Any], fails_below: int) -> dict[str, Any]:
    time.sleep(float(os.environ.get("BENCH_AGENT_DELAY_MS", "0")) / 1000)
    run_id = str(payload.get("run_id"))
    with _lock:
        CALLS[run_id] = CALLS.get(run_id, 0) + 1
    text = str((payload.get("input") or [{}])[-1].get("content", ""))
    output = "no" if _bucket(text) < fails_below else "ok"
    usage = {"input_tokens": 200, "output_tokens": 20, "cost_usd": COST_USD}
    return {"output": output, "usage": usage}


def version_1(payload: dict[str, Any]) -> dict[str, Any]:
    """The baseline: fails the items in buckets 0-9 (10%)."""
    return _answer(payload, 10)


def version_2(payload: dict[str, Any]) -> dict[str, Any]:
    """The candidate: fails buckets 0-24, a 15-point regression."""
    return _answer(payload, 25)


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600
        )

    def send(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        headers = {"Content-Type": "application/x-ndjson"} if raw is not None else {}
        response = self.http.request(method, path, json=body, content=raw, headers=headers)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()


def _suite(api: Api, items: int) -> tuple[dict[str, Any], dict[str, Any]]:
    project = api.send("POST", "/api/v1/projects", {"name": "bench-early-stop"})
    agent = api.send(
        "POST",
        "/api/v1/agents",
        {
            "project_id": project["id"],
            "name": "support",
            "type": "python",
            "config": {"callable": "early_stop:version_1"},
        },
    )
    dataset = api.send("POST", "/api/v1/datasets", {"project_id": project["id"], "name": "cases"})
    lines = [
        json.dumps({"input": [{"role": "user", "content": f"case {i}"}], "expected_output": "ok"})
        for i in range(items)
    ]
    for start in range(0, items, 99):  # the bulk import's limit per request
        body = "\n".join(lines[start : start + 99]).encode()
        api.send("POST", f"/api/v1/datasets/{dataset['id']}/items:import", raw=body)
    evaluation = api.send(
        "POST",
        "/api/v1/evals",
        {
            "project_id": project["id"],
            "name": "regression",
            "agent_id": agent["id"],
            "dataset_id": dataset["id"],
            "scorers": [{"type": "contains", "value": "ok"}],
            "max_regression": 0.05,
            "max_concurrency": 40,
        },
    )
    return agent, evaluation


def _run(api: Api, evaluation: dict[str, Any], body: dict[str, Any]) -> tuple[Any, float]:
    path = f"/api/v1/evals/{evaluation['id']}/runs"
    started = time.perf_counter()
    run = api.send("POST", path, body)
    while run["status"] in ("queued", "running"):
        time.sleep(0.2)
        run = api.send("GET", f"{path}/{run['id']}")
    return run, time.perf_counter() - started


def _spend(run: dict[str, Any]) -> float:
    return float(run["aggregate_scores"]["usage"]["total"]["cost_usd"])


def _calls(run_id: str) -> int:
    """Calls the agent module the runtime loaded (``early_stop``, not ``__main__``) counted."""
    import early_stop as loaded

    with loaded._lock:
        return int(loaded.CALLS.get(run_id, 0))


def _measure(args: argparse.Namespace) -> None:
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    with tempfile.TemporaryDirectory() as state_dir:
        config = RuntimeConfig(
            port=0,
            state_dir=Path(state_dir),
            snapshot_interval_s=0,
            run_schedules=False,
            item_workers=args.workers,
            poll_wait_s=1,
            python_agent_modules=("early_stop",),
        )
        with LocalRuntime(config) as runtime:
            api = Api(runtime.url, runtime.admin_key)
            agent, evaluation = _suite(api, args.items)
            baseline, took = _run(api, evaluation, {})
            print(f"baseline: {baseline['status']}, pass rate {_rate(baseline)}, {took:.1f} s")
            api.send(
                "PUT",
                f"/api/v1/agents/{agent['id']}",
                {"config": {"callable": "early_stop:version_2"}},
            )
            body: dict[str, Any] = {"baseline_run_id": baseline["id"], "early_stop": True}
            if args.seed is not None:
                body["early_stop_seed"] = args.seed
            stopped, stopped_s = _run(api, evaluation, body)
            _print_stopped(stopped, stopped_s, args.items)
            if args.full:
                full, full_s = _run(api, evaluation, {"baseline_run_id": baseline["id"]})
                gate = next(r for r in full["verdict_reasons"] if r["gate"] == "max_regression")
                print(
                    f"full run, same candidate: {gate['conclusion']}, pass rate {_rate(full)}, "
                    f"{_calls(full['id'])} agent calls, spend ${_spend(full):.3f}, "
                    f"wall {full_s:.1f} s"
                )
                actual = _spend(full) - _spend(stopped)
                estimate = stopped["aggregate_scores"]["early_stop"]["spend_saved_usd"]
                print(
                    f"spend saved, measured against the full run: ${actual:.3f} "
                    f"(estimated ${estimate:.3f}); wall time saved {full_s - stopped_s:.1f} s"
                )


def _rate(run: dict[str, Any]) -> str:
    rate = (run.get("aggregate_scores") or {}).get("pass_rate")
    return "n/a" if rate is None else f"{rate:.3f}"


def _print_stopped(run: dict[str, Any], took: float, items: int) -> None:
    stop = run["aggregate_scores"]["early_stop"]
    gate = next(r for r in run["verdict_reasons"] if r["gate"] == "max_regression")
    print(f"early-stop run: {run['status']}, decision {stop['decision']}, seed {stop['seed']}")
    print(
        f"  decided after {stop['decided_after_items']} items; items run {stop['items_run']}, "
        f"items skipped {stop['items_skipped']} of {items}; agent calls {_calls(run['id'])}"
    )
    print(
        f"  spend ${_spend(run):.3f}; spend saved (estimate) ${stop['spend_saved_usd']:.3f} "
        f"({stop['spend_saved_basis']}); wall {took:.1f} s"
    )
    print(f"  paired counts at the decision: {stop['paired_counts_at_decision']}")
    print(f"  gate: {gate['explanation']}")
    print(f"  aggregate_scores.early_stop: {json.dumps(stop)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--agent-delay-ms", type=float, default=100.0, help="how long each agent call takes"
    )
    parser.add_argument("--no-full", dest="full", action="store_false")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))  # the agent module: "early_stop:..."
    os.environ["BENCH_AGENT_DELAY_MS"] = str(args.agent_delay_ms)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    started = time.process_time()
    _measure(args)
    print(
        f"load average after: {os.getloadavg()[0]:.2f}; "
        f"CPU of this process {time.process_time() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
