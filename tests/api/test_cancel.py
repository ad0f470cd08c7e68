"""A cancel stops spending: once it has answered 200, no new agent, judge, tool or embedding
call starts for the run, on every path (queued, sync, trials, /v2); the calls in flight
finish, and their results are kept and counted; usage events match the calls made.

The agent is a real HTTP server on 127.0.0.1 whose calls wait until the test lets them go
(``tests.support.gated_agent``), so "after the cancel" is a count, not a time: the calls
that had arrived when the cancel answered, against the calls made in the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chalicelib import wiring
from chalicelib.engine import run_watch
from chalicelib.store import runs as run_store
from tests.api.test_usage import judge_reply, make_eval
from tests.conftest import Api
from tests.support.drain import drain_queues
from tests.support.gated_agent import GatedAgent
from tests.support.runs import Plugins, assert_counters_match_rows
from tests.support.servers import Reply, Request, Server, serve
from tests.v2.conftest import suite as v2_suite

CONCURRENCY = 4


@contextmanager
def in_background(work: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Run ``work`` in a thread for the block's duration; its return value lands in the dict."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised in the test's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join(60)
        assert not thread.is_alive(), "the background work never ended"
        if "error" in outcome:
            raise outcome["error"]


def _runs_path(evaluation: dict[str, Any]) -> str:
    return f"/api/v1/evals/{evaluation['id']}/runs"


def _cancel(api: Api, evaluation: dict[str, Any], run_id: str) -> None:
    cancelled = api.post(f"{_runs_path(evaluation)}/{run_id}/cancel")
    assert cancelled.status == 200 and cancelled.json["status"] == "canceled", cancelled


def _usage_events(api: Api, run_id: str) -> dict[str, int]:
    rolled = api.get(f"/api/v1/usage/aggregate?group_by=source&eval_run_id={run_id}")
    assert rolled.status == 200, rolled
    return {g["key"]: g["event_count"] for g in rolled.json["groups"]}


def _results(api: Api, evaluation: dict[str, Any], run_id: str) -> list[dict[str, Any]]:
    page = api.get(f"{_runs_path(evaluation)}/{run_id}/results?limit=100")
    assert page.status == 200, page
    return list(page.json["data"])


def assert_cancel_stopped_spending(
    api: Api,
    evaluation: dict[str, Any],
    run_id: str,
    agent: GatedAgent,
    calls_at_cancel: int,
    plugins: Plugins,
    concurrency: int = CONCURRENCY,
) -> dict[str, Any]:
    """What a cancelled run must show once everything in flight has finished."""
    run = api.get(f"{_runs_path(evaluation)}/{run_id}").json
    assert run["status"] == "canceled", run
    assert agent.started - calls_at_cancel <= concurrency, (agent.started, calls_at_cancel)
    assert agent.started < run["item_count"]  # outstanding work was dropped
    # Every call that was made answered, and each answered call is one kept result.
    assert agent.finished == agent.started
    assert run["completed_count"] + run["errored_count"] == agent.finished, run
    assert len(_results(api, evaluation, run_id)) == agent.finished
    assert_counters_match_rows(run)
    assert _usage_events(api, run_id).get("eval") == agent.started
    assert run["aggregate_scores"] is None and run["passed"] is None
    assert plugins.events.of(run_id) == []
    assert run_id not in run_watch.watched_runs()  # its batches are over: no watch left
    return dict(run)


def _queued_cancel(
    api: Api, app: Any, evaluation: dict[str, Any], agent: GatedAgent, body: dict[str, Any]
) -> tuple[str, int]:
    """Start a queued run, cancel it while calls wait, let them go; (run id, calls at cancel)."""
    started = api.post(_runs_path(evaluation), body)
    assert started.status == 201, started
    run_id = started.json["id"]
    with in_background(lambda: drain_queues(app)):
        agent.wait_for_waiting(1)
        _cancel(api, evaluation, run_id)
        calls_at_cancel = agent.started
        agent.open()
    drain_queues(app)
    return run_id, calls_at_cancel


def test_a_queued_run_makes_no_new_agent_call_after_its_cancel(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server:
        evaluation = make_eval(api, project, server, None, items=30, max_concurrency=CONCURRENCY)
        run_id, calls_at_cancel = _queued_cancel(api, app, evaluation, agent, {})
    run = assert_cancel_stopped_spending(api, evaluation, run_id, agent, calls_at_cancel, plugins)
    # The calls in flight were scored (the contains scorer scores in-process).
    assert run["completed_count"] == agent.finished


def test_every_trial_of_a_cancelled_run_stops(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server:
        evaluation = make_eval(
            api, project, server, None, items=10, trials=3, max_concurrency=CONCURRENCY
        )
        run_id, calls_at_cancel = _queued_cancel(api, app, evaluation, agent, {})
    run = assert_cancel_stopped_spending(api, evaluation, run_id, agent, calls_at_cancel, plugins)
    assert run["item_count"] == 30


def test_a_sync_run_stops_when_cancelled_from_another_request(
    api: Any, project: dict[str, Any], project_key: str, plugins: Plugins
) -> None:
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server:
        evaluation = make_eval(api, project, server, None, items=25, max_concurrency=CONCURRENCY)
        with in_background(lambda: api.post(_runs_path(evaluation), {"wait": True})) as sync:
            agent.wait_for_waiting(1)
            (listed,) = api.get(_runs_path(evaluation)).json["data"]
            _cancel(api, evaluation, listed["id"])
            calls_at_cancel = agent.started
            agent.open()
    answered = sync["value"]
    assert answered.status == 201 and answered.json["status"] == "canceled", answered
    assert_cancel_stopped_spending(api, evaluation, listed["id"], agent, calls_at_cancel, plugins)


def test_a_cancel_written_by_another_process_stops_the_batch_within_the_refresh(
    api: Any,
    project: dict[str, Any],
    project_key: str,
    app: Any,
    plugins: Plugins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On AWS the cancel is another Lambda: the worker learns of it by re-reading the run.

    The refresh is 0 here, so every call the worker starts re-reads the status first: the
    bound checked is the watch's own (no new call once its status is a refresh old),
    without waiting for one.
    """
    monkeypatch.setenv("PAWL_RUN_WATCH_REFRESH_S", "0")
    wiring.reload_settings()
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server:
        evaluation = make_eval(api, project, server, None, items=30, max_concurrency=CONCURRENCY)
        run_id = api.post(_runs_path(evaluation), {}).json["id"]
        with in_background(lambda: drain_queues(app)):
            agent.wait_for_waiting(1)
            assert run_store.cancel(run_id)  # the row as another process's cancel leaves it
            calls_at_cancel = agent.started
            agent.open()
        drain_queues(app)
    assert_cancel_stopped_spending(api, evaluation, run_id, agent, calls_at_cancel, plugins)


