"""A running run shows its progress: an item's result, and the run's ``completed_count`` and
``errored_count``, are visible within about a second of the item finishing, while the rest
of its batch is still executing.

The agent is a real HTTP server on 127.0.0.1 whose calls wait until the test lets them go
(``tests.support.gated_agent``): the test lets one call answer, then reads the run until it
shows that one result while every other call of the batch is still waiting. Nothing is
timed; the deadline only keeps a broken build from hanging.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.api.test_cancel import in_background
from tests.api.test_usage import make_eval
from tests.support.drain import drain_queues
from tests.support.gated_agent import GatedAgent
from tests.support.runs import Plugins, assert_counters_match_rows
from tests.support.servers import serve

ITEMS = 12  # one batch (two messages of ten and two)
DEADLINE_S = 20


def _read_until(
    read: Callable[[], dict[str, Any]], shows: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        run = read()
        if shows(run) or time.monotonic() > deadline:
            return run
        time.sleep(0.05)


def test_each_finished_item_shows_while_the_rest_of_its_batch_waits(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server:
        evaluation = make_eval(api, project, server, None, items=ITEMS, max_concurrency=ITEMS)
        runs_path = f"/api/v1/evals/{evaluation['id']}/runs"
        run_id = api.post(runs_path, {}).json["id"]

        def read() -> dict[str, Any]:
            return dict(api.get(f"{runs_path}/{run_id}").json)

        def results() -> list[dict[str, Any]]:
            return list(api.get(f"{runs_path}/{run_id}/results?limit=100").json["data"])

        with in_background(lambda: drain_queues(app)):
            agent.wait_for_waiting(1)
            agent.release(1)
            run = _read_until(read, lambda r: r["completed_count"] >= 1)
            assert (run["completed_count"], run["errored_count"]) == (1, 0), run
            assert run["status"] == "running" and agent.finished == 1
            assert [r["output"] for r in results()] == ["ok"]

            agent.wait_for_waiting(1)
            agent.release(1, failing=1)  # an errored item shows as soon, in errored_count
            run = _read_until(read, lambda r: r["errored_count"] >= 1)
            assert (run["completed_count"], run["errored_count"]) == (1, 1), run
            assert run["status"] == "running" and agent.finished == 2
            codes = sorted((r["error"] or {}).get("code", "scored") for r in results())
            assert codes == ["GENERATION_FAILED", "scored"]
            assert_counters_match_rows(run)
            agent.open()
        drain_queues(app)
    done = read()
    assert done["status"] == "completed", done
    assert (done["completed_count"], done["errored_count"]) == (ITEMS - 1, 1)
    assert_counters_match_rows(done)
    assert plugins.events.of(run_id) == ["eval_run.completed"]  # settled once
