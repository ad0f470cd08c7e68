"""What a name costs on the command line: resolving ``--eval NAME`` against an id.

An embedded runtime (moto) holds a project with ``--evals`` evals (one agent, one dataset);
the name of the newest is resolved N times three ways and the median wall time of each is
printed: ``?name=`` (what ``pawl.cli.names`` uses for evals: the name's claim row, two
GetItems), paging through the whole list (what it does for kinds without the filter), and
the id itself (no request). ``python bench/cli_names.py [--evals 300] [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pawl.cli import names
from pawl.local.runtime import LocalRuntime, RuntimeConfig
from pawl.transport import PawlClient


def _median_ms(repeat: int, call: Callable[[], str], expected: str) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        assert call() == expected
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _project(runtime: LocalRuntime, evals: int) -> tuple[str, str]:
    """A project key and the id of the last of ``evals`` evals."""
    with PawlClient(runtime.url, runtime.admin_key) as admin:
        project = admin.create_project("bench-names")
        key = admin.create_api_key(project["id"], "bench")["key"]
    with PawlClient(runtime.url, key) as client:
        agent = client.create_agent(
            {"name": "a", "type": "python", "config": {"callable": "pawl.demo.agent:answer_v2"}}
        )
        dataset = client.create_dataset({"name": "d"})
        scorers = [{"type": "contains", "value": "x"}]
        body = {"agent_id": agent["id"], "dataset_id": dataset["id"], "scorers": scorers}
        last = ""
        for n in range(evals):
            last = client.create_eval({**body, "name": f"eval-{n:05d}"})["id"]
    return key, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    config = RuntimeConfig(
        port=0,
        state_dir=Path(tempfile.mkdtemp(prefix="bench-names-")),
        snapshot_interval_s=0,
        run_schedules=False,
        python_agent_modules=("pawl.demo.agent",),
    )
    with LocalRuntime(config) as runtime:
        key, eval_id = _project(runtime, options.evals)
        name = f"eval-{options.evals - 1:05d}"
        with PawlClient(runtime.url, key) as client:
            by_filter = _median_ms(
                options.repeat, lambda: names.resolve(client, "eval_id", name), eval_id
            )
            paged = names.Named("eval", "eval", "/api/v1/evals")  # as if it had no filter
            by_paging = _median_ms(
                options.repeat,
                lambda: next(
                    row["id"]
                    for row in names._listing(client, paged, name, None)
                    if row["name"] == name
                ),
                eval_id,
            )
            by_id = _median_ms(
                options.repeat, lambda: names.resolve(client, "eval_id", eval_id), eval_id
            )
    print(f"resolve the newest of {options.evals} evals, median of {options.repeat}:")
    print(f"  ?name= filter       {by_filter:8.2f} ms")
    print(f"  paging the list     {by_paging:8.2f} ms")
    print(f"  an id (no request)  {by_id:8.3f} ms")


if __name__ == "__main__":
    main()