def test_no_judge_call_starts_after_the_cancel(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    """An item whose agent call was in flight is kept unscored: its judge is never called."""
    api = api.as_key(project_key)
    agent = GatedAgent()
    with serve(agent) as server, serve(judge_reply) as judge:
        evaluation = make_eval(api, project, server, judge, items=12, max_concurrency=CONCURRENCY)
        run_id, calls_at_cancel = _queued_cancel(api, app, evaluation, agent, {})
        assert judge.requests == []  # every agent call answered after the cancel
    run = assert_cancel_stopped_spending(api, evaluation, run_id, agent, calls_at_cancel, plugins)
    results = _results(api, evaluation, run_id)
    assert {r["error"]["code"] for r in results} == {"EVAL_RUN_ENDED"}
    assert all(r["output"] == "ok" for r in results)  # what the agent answered is kept
    assert run["errored_count"] == agent.finished
    assert _usage_events(api, run_id) == {"eval": agent.started}


# --- /v2 --------------------------------------------------------------------------------------

V2_TASKS = 90  # one batch; more than twice the /v2 eval's default concurrency (40)


def _v2_answer(agent: GatedAgent) -> Callable[[Request], Reply]:
    def answer(request: Request) -> Reply:
        reply = agent(request)
        if reply.status == 200:
            reply.body = {**reply.body, "output": "hello"}
        return reply

    return answer


def test_a_v2_run_stops_when_cancelled(
    api: Any, project: dict[str, Any], project_key: str, app: Any, plugins: Plugins
) -> None:
    tenant = api.as_key(project_key)
    agent = GatedAgent()
    tasks = [
        {
            "taskId": f"t{n}",
            "input": "hello",
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "hello"}},
        }
        for n in range(V2_TASKS)
    ]
    assert tenant.post("/v2/eval-suites", v2_suite("acme.evals.cancel", tasks=tasks)).status == 201
    with serve(_v2_answer(agent)) as server:
        agent_id = _http_agent(tenant, server)
        body = {"mode": "eval", "evalSuiteRef": "acme.evals.cancel@1.0.0", "agentId": agent_id}
        created = tenant.post("/v2/runs", body)
        assert created.status == 201, created
        run_id = created.json["runId"]
        (evaluation,) = tenant.get("/api/v1/evals").json["data"]
        with in_background(lambda: drain_queues(app)):
            agent.wait_for_waiting(1)
            _cancel(tenant, evaluation, run_id)
            calls_at_cancel = agent.started
            agent.open()
        drain_queues(app)
    concurrency = evaluation["max_concurrency"]
    assert 2 * concurrency < V2_TASKS  # so a batch that ignored the cancel would show it
    assert_cancel_stopped_spending(
        tenant, evaluation, run_id, agent, calls_at_cancel, plugins, concurrency=concurrency
    )
    summary = tenant.get(f"/v2/runs/{run_id}")
    assert summary.status == 200 and summary.json["status"] == "cancelled", summary


def _http_agent(tenant: Api, server: Server) -> str:
    created = tenant.post(
        "/api/v1/agents", {"name": "gated", "type": "http", "config": {"url": f"{server.url}/"}}
    )
    assert created.status == 201, created
    return str(created.json["id"])
