"""``pawl.Client`` against the embedded local runtime (what ``pawl serve`` runs): the stand-in
in its own process, the HTTP front, the queue pollers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import pawl
from tests.support.runtime import runtime_with_project
from tests.support.servers import Reply, Request, serve

pytestmark = pytest.mark.slow


def _ok(request: Request) -> Reply:
    return Reply(200, {"output": "ok"})


def test_a_queued_run_through_the_runtime_and_its_pages(tmp_path: Path) -> None:
    with runtime_with_project(tmp_path / "state", "sdk") as (runtime, key), serve(_ok) as agent:
        with pawl.Client(runtime.url, key) as client:
            agent_ = client.create_agent(name="ok", type="http", config={"url": agent.url})
            dataset = client.create_dataset(name="cases")
            lines = "\n".join(f'{{"input": "q{i}", "expected_output": "ok"}}' for i in range(5))
            client.import_dataset_items(dataset["id"], body=lines)
            evaluation = client.create_eval(
                name="sdk",
                agent_id=agent_["id"],
                dataset_id=dataset["id"],
                scorers=[{"type": "contains", "value": "ok"}],
            )
            queued = client.start_eval_run(evaluation["id"])  # the pollers run it
            run = client.get_eval_run(evaluation["id"], queued["id"])
            for _ in range(600):
                if run["status"] in {"completed", "failed", "canceled"}:
                    break
                time.sleep(0.1)  # bounded: 600 polls at most
                run = client.get_eval_run(evaluation["id"], queued["id"])
            assert run["status"] == "completed", run
            results = list(client.iter_eval_results(evaluation["id"], run["id"], limit=2))
            assert len(results) == 5 and all(r["passed"] for r in results)
            with pytest.raises(pawl.ConflictError) as taken:
                client.create_dataset(name="cases")
            assert taken.value.status == 409

        async def listed() -> list[str]:
            async with pawl.AsyncClient(runtime.url, key) as client:
                return [
                    item["id"] async for item in client.iter_dataset_items(dataset["id"], limit=2)
                ]

        assert len(asyncio.run(listed())) == 5
