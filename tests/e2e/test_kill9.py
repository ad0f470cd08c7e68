"""``kill -9`` of `pawl serve` at 20+ points: nothing acknowledged is lost, nothing doubles.

A real `pawl serve` process group (the runtime and its AWS stand-in) on one state dir, a
real HTTP agent and a real webhook receiver on 127.0.0.1. Each round restarts serve,
starts one run (every run that answered 201 is remembered) and arms one kill point:
right after the 201 (or a few milliseconds later, inside fan-out), at the agent's k-th call
(execution), just after the run's last item was answered (recording, settle, event), or
when the receiver gets a delivery's first or second attempt (the first attempt of every
delivery answers 500, so the retry path runs). SIGKILL goes to the whole process group:
nothing gets to finish. After the last round serve starts once more and the test waits
for everything to finish, then checks every run, its results and its webhooks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from chalicelib.webhooks.signing import DELIVERY_HEADER
from chalicelib.webhooks.sink import delivery_id
from tests.e2e.test_serve import ServeProcess, _all_results, _client, _ok, http_agent_eval
from tests.support.servers import Reply, Request, serve

pytestmark = pytest.mark.slow

RUN_ITEMS = 10
DEADLINE_S = 120.0
#: (kind, argument): the kill points, one per round.
KILL_POINTS: list[tuple[str, float]] = [
    ("after_201", 0),
    ("after_201", 0),
    ("after_201", 0.02),  # fan-out
    ("after_201", 0.05),
    ("after_201", 0.1),
    ("agent_call", 1),
    ("agent_call", 2),
    ("agent_call", 3),
    ("agent_call", 5),
    ("agent_call", 7),
    ("agent_call", 9),
    ("agent_call", 10),
    ("last_item", 0),  # recording the last result
    ("last_item", 0.03),  # settle
    ("last_item", 0.08),  # the event, the delivery row
    ("last_item", 0.15),
    ("webhook_before", 1),  # the first attempt is in flight
    ("webhook_after", 1),  # the 500 was answered: scheduling the retry
    ("webhook_before", 2),  # the retry is in flight
    ("webhook_after", 2),  # the retry succeeded: recording it
    ("webhook_before", 1),
    ("agent_call", 4),
]


class GroupKiller:
    """SIGKILL to the serve process group, once per round, from any thread."""

    def __init__(self) -> None:
        self.pgid: int | None = None
        self.fired = threading.Event()
        self._lock = threading.Lock()

    def arm(self, pgid: int | None) -> None:
        with self._lock:
            self.pgid = pgid
            self.fired.clear()

    def fire(self) -> None:
        with self._lock:
            if self.pgid is None or self.fired.is_set():
                return
            with contextlib.suppress(ProcessLookupError):  # it died already
                os.killpg(self.pgid, signal.SIGKILL)
            self.fired.set()


@dataclass
class Trigger:
    """The armed kill point; the agent and the receiver check it on every request."""

    kind: str = ""
    argument: float = 0
    run_id: str = ""
    agent_calls: int = 0
    spent: bool = False
    seen_items: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


class Harness:
    """The agent (echo) and the webhook receiver (first attempt of a delivery: 500)."""

    def __init__(self, killer: GroupKiller) -> None:
        self.killer = killer
        self.trigger = Trigger()
        self.lock = threading.Lock()
        self.attempts: dict[str, int] = defaultdict(int)  # delivery id -> requests seen
        self.succeeded: dict[str, set[str]] = defaultdict(set)  # run id -> delivery ids (200)

    def _kill_once(self, delay_s: float = 0.0) -> None:
        if self.trigger.spent:
            return
        self.trigger.spent = True
        if delay_s:
            threading.Timer(delay_s, self.killer.fire).start()
        else:
            self.killer.fire()

    def agent(self, request: Request) -> Reply:
        payload = request.json()
        if not isinstance(payload, dict):  # a request cut short by the kill
            return Reply(status=400, body={})
        with self.lock:
            trigger = self.trigger
            mine = payload["run_id"] == trigger.run_id
            trigger.agent_calls += mine  # this round's run only: its 201 came first
            items = trigger.seen_items[payload["run_id"]]
            items.add(payload["dataset_item_id"])
            if mine and trigger.kind == "agent_call" and trigger.agent_calls == trigger.argument:
                self._kill_once()
            if trigger.kind == "last_item" and mine and len(items) == RUN_ITEMS:
                self._kill_once(trigger.argument)
        return Reply(body={"output": payload["input"][-1]["content"]})

    def receiver(self, request: Request) -> Reply:
        run_id = request.json()["resource_id"]
        delivery = request.headers[DELIVERY_HEADER]
        with self.lock:
            self.attempts[delivery] += 1
            attempt = self.attempts[delivery]
            trigger = self.trigger
            mine = run_id == trigger.run_id and attempt == trigger.argument
            if mine and trigger.kind == "webhook_before":
                self._kill_once()
                return Reply(status=503, body={})  # pawl is gone: nobody reads this
            status = 500 if attempt == 1 else 200
            if status == 200:
                self.succeeded[run_id].add(delivery)
            if mine and trigger.kind == "webhook_after":
                self._kill_once(0.01)
        return Reply(status=status, body={})

    def arm(self, kind: str, argument: float) -> None:
        with self.lock:
            self.trigger = Trigger(kind=kind, argument=argument)

    def set_run(self, run_id: str) -> None:
        with self.lock:
            self.trigger.run_id = run_id


def _setup(api: httpx.Client, agent_url: str, receiver_url: str) -> tuple[str, str]:
    """A project, an http agent, a dataset, an eval and a webhook: (runs path, webhook id)."""
    texts = [f"case {i} ok" for i in range(RUN_ITEMS)]
    project, runs_path = http_agent_eval(api, "kill9", agent_url, texts)
    hook = {"project_id": project, "url": receiver_url, "events": ["eval_run.*"]}
    webhook = _ok(api.post("/api/v1/webhooks", json=hook))
    return runs_path, webhook["id"]


def _wait_until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    raise AssertionError(f"not within {DEADLINE_S}s: {what}; still open: {LAST_SEEN}")


def _every_run(api: httpx.Client, runs_path: str) -> list[Any]:
    return list(_all_results(api, runs_path))  # the same cursor paging as results


def test_kill9_at_twenty_two_points_loses_nothing_acknowledged_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    killer = GroupKiller()
    harness = Harness(killer)
    state_dir = tmp_path / "state"
    started: list[ServeProcess] = []

    ports: list[int] = []  # the agent's and the receiver's, named in the allow-list

    def start() -> ServeProcess:
        allowed = "loopback:" + ",".join(str(port) for port in ports)
        env = {"PAWL_WEBHOOK_RETRY_BASE_S": "1"}
        server = ServeProcess(state_dir, tmp_path, allowed, extra_env=env, new_session=True)
        started.append(server)
        killer.arm(server.process.pid)  # the session leader's pid is the group id
        return server

    def killed(server: ServeProcess) -> None:
        assert killer.fired.wait(DEADLINE_S), "".join(server.output[-30:])
        server.process.wait(timeout=30)

    accepted: list[str] = []
    kill_points: dict[str, str] = {}  # run id -> the kill point of its round (diagnostics)
    try:
        with serve(harness.agent) as agent, serve(harness.receiver) as receiver:
            ports.extend([agent.port, receiver.port])
            server = start()
            with _client(server.url) as api:
                runs_path, webhook_id = _setup(api, agent.url, receiver.url)
            killer.fire()  # the setup was acknowledged: it must survive too
            killed(server)
            for kind, argument in KILL_POINTS:
                server = start()
                harness.arm(kind, argument)
                with _client(server.url) as api:
                    try:
                        response = api.post(runs_path, json={})
                    except httpx.TransportError:
                        response = None  # killed by earlier runs' work: not acknowledged
                if response is not None and response.status_code == 201:
                    accepted.append(response.json()["id"])
                    kill_points[accepted[-1]] = f"{kind} {argument}"
                    harness.set_run(accepted[-1])
                if kind == "after_201":
                    threading.Timer(argument, killer.fire).start()
                killed(server)

            harness.arm("", 0)
            killer.arm(None)
            server = start()
            with _client(server.url) as api:
                runs = _wait_until(
                    lambda: _all_terminal(_every_run(api, runs_path)), "every run terminal"
                )
                results = {
                    run["id"]: _all_results(api, f"{runs_path}/{run['id']}/results") for run in runs
                }
                deliveries = _wait_until(
                    lambda: _all_delivered(api, webhook_id, runs, kill_points),
                    "every webhook delivered",
                )
    finally:
        for process in started:
            process.kill()
        if os.environ.get("PAWL_KILL9_LOG"):  # every serve's output, for a post-mortem
            with open(os.environ["PAWL_KILL9_LOG"], "w") as log:
                for number, process in enumerate(started):
                    log.write(f"===== serve {number} =====\n" + "".join(process.output))

    assert len(accepted) >= 20
    by_id = {run["id"]: run for run in runs}
    assert set(accepted) <= set(by_id), "a run that answered 201 was lost"
    for run in runs:
        assert run["status"] == "completed", run
        assert (run["item_count"], run["completed_count"], run["errored_count"]) == (
            RUN_ITEMS,
            RUN_ITEMS,
            0,
        )
        items = [r["dataset_item_id"] for r in results[run["id"]]]
        assert len(items) == RUN_ITEMS and len(set(items)) == RUN_ITEMS, "duplicate results"
    assert sorted(d["status"] for d in deliveries) == ["success"] * len(runs)
    assert set(harness.succeeded) == set(by_id)
    assert all(len(ids) == 1 for ids in harness.succeeded.values()), harness.succeeded


def _all_terminal(runs: list[Any]) -> list[Any] | None:
    open_runs = [r for r in runs if r["status"] in {"queued", "running"}]
    LAST_SEEN[:] = open_runs
    return None if open_runs else runs


LAST_SEEN: list[Any] = []


def _all_deliveries(api: httpx.Client, webhook_id: str) -> list[Any]:
    found: list[Any] = []
    cursor = None
    while True:
        query = f"?webhook_id={webhook_id}&limit=100" + (f"&cursor={cursor}" if cursor else "")
        page = _ok(api.get("/api/v1/webhook-deliveries" + query), 200)
        found += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def _all_delivered(
    api: httpx.Client, webhook_id: str, runs: list[Any], kill_points: dict[str, str]
) -> list[Any] | None:
    rows = _all_deliveries(api, webhook_id)
    done = len(rows) == len(runs) and all(d["status"] != "pending" for d in rows)
    recorded = {d["id"] for d in rows}
    # Runs whose event never became a delivery row, named with their round's kill point.
    undelivered = [
        (run["id"], kill_points.get(run["id"], "?"))
        for run in runs
        if _delivery_of(run, webhook_id) not in recorded
    ]
    LAST_SEEN[:] = [(len(rows), len(runs)), undelivered] + [
        d for d in rows if d["status"] == "pending"
    ]
    return rows if done else None


def _delivery_of(run: dict[str, Any], webhook_id: str) -> str:
    """The id the webhook sink gives the delivery of this run's lifecycle event."""
    event_id = f"evt_{run['id'].removeprefix('evrun_')}_{run['status']}"
    return delivery_id(event_id, webhook_id)
